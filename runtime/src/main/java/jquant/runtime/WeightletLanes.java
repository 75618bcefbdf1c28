package jquant.runtime;

import java.lang.foreign.MemorySegment;
import jquant.core.WorkerPool;
import jquant.formats.weightlet.PackedTensor;
import jquant.formats.weightlet.WeightletLayout;
import jquant.runtime.nativelib.CopyMemory;
import jquant.runtime.nativelib.NativeKernels;

/**
 * A copy of a weightlet tensor for the AVX-512 weight-only decode kernel ({@link KernelChoice#weightletLanes}, made at
 * the tensor's first decode), in which a weight is two vector instructions from its bits (a mask into a
 * float's mantissa, one subtraction) where the stored layout takes an unpack, a widening and a conversion,
 * and whose rows run four at a time of one width (the stored kernel looks a row's width up for every span
 * of groups, and mixed widths make it mispredict). Only the native kernel reads it; its results are the
 * stored layout's bit for bit.
 *
 * <p>A row of {@code B} bits is cut into steps of {@value #STEP_WEIGHTS} weights (weight {@code 16s + j}
 * goes to float chain {@code j}, the runtime's summation order), and {@link #fields} steps share a block of
 * sixteen dwords, the weight {@code 16s + j} in dword {@code j} at bit {@code base + (s mod P)·B}:
 *
 * <pre>
 *   block m ({@value #BLOCK_BYTES} bytes), dword j (lane j):
 *   31                                                             0
 *   | … | field of step mP+2 | field of step mP+1 | field of step mP | base |
 *
 *   B      1   2   3   4   5   6   7   8
 *   P     31  15  10   7   6   5   4   4      fields a dword
 *   base   1   1   1   1   1   1   1   0      unused low bits
 * </pre>
 *
 * A field is the weightlet's ({@code 2f − (2^B − 1)} the weight), at 8 bits the weight's byte plus 128.
 * Bit 0 is unused below 8 bits so that the kernel's constant {@code 2^(24−p) + 2^B − 1} is a float for
 * every field position {@code p} (docs/runtime.md). A row is {@code ceil(ceil(length / 16) / P)} blocks;
 * the last step's lanes past the length are zero.
 *
 * <p>The rows are stored in the kernel's {@link #order}: by width, each width's rows padded with zero rows to a
 * multiple of four (an order of −1: computed, not written), and a four's blocks side by side, so that the
 * kernel reads a tensor as one stream:
 *
 * <pre>
 *   four g:  | row 0 block 0 | row 1 block 0 | row 2 block 0 | row 3 block 0 | row 0 block 1 | … | row 3 block n−1 |
 * </pre>
 */
final class WeightletLanes {

    /** Weights a step: one per float lane of a 512-bit register. */
    static final int STEP_WEIGHTS = 16;
    /** Bytes a block: sixteen dwords. */
    static final int BLOCK_BYTES = 64;
    /** Rows the kernel runs at once, whose blocks lie side by side. */
    static final int FOUR = 4;

    /** The copy, 64-byte aligned, freed when unreachable. */
    final MemorySegment data;
    /** Per entry of the kernel's order: the row's byte offset in {@link #data}, its width, its channel (−1 for padding), its scale. */
    final long[] offsets;
    final int[] bits, order;
    final float[] scales;

    /**
     * The lanes of {@code tensor} with its channels' {@code scales}, packed by {@code kernels} on the threads of {@code pool}
     * (the padding rows zeroed here).
     */
    WeightletLanes(PackedTensor tensor, float[] scales, NativeKernels kernels, WorkerPool pool) {
        int rows = tensor.channels(), length = tensor.length();
        int[] widths = tensor.bits();
        int entries = 0;
        int[] count = new int[WeightletLayout.MAX_BITS + 1];
        for (int w : widths) count[w]++;
        for (int b = 1; b <= WeightletLayout.MAX_BITS; b++) entries += (count[b] + FOUR - 1) / FOUR * FOUR;
        this.offsets = new long[entries];
        this.bits = new int[entries];
        this.order = new int[entries];
        this.scales = new float[entries];
        long[] rowOffsets = new long[rows];
        long total = 0;
        int e = 0;
        for (int b = 1; b <= WeightletLayout.MAX_BITS; b++) {
            for (int r = 0; r < rows; r++) {
                if (widths[r] != b) continue;
                rowOffsets[r] = total + (long) BLOCK_BYTES * (e % FOUR);
                set(e++, r, b, rowOffsets[r], scales[r]);
                if (e % FOUR == 0) total += FOUR * rowBytes(b, length);
            }
            for (; e % FOUR != 0; e++) set(e, -1, b, total + (long) BLOCK_BYTES * (e % FOUR), 0f);
            if (count[b] % FOUR != 0) total += FOUR * rowBytes(b, length);
        }
        this.data = CopyMemory.allocate(Math.max(total, 1), BLOCK_BYTES);
        for (int entry = 0; entry < entries; entry++) {
            if (order[entry] >= 0) continue;
            for (long m = 0; m < rowBytes(bits[entry], length) / BLOCK_BYTES; m++) data.asSlice(offsets[entry] + FOUR * BLOCK_BYTES * m, BLOCK_BYTES).fill((byte) 0);
        }
        MemorySegment from = MemorySegment.ofArray(tensor.channelOffsets()), width = MemorySegment.ofArray(widths), to = MemorySegment.ofArray(rowOffsets);
        // On every thread: most of a copy's time is the first touch of its fresh pages, which the threads share.
        pool.forRange(rows, length, (worker, r0, r1) -> kernels.weightletLanesPack(tensor.data(), from.asSlice(8L * r0), width.asSlice(4L * r0), r1 - r0,
                length, data, to.asSlice(8L * r0)));
    }

    private void set(int entry, int channel, int width, long offset, float scale) {
        order[entry] = channel;
        bits[entry] = width;
        offsets[entry] = offset;
        scales[entry] = scale;
    }

    /** Fields a dword at {@code bits} bits. */
    static int fields(int bits) {
        return (Integer.SIZE - base(bits)) / bits;
    }

    /** Unused low bits of a dword: one below 8 bits. */
    static int base(int bits) {
        return bits == WeightletLayout.MAX_BITS ? 0 : 1;
    }

    /** Bytes of a row of {@code length} weights at {@code bits} bits. */
    static long rowBytes(int bits, int length) {
        int steps = (length + STEP_WEIGHTS - 1) / STEP_WEIGHTS;
        return (long) BLOCK_BYTES * ((steps + fields(bits) - 1) / fields(bits));
    }

}
