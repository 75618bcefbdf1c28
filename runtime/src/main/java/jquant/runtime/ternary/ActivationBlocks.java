package jquant.runtime.ternary;

import jquant.core.PerThreadRing;

import static jdk.incubator.vector.VectorOperators.MAX;

import java.util.Arrays;

import jdk.incubator.vector.FloatVector;

/**
 * One activation column quantized to int8 per block of {@value #BLOCK}: {@code scale = max|x| / 127},
 * {@code q = rint(x / scale)}, with each block's sum of q precomputed (the +1 offset of stored codes
 * is removed with it).
 *
 * <p>The output every ternary kernel computes, and the float formula all of them share:
 * <pre>
 *   dot[row][b] = Σ_{k &lt; 128} w[row][128b + k] · q[128b + k]          (exact int32)
 *   y[row]      = Σ_b  (float) dot[row][b] · (d[row][b] · scale[b])     (float, b ascending, from 0)
 * </pre>
 * where w ∈ {−1, 0, +1, +2} is the decoded weight and d its fp16 row-block scale.
 */
public final class ActivationBlocks {

    public static final int BLOCK = 128;

    /** 1.5 · 2^23: added and subtracted, rounds |v| &lt; 2^22 to an integer, ties to even. */
    private static final float ROUND = 0x1.8p23f;
    private static final int ROUND_BITS = Float.floatToRawIntBits(ROUND);

    private final byte[] q;
    private final float[] scales;
    private final int[] sums;

    private ActivationBlocks(byte[] q, float[] scales, int[] sums) {
        this.q = q;
        this.scales = scales;
        this.sums = sums;
    }

    /** Quantizes one float column; a non-finite value is an error, an all-zero block gets scale 0. */
    public static ActivationBlocks quantize(float[] x) { return quantize(x, 0, x.length); }

    /** Quantizes {@code x[off, off + cols)} into a new column (see {@link #fill}). */
    public static ActivationBlocks quantize(float[] x, int off, int cols) {
        checkLength(cols);
        return new ActivationBlocks(new byte[cols], new float[cols / BLOCK], new int[cols / BLOCK]).fill(x, off, new int[BLOCK]);
    }

    /** A thread's columns for {@link #quantizeReused}, one per length, and its rounding scratch. */
    private static final PerThreadRing<ActivationBlocks> REUSED = new PerThreadRing<>(4);
    private static final ThreadLocal<int[]> ROUNDED = ThreadLocal.withInitial(() -> new int[BLOCK]);

    /**
     * As {@link #quantize(float[], int, int)}, into this thread's column of that length, which this
     * thread's next call for the same length overwrites ({@link PerThreadRing}).
     */
    public static ActivationBlocks quantizeReused(float[] x, int off, int cols) {
        checkLength(cols);
        return REUSED.get(a -> a.cols() == cols, () -> new ActivationBlocks(new byte[cols], new float[cols / BLOCK], new int[cols / BLOCK]))
                .fill(x, off, ROUNDED.get());
    }

    /**
     * Quantizes {@code x[off, off + cols())} into this column with vector arithmetic that rounds
     * exactly as the definition: {@code x / scale} is one IEEE division per lane, and adding 1.5·2^23
     * rounds a float of magnitude below 2^22 to the nearest integer, ties to even, as {@link Math#rint};
     * that integer is then the float's low mantissa bits. A non-finite value shows as a non-finite
     * block maximum (max propagates NaN) and is then looked up.
     */
    private ActivationBlocks fill(float[] x, int off, int[] rounded) {
        int w = Simd.F.length();
        for (int b = 0; b < scales.length; b++) {
            int at = off + b * BLOCK;
            FloatVector max = FloatVector.zero(Simd.F);
            for (int i = 0; i < BLOCK; i += w) max = max.max(FloatVector.fromArray(Simd.F, x, at + i).abs());
            float peak = max.reduceLanes(MAX);
            if (!Float.isFinite(peak)) {
                for (int i = at; i < at + BLOCK; i++) {
                    if (!Float.isFinite(x[i])) throw new IllegalArgumentException("activation " + (i - off) + " is " + x[i]);
                }
            }
            float scale = peak / 127f;
            scales[b] = scale;
            if (scale == 0f) {
                Arrays.fill(q, b * BLOCK, (b + 1) * BLOCK, (byte) 0);
                sums[b] = 0;
                continue;
            }
            for (int i = 0; i < BLOCK; i += w) {
                FloatVector.fromArray(Simd.F, x, at + i).div(scale).add(ROUND).reinterpretAsInts().sub(ROUND_BITS).intoArray(rounded, i);
            }
            int sum = 0;   // a plain loop: C2 vectorizes it, where ShortVector shifts ran the Vector API's slow path
            for (int i = 0; i < BLOCK; i++) {
                q[b * BLOCK + i] = (byte) rounded[i];
                sum += rounded[i];
            }
            sums[b] = sum;
        }
        return this;
    }

    private static void checkLength(int cols) {
        if (cols <= 0 || cols % BLOCK != 0) throw new IllegalArgumentException("activation length " + cols + " is not a positive multiple of " + BLOCK);
    }

    /** Integer activations given directly (the integer oracle feeds these). */
    public static ActivationBlocks ofIntegers(byte[] q, float[] scales) {
        checkLength(q.length);
        if (scales.length != q.length / BLOCK) {
            throw new IllegalArgumentException(scales.length + " scales for " + q.length / BLOCK + " blocks");
        }
        int[] sums = new int[scales.length];
        for (int i = 0; i < q.length; i++) {
            if (q[i] == Byte.MIN_VALUE) throw new IllegalArgumentException("activation " + i + " is -128; the range is ±127");
            sums[i / BLOCK] += q[i];
        }
        return new ActivationBlocks(q.clone(), scales.clone(), sums);
    }

    /** An all-zero column of {@code cols} values: the padding of a partial prefill tile. */
    static ActivationBlocks zeros(int cols) { return new ActivationBlocks(new byte[cols], new float[cols / BLOCK], new int[cols / BLOCK]); }

    public int cols() { return q.length; }

    public int blocks() { return scales.length; }

    public byte q(int i) { return q[i]; }

    /** The int8 values themselves, for the kernels' arrangement (not to be modified). */
    byte[] values() { return q; }

    public float scale(int block) { return scales[block]; }

    public int sum(int block) { return sums[block]; }

    /** Every block's sum of q, for the native kernels (not to be modified). */
    int[] sums() { return sums; }

    /** Every block's scale, for the native kernels (not to be modified). */
    float[] scales() { return scales; }

    /** One term of the shared output formula: {@code acc + (float) dot · (d · scale)}. */
    static float term(float acc, int dot, float d, float xScale) { return acc + dot * (d * xScale); }
}
