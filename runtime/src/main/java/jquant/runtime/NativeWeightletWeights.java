package jquant.runtime;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Optional;
import jquant.formats.weightlet.PackedTensor;
import jquant.formats.weightlet.WeightletLayout;
import jquant.runtime.nativelib.AlignedScratch;
import jquant.runtime.nativelib.KernelSource;
import jquant.runtime.nativelib.LazyCopy;
import jquant.runtime.nativelib.NativeKernels;

/**
 * A weightlet layer whose decode runs on the C library's kernels: each channel's groups unpacked at its
 * own bit width into an L1 buffer (AVX-512: four stripes per register, as the Java unpacker's half-group
 * kernel), then, in npu mode ({@link NpuInt8Weights}), an exact int8 dot product ({@code vpdpbusd},
 * {@code vpmaddubsw}, {@code sdot}) where the Java kernel multiplies int8 values as floats, or, weight-only
 * ({@link WeightletWeights}), the runtime's float chains over four channels at a time, each activation
 * vector loaded once for the four (on the instruction set with the Java kernels' lane count only), or, by
 * default where the kernels have it ({@link KernelChoice#weightletLanes}), over a copy made at the first decode
 * ({@link WeightletLanes}). The outputs are the Java layer's bit for bit; a batch of
 * {@value RowMajorWeights#PREFILL_TOKENS} tokens or more (prefill) takes the Java layer.
 */
final class NativeWeightletWeights implements LinearWeights {

    private final WeightletWeights twin;
    private final NativeKernels kernels;
    private final MemorySegment data;
    private final long[] offsets;
    private final int[] bits;
    private final float[] scales;
    private final int out, in, padded;
    /** Whether weight-only decode runs on {@link #lanes}; the copy is made at the first decode. */
    private final boolean onLanes;
    private final LazyCopy<WeightletLanes> lanes = new LazyCopy<>(this::makeLanes);
    /**
     * A thread's int8 input for the npu kernel, padded with zeros to whole groups: no array a call. One
     * a matrix: each quantizes with its own input scale, and products of one input are prepared together.
     */
    private final AlignedScratch quantized = new AlignedScratch();

    NativeWeightletWeights(WeightletWeights twin, NativeKernels kernels) {
        this(twin, kernels, false);
    }

    /** With {@code lanes}, weight-only decode on a {@link WeightletLanes} copy where {@code kernels} have its kernel. */
    NativeWeightletWeights(WeightletWeights twin, NativeKernels kernels, boolean lanes) {
        PackedTensor p = twin.packed;
        this.twin = twin;
        this.kernels = kernels;
        this.data = p.data();
        this.offsets = p.channelOffsets();
        this.bits = p.bits();
        this.scales = twin.scales;
        this.out = twin.outFeatures();
        this.in = twin.inFeatures();
        this.padded = WeightletLayout.groups(in) * WeightletLayout.GROUP_WEIGHTS;
        this.onLanes = lanes && !(twin instanceof NpuInt8Weights) && kernels.hasWeightletLanes();
    }

    /** {@code twin} on the native kernels where the process uses them ({@link KernelSource}), else {@code twin} itself. */
    static LinearWeights of(NpuInt8Weights twin) {
        return KernelSource.kernels().<LinearWeights>map(k -> new NativeWeightletWeights(twin, k)).orElse(twin);
    }

    /**
     * Weight-only {@code twin} on the native kernels where the process uses them with its lane count, with
     * {@code lanes} on a {@link WeightletLanes} copy where they have its kernel, else {@code twin} itself.
     */
    static LinearWeights of(WeightletWeights twin, boolean lanes) {
        return KernelSource.kernelsWithFloatLanes(twin.compute.matmul().lanes())
                .<LinearWeights>map(k -> new NativeWeightletWeights(twin, k, lanes)).orElse(twin);
    }

    /** The lanes copy; then the stored bytes' mapped pages leave the process. */
    private WeightletLanes makeLanes() {
        WeightletLanes l = new WeightletLanes(twin.packed, scales, kernels, twin.compute.pool());
        // Decode no longer reads the stored pages: out of the resident set, so the copy replaces them (prefill pages them back in).
        if (data.isMapped()) data.unload();
        return l;
    }

    @Override public int inFeatures() { return in; }
    @Override public int outFeatures() { return out; }
    @Override public long storedBytes() { return twin.storedBytes(); }

    @Override
    public void matmul(float[] x, int n, float[] y) {
        if (n >= RowMajorWeights.PREFILL_TOKENS) {
            twin.matmul(x, n, y);
            return;
        }
        for (int t = 0; t < n; t++) {
            token(x, t, MemorySegment.ofArray(y).asSlice(4L * t * out)).runOn(twin.compute.pool());
        }
    }

    @Override
    public Optional<RowGroups> prepare(SharedInput x, float[] y) {
        if (x.tokens() != 1) return Optional.empty();
        return Optional.of(token(x.values(), 0, MemorySegment.ofArray(y)));
    }

    /**
     * Token {@code t}'s product into {@code outs}, its input quantized now in npu mode; one kernel call per range of row groups
     * (on the lanes, groups of the lanes' order: not {@link RowGroups#inOrder}).
     */
    private RowGroups token(float[] x, int t, MemorySegment outs) {
        MemorySegment offs = MemorySegment.ofArray(offsets), widths = MemorySegment.ofArray(bits), s = MemorySegment.ofArray(scales);
        if (twin instanceof NpuInt8Weights npu) {
            MemorySegment act = quantized.get(padded);
            for (int k = 0; k < in; k++) act.set(ValueLayout.JAVA_BYTE, k, npu.quantizeInput(x[t * in + k]));
            act.asSlice(in).fill((byte) 0);
            return new RowGroups(out, 4L * in, (r0, r1) -> kernels.weightletNpu(data, offs.asSlice(8L * r0), widths.asSlice(4L * r0), r1 - r0, in, act,
                    npu.inputScale(), s.asSlice(4L * r0), outs.asSlice(4L * r0)));
        }
        MemorySegment act = MemorySegment.ofArray(x).asSlice(4L * t * in, 4L * in);
        if (onLanes) {
            WeightletLanes l = lanes.get();
            MemorySegment at = MemorySegment.ofArray(l.offsets), width = MemorySegment.ofArray(l.bits);
            MemorySegment order = MemorySegment.ofArray(l.order), scale = MemorySegment.ofArray(l.scales);
            return new RowGroups(l.order.length, 4L * in, (r0, r1) -> kernels.weightletLanesF32(l.data, at.asSlice(8L * r0),
                    width.asSlice(4L * r0), order.asSlice(4L * r0), r1 - r0, in, act, scale.asSlice(4L * r0), outs), false);
        }
        return new RowGroups(out, 4L * in, (r0, r1) -> kernels.weightletF32(data, offs.asSlice(8L * r0), widths.asSlice(4L * r0), r1 - r0, in, act,
                s.asSlice(4L * r0), outs.asSlice(4L * r0)));
    }
}
