package jquant.runtime.ggml;

import jquant.core.PerThreadRing;
import jquant.core.WorkerPool;
import jquant.runtime.kernels.VectorWidth;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Activation columns quantized to int8 per block as llama.cpp quantizes them before its integer dot
 * products (ggml-cpu): {@link Kind#Q8_0} for Q4_0 and Q8_0 weights, {@link Kind#Q8_K} for the
 * K-quants. Each column keeps its int8 values, one float scale per block and the sum of every 16
 * values (ggml's {@code bsums}, which the kernels use for the weights' offsets and minimums).
 *
 * <ul>
 * <li>Q8_0 (ggml-cpu's x86 {@code quantize_row_q8_0}, 32 values): {@code amax = max|x|},
 * scale {@code d = fp16(amax / 127)} (kept as the float it rounds to), {@code q = rint(x · (127 / amax))},
 * ties to even; an all-zero block gets scale 0 and zeros.</li>
 * <li>Q8_K ({@code quantize_row_q8_K_ref} in ggml-quants.c, 256 values): {@code max} = the first value of
 * largest magnitude, {@code iscale = −127 / max}, {@code q = rint(iscale · x)}, {@code d = 1 / iscale}
 * (float32); an all-zero block gets scale 0 and zeros.</li>
 * </ul>
 * Both clamp q to ±127 (where ggml saturates), so no value is −128. A non-finite activation is an error.
 */
public final class Q8Activations {

    /** The activation block type, ggml's names. */
    public enum Kind {
        Q8_0(32), Q8_K(256);

        /** Values per block (one scale each). */
        public final int block;

        Kind(int block) { this.block = block; }
    }

    /** Values per sum in {@link #sums}. */
    public static final int SUM_GROUP = 16;

    final Kind kind;
    final int cols, columns;
    /** {@code q[c · cols + k]}. */
    final byte[] q;
    /** {@code d[c · cols / block + b]}. */
    final float[] d;
    /** {@code sums[c · cols / 16 + g]}: the sum of q over values 16g .. 16g + 15 of column c. */
    final short[] sums;

    private Q8Activations(Kind kind, int cols, int columns) {
        this.kind = kind;
        this.cols = cols;
        this.columns = columns;
        this.q = new byte[cols * columns];
        this.d = new float[cols / kind.block * columns];
        this.sums = new short[cols / SUM_GROUP * columns];
    }

    /** Columns {@code [0, columns)} of {@code x} ({@code cols} values each), quantized on {@code pool}'s threads when there are several. */
    public static Q8Activations quantize(Kind kind, float[] x, int columns, int cols, WorkerPool pool) {
        if (cols <= 0 || cols % kind.block != 0) throw new IllegalArgumentException("activation length " + cols + " is not a positive multiple of " + kind.block);
        Q8Activations a = new Q8Activations(kind, cols, columns);
        if (columns == 1 || pool == null) {
            int[] rounded = new int[kind.block];
            for (int c = 0; c < columns; c++) a.quantizeColumn(x, c, rounded);
        } else {
            pool.forRange(columns, cols, (worker, start, end) -> {
                int[] rounded = new int[kind.block];
                for (int c = start; c < end; c++) a.quantizeColumn(x, c, rounded);
            });
        }
        return a;
    }

    /** A thread's single columns for {@link #quantizeReused}, one per kind and length, and its rounding scratch. */
    private static final PerThreadRing<Q8Activations> REUSED = new PerThreadRing<>(4);
    private static final ThreadLocal<int[]> ROUNDED = ThreadLocal.withInitial(() -> new int[Kind.Q8_K.block]);

    /**
     * One column, as {@link #quantize}, into this thread's column of that kind and length, which this
     * thread's next call for the same kind and length overwrites ({@link PerThreadRing}).
     */
    public static Q8Activations quantizeReused(Kind kind, float[] x, int cols) {
        if (cols <= 0 || cols % kind.block != 0) throw new IllegalArgumentException("activation length " + cols + " is not a positive multiple of " + kind.block);
        Q8Activations a = REUSED.get(c -> c.kind == kind && c.cols == cols, () -> new Q8Activations(kind, cols, 1));
        a.quantizeColumn(x, 0, ROUNDED.get());
        return a;
    }

    private static final VectorSpecies<Float> F = VectorWidth.FLOATS;
    /** 1.5 · 2^23: added to a float of magnitude below 2^22, rounds it to an integer, ties to even, as {@link Math#rint}; that integer is then the sum's low mantissa bits. */
    private static final float ROUND = 0x1.8p23f;
    private static final int ROUND_BITS = Float.floatToRawIntBits(ROUND);

    /**
     * Column c, block by block, in vector lanes that round as the definition: the block's max |x| (a
     * non-finite value shows as a non-finite maximum and is then looked up), each {@code x · mul}
     * one float product, rounded by adding 1.5 · 2^23 and clamped to ±127 ({@code rounded}: a block's
     * scratch). A multiplier that overflows to infinity (a block of values below about 4e-37) takes the
     * definition's scalar loop: its products are then infinite or NaN, which the lanes' rounding does not
     * map to the definition's values.
     */
    private void quantizeColumn(float[] x, int c, int[] rounded) {
        int block = kind.block, off = c * cols, lanes = F.length();
        for (int b = 0; b < cols / block; b++) {
            int at = off + b * block;
            FloatVector peak = FloatVector.zero(F);
            for (int j = 0; j < block; j += lanes) peak = peak.max(FloatVector.fromArray(F, x, at + j).abs());
            float amax = peak.reduceLanes(VectorOperators.MAX);
            if (!(amax <= Float.MAX_VALUE)) {
                for (int j = at; j < at + block; j++) {
                    if (!Float.isFinite(x[j])) throw new IllegalArgumentException("activation " + (j - off) + " is " + x[j]);
                }
            }
            float scale, mul;
            if (amax == 0f) {
                scale = 0f;
                mul = 0f;
            } else if (kind == Kind.Q8_0) {
                scale = Float.float16ToFloat(Float.floatToFloat16(amax / 127f));
                mul = 127f / amax;
            } else {
                int first = at;
                while (Math.abs(x[first]) != amax) first++;   // the first value of largest magnitude gives the sign
                mul = -127f / x[first];
                scale = 1f / mul;
            }
            d[c * (cols / block) + b] = scale;
            if (Float.isInfinite(mul)) {
                for (int j = at; j < at + block; j++) q[j] = (byte) Math.clamp((long) Math.rint(x[j] * mul), -127, 127);
                continue;
            }
            for (int j = 0; j < block; j += lanes) {
                FloatVector.fromArray(F, x, at + j).mul(mul).add(ROUND).reinterpretAsInts().sub(ROUND_BITS).max(-127).min(127)
                        .intoArray(rounded, j);
            }
            for (int j = 0; j < block; j++) q[at + j] = (byte) rounded[j];
        }
        for (int g = 0; g < cols / SUM_GROUP; g++) {
            int sum = 0;
            for (int j = off + g * SUM_GROUP; j < off + (g + 1) * SUM_GROUP; j++) sum += q[j];
            sums[c * (cols / SUM_GROUP) + g] = (short) sum;
        }
    }

    public Kind kind() { return kind; }

    public int cols() { return cols; }

    public int columns() { return columns; }

    /** Column c's value k. */
    public int q(int c, int k) { return q[c * cols + k]; }

    /** Column c's scale of block b. */
    public float scale(int c, int b) { return d[c * (cols / kind.block) + b]; }

    /** Column c's sum of values 16g .. 16g + 15. */
    public int sum16(int c, int g) { return sums[c * (cols / SUM_GROUP) + g]; }
}
