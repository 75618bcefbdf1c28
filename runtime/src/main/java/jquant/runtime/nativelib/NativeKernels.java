package jquant.runtime.nativelib;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The C library's kernels for one instruction set, as Java methods. Each takes memory segments —
 * slices of a mapped file, or heap arrays wrapped by {@link MemorySegment#ofArray} (passed without a
 * copy: the calls are short and never call back) — and checks nothing: the Java classes that call
 * them check shapes first, as for their Java kernels.
 */
public final class NativeKernels {

    /** The stored ternary layouts the library has kernels for. */
    public enum TernaryLayout { T2P, TQ2_0 }

    /** The row types the library multiplies in place: float16 and llama.cpp's common block types (ggml's names). */
    public enum RowType { F16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K }

    private final NativeIsa isa;
    private final String origin;
    /** Per stored ternary layout (T2P, TQ2_0): the column arrangement and the multiply. */
    private final MethodHandle[] arrange = new MethodHandle[2], multiply = new MethodHandle[2];
    /** Per stored ternary layout: the prefill tiles on plain columns (AVX-512 only; null elsewhere). */
    private final MethodHandle[] tiles = new MethodHandle[2];
    /** T2P's sixteen-row copy and its product, and a column quantized into their plain form (AVX-512; null elsewhere). */
    private final MethodHandle t2pR16, t2pR16Multiply, quantizePlain;
    private final MethodHandle weightletNpu, weightletF32;
    /** The weightlet lanes' pack and weight-only decode (AVX-512 only; null elsewhere). */
    private final MethodHandle lanesPack, lanesF32;
    private final MethodHandle[] rows = new MethodHandle[RowType.values().length];
    private final MethodHandle[] blockDots = new MethodHandle[RowType.values().length];
    private final MethodHandle tilesF16;
    /** Attention's scores and weighted sums on this instruction set's float lanes. */
    private final MethodHandle attentionScores, attentionSums;
    /** Attention's softmax, rows at a time (AVX-512 only; null elsewhere). */
    private final MethodHandle softmaxRows;

    private NativeKernels(NativeLibrary lib, NativeIsa isa) {
        this.isa = isa;
        this.origin = lib.origin();
        String[] prefix = {"jq_t2p_", "jq_tq2_"};
        for (int l = 0; l < 2; l++) {
            arrange[l] = lib.downcall(prefix[l] + "arrange", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS));
            multiply[l] = lib.downcall(prefix[l] + "multiply_" + isa.suffix, FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT,
                    JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG));
            if (isa.bits == 512) {
                tiles[l] = lib.downcall(prefix[l] + "tiles_" + isa.suffix,
                        FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS));
            }
        }
        t2pR16 = isa.bits != 512 ? null : lib.downcall("jq_t2p_r16_" + isa.suffix, FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_INT, ADDRESS));
        t2pR16Multiply = isa.bits != 512 ? null : lib.downcall("jq_t2p_r16_multiply_" + isa.suffix,
                FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
        quantizePlain = isa.bits != 512 ? null : lib.downcall("jq_quantize_plain_" + isa.suffix, FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_INT, ADDRESS));
        weightletNpu = lib.downcall("jq_wl_npu_" + isa.suffix,
                FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, JAVA_FLOAT, ADDRESS, ADDRESS));
        weightletF32 = lib.downcall("jq_wl_f32_" + isa.suffix,
                FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        lanesPack = isa.bits != 512 ? null : lib.downcall("jq_wl_lanes_pack_" + isa.suffix,
                FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
        lanesF32 = isa.bits != 512 ? null : lib.downcall("jq_wl_lanes_f32_" + isa.suffix,
                FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        tilesF16 = lib.downcall("jq_tiles_f16_" + isa.suffix,
                FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG));
        attentionScores = lib.downcall("jq_attn_scores_" + isa.suffix, FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT,
                JAVA_INT, JAVA_INT, JAVA_INT, JAVA_FLOAT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        softmaxRows = isa.bits != 512 ? null : lib.downcall("jq_softmax_rows_" + isa.suffix,
                FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
        attentionSums = lib.downcall("jq_attn_sums_" + isa.suffix, FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT,
                JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        for (RowType t : RowType.values()) {
            rows[t.ordinal()] = lib.downcall("jq_rows_" + t.name().toLowerCase(java.util.Locale.ROOT) + "_" + isa.suffix,
                    FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
            if (t != RowType.F16) {
                blockDots[t.ordinal()] = lib.downcall("jq_gg_" + t.name().toLowerCase(java.util.Locale.ROOT) + "_" + isa.suffix,
                        FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG));
            }
        }
    }

    /** Every instruction set of the loaded library this CPU runs, best first (empty without a library). */
    public static List<NativeKernels> supported() {
        List<NativeKernels> all = new ArrayList<>();
        NativeLibrary.get().library().ifPresent(lib -> {
            for (NativeIsa isa : NativeIsa.values()) if ((lib.isas() & isa.bit) != 0) all.add(new NativeKernels(lib, isa));
        });
        return all;
    }

    /** The best instruction set this CPU runs, if the library is there. */
    public static Optional<NativeKernels> best() {
        return Best.KERNELS;
    }

    /** Why {@link #best()} is empty, or where the library came from. */
    public static String status() {
        NativeLibrary.Loaded l = NativeLibrary.get();
        if (l.library().isEmpty()) return l.reason();
        return best().map(k -> k.isa.suffix + " kernels, " + l.reason())
                .orElse("no kernels for this CPU in " + l.library().get().origin() + " (it lacks AVX2, AVX-512 VNNI or NEON dot products)");
    }

    private static final class Best {
        static final Optional<NativeKernels> KERNELS = supported().stream().findFirst();
    }

    public NativeIsa isa() { return isa; }

    @Override
    public String toString() { return "native " + isa.suffix + " (" + origin + ")"; }

    /** Bytes per 128-weight block of a column arranged for {@code layout}'s kernels: its activations, then its sum and scale four times. */
    public static int columnBytesPerBlock(TernaryLayout layout) {
        return (layout == TernaryLayout.T2P ? 256 : 128) + 32;
    }

    /**
     * {@code jq_<layout>_arrange}: a column's int8 activations (blocks × 128) with each block's sum of
     * q (int) and scale (float), arranged for {@code layout}'s kernels ({@link #columnBytesPerBlock} per block).
     */
    public void arrange(TernaryLayout layout, MemorySegment q, MemorySegment sums, MemorySegment scales, int blocks, MemorySegment column) {
        try {
            arrange[layout.ordinal()].invokeExact(q, sums, scales, blocks, column);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code jq_<layout>_multiply_<isa>}: rows {@code [0, rows)} of the matrix at {@code w} ({@code rowBytes}
     * per row for TQ2_0; T2P takes row groups in order) against {@code columns} arranged columns
     * ({@link #arrange}, one after another), into {@code y[c · ystride + row]} (the shared float
     * formula), or, with {@code y} {@link MemorySegment#NULL}, the exact dots
     * {@code dots[c · dstride + row · blocks + b]}.
     */
    public void multiply(TernaryLayout layout, MemorySegment w, int rows, long rowBytes, int blocks, int columns, MemorySegment act,
                         MemorySegment y, long ystride, MemorySegment dots, long dstride) {
        try {
            multiply[layout.ordinal()].invokeExact(w, rows, rowBytes, blocks, columns, act, y, ystride, dots, dstride);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Whether this instruction set has the ternary prefill tiles ({@link #tiles}): AVX-512 has. */
    public boolean hasTiles() { return tiles[0] != null; }

    /** Bytes of a plain column ({@link #tiles}) of {@code blocks} 128-weight blocks: its int8 activations, each block's sum of q, each block's scale. */
    public static long plainColumnBytes(int blocks) {
        return (long) blocks * (128 + 8);
    }

    /** Bytes of the scratch {@link #tiles} gathers sixteen rows' codes and scales into, for rows of {@code blocks} 128-weight blocks. */
    public static long tileScratchBytes(int blocks) {
        return (long) blocks * 9 * 64;
    }

    /**
     * {@code jq_<layout>_tiles_<isa>}: as {@link #multiply} into {@code y}, the same bits, with sixteen rows
     * in a register's lanes (docs/runtime.md), against {@code columns} plain columns at {@code act}, one
     * after another: a column's int8 activations (blocks × 128, in k order), then each block's sum of q
     * (int32), then each block's scale (float); {@code scratch}: {@link #tileScratchBytes} aligned to 64 bytes, the
     * calling thread's own. Only where {@link #hasTiles}.
     */
    public void tiles(TernaryLayout layout, MemorySegment w, int rows, long rowBytes, int blocks, int columns, MemorySegment act,
                      MemorySegment y, long ystride, MemorySegment scratch) {
        try {
            tiles[layout.ordinal()].invokeExact(w, rows, rowBytes, blocks, columns, act, y, ystride, scratch);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Whether this instruction set multiplies T2P on its sixteen-row copy ({@link #t2pR16}): AVX-512 does. */
    public boolean hasT2pR16() { return t2pR16 != null; }

    /** Bytes of the sixteen-row copy ({@link #t2pR16}) of a T2P matrix: its rows in groups of sixteen, 34 bytes a 128 weights as T2P. */
    public static long t2pR16Bytes(int rows, int blocks) {
        return (long) (rows + 15) / 16 * blocks * 16 * 34;
    }

    /**
     * {@code jq_t2p_r16}: the T2P matrix at {@code w} ({@code rows} a multiple of four) copied to {@code dst}
     * ({@link #t2pR16Bytes}, on a cache line) as sixteen-row tiles: a group's scales, then each block's code
     * dwords with the sixteen rows' side by side (docs/runtime.md). Only where {@link #hasT2pR16}.
     */
    public void t2pR16(MemorySegment w, int rows, int blocks, MemorySegment dst) {
        try {
            t2pR16.invokeExact(w, rows, blocks, dst);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code jq_t2p_r16_multiply}: rows {@code [0, rows)} of a sixteen-row copy (from a group's start)
     * against {@code columns} plain columns ({@link #tiles}' form) into {@code y[c · ystride + row]}: the
     * bits of {@link #multiply}. Only where {@link #hasT2pR16}.
     */
    public void t2pR16Multiply(MemorySegment r16, int rows, int blocks, int columns, MemorySegment act, MemorySegment y, long ystride) {
        try {
            t2pR16Multiply.invokeExact(r16, rows, blocks, columns, act, y, ystride);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code jq_quantize_plain}: {@code blocks} 128-blocks of floats at {@code x} quantized into a plain column at
     * {@code out} ({@link #plainColumnBytes}): the bits of {@code ActivationBlocks.quantize} laid out as {@link #tiles}
     * take them. Returns −1, or the index of the first value that is not finite ({@code out} then undefined). Only where
     * {@link #hasT2pR16}.
     */
    public long quantizePlain(MemorySegment x, int blocks, MemorySegment out) {
        try {
            return (long) quantizePlain.invokeExact(x, blocks, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code jq_wl_npu}: {@code y[r] = (float) (w_r · xq) · (inputScale · scales[r])}, the dot of the
     * int8 weights with the int8 activations {@code xq} (padded with zeros to whole groups) exact.
     */
    public void weightletNpu(MemorySegment data, MemorySegment offsets, MemorySegment bits, int rows, int length, MemorySegment xq,
                             float inputScale, MemorySegment scales, MemorySegment y) {
        try {
            weightletNpu.invokeExact(data, offsets, bits, rows, length, xq, inputScale, scales, y);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code jq_wl_f32}: {@code y[r] = (w_r · x) · scales[r]}, the int8 weights as floats against the
     * float32 activations {@code x} in the runtime's float summation order on this instruction set's
     * lanes (so only where those are the Java kernels' lanes).
     */
    public void weightletF32(MemorySegment data, MemorySegment offsets, MemorySegment bits, int rows, int length, MemorySegment x,
                             MemorySegment scales, MemorySegment y) {
        try {
            weightletF32.invokeExact(data, offsets, bits, rows, length, x, scales, y);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Whether this instruction set has the weightlet lanes' kernels ({@link #weightletLanesF32}): AVX-512 has. */
    public boolean hasWeightletLanes() { return lanesF32 != null; }

    /**
     * {@code jq_wl_lanes_pack}: rows {@code [0, rows)} of a weightlet tensor ({@code data}, {@code offsets},
     * {@code bits} as {@link #weightletF32} takes them) as weightlet lanes (jquant.runtime.WeightletLanes),
     * row {@code r}'s block {@code m} at {@code out + outOffsets[r] + 256·m} (a four's blocks side by side).
     */
    public void weightletLanesPack(MemorySegment data, MemorySegment offsets, MemorySegment bits, int rows, int length, MemorySegment out,
                                   MemorySegment outOffsets) {
        try {
            lanesPack.invokeExact(data, offsets, bits, rows, length, out, outOffsets);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code jq_wl_lanes_f32}: {@link #weightletF32}'s bits from weightlet lanes: rows {@code [0, rows)} of the
     * lanes' order (fours of one width), row {@code r}'s block {@code m} at {@code lanes + offsets[r] + 256·m}, its result
     * {@code y[order[r]] = (w · x) · scales[r]}, none for a negative {@code order[r]}.
     */
    public void weightletLanesF32(MemorySegment lanes, MemorySegment offsets, MemorySegment bits, MemorySegment order, int rows, int length,
                                  MemorySegment x, MemorySegment scales, MemorySegment y) {
        try {
            lanesF32.invokeExact(lanes, offsets, bits, order, rows, length, x, scales, y);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code jq_rows_<type>}: {@code y[r] = w_r · x} for {@code rows} rows of {@code type} at {@code w}
     * ({@code rowBytes} per row, {@code cols} weights), each weight decoded as jquant's reference decoder
     * does, by the runtime's float summation order with this instruction set's lanes (float16 rows must
     * be finite).
     */
    public void rows(RowType type, MemorySegment w, long rowBytes, int rows, int cols, MemorySegment x, MemorySegment y) {
        try {
            this.rows[type.ordinal()].invokeExact(w, rowBytes, rows, cols, x, y);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code jq_tiles_f16}: {@code y[t · ystride + r] = w_r · x_t} for {@code rows} float16 rows at {@code w}
     * and {@code tokens} activation vectors ({@code cols} floats each) at {@code x}, each as {@link #rows}
     * computes it (the rows must be finite), four rows by four tokens per step.
     */
    public void tilesF16(MemorySegment w, long rowBytes, int rows, int cols, MemorySegment x, int tokens, MemorySegment y, long ystride) {
        try {
            tilesF16.invokeExact(w, rowBytes, rows, cols, x, tokens, y, ystride);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code jq_gg_<type>}: {@code y[c · ystride + r]} for {@code rows} rows of a block type (not F16) at
     * {@code w} ({@code rowBytes} per row, {@code cols} weights) times {@code columns} activation columns
     * quantized as {@code jquant.runtime.ggml.Q8Activations} holds them: int8 values {@code q} (cols per
     * column), float block scales {@code d}, int16 sums of 16 {@code sums}; by that class's exact
     * integer arithmetic and float formula ({@code jquant.runtime.ggml.BlockDots}).
     */
    public void blockDots(RowType type, MemorySegment w, long rowBytes, int rows, int cols, int columns, MemorySegment q, MemorySegment d,
                          MemorySegment sums, MemorySegment y, long ystride) {
        try {
            blockDots[type.ordinal()].invokeExact(w, rowBytes, rows, cols, columns, q, d, sums, y, ystride);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code jq_attn_scores}: {@code jquant.runtime.kernels.Kernels#scores} (offsets and strides in floats) with the
     * bits of the Java vector kernels on this instruction set's float lanes.
     */
    public void attentionScores(MemorySegment q, int qOff, int qStride, int rows, int dims, float scale, MemorySegment k, int kOff, int kStride,
                                int len, MemorySegment s, int sOff, int sStride) {
        try {
            attentionScores.invokeExact(q, qOff, qStride, rows, dims, scale, k, kOff, kStride, len, s, sOff, sStride);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code jq_attn_sums}: {@code jquant.runtime.kernels.Kernels#weightedSums} (offsets and strides in floats) with the
     * bits of the Java vector kernels on this instruction set's float lanes.
     */
    public void attentionSums(MemorySegment s, int sOff, int sStride, int rows, MemorySegment v, int vOff, int vStride, int dims, int len,
                              MemorySegment out, int outOff, int outStride) {
        try {
            attentionSums.invokeExact(s, sOff, sStride, rows, v, vOff, vStride, dims, len, out, outOff, outStride);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Whether {@link #softmaxRows} runs here. */
    public boolean hasSoftmaxRows() { return softmaxRows != null; }

    /**
     * {@code jq_softmax_rows}: the softmax of {@code rows} (at most 32) rows of {@code len > 0} floats, {@code stride} apart
     * from {@code off}, in place, with the bits of the Java vector kernels' softmax. Returns the rows left as they were (a NaN,
     * an infinite maximum; bit r) in its low 32 bits, and in its high 32 the rows left with lanes for {@code Math.exp}: those
     * lanes hold {@code x − max}, negative where every exponential is positive. Only where {@link #hasSoftmaxRows}.
     */
    public long softmaxRows(MemorySegment x, int off, int stride, int rows, int len) {
        try {
            return (long) softmaxRows.invokeExact(x, off, stride, rows, len);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }
}
