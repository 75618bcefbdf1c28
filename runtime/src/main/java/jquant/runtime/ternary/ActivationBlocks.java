package jquant.runtime.ternary;

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

    private final byte[] q;
    private final float[] scales;
    private final int[] sums;

    private ActivationBlocks(byte[] q, float[] scales) {
        if (q.length == 0 || q.length % BLOCK != 0) {
            throw new IllegalArgumentException("activation length " + q.length + " is not a positive multiple of " + BLOCK);
        }
        if (scales.length != q.length / BLOCK) {
            throw new IllegalArgumentException(scales.length + " scales for " + q.length / BLOCK + " blocks");
        }
        this.q = q;
        this.scales = scales;
        this.sums = new int[scales.length];
        for (int i = 0; i < q.length; i++) {
            if (q[i] == Byte.MIN_VALUE) throw new IllegalArgumentException("activation " + i + " is -128; the range is ±127");
            sums[i / BLOCK] += q[i];
        }
    }

    /** Quantizes one float column; a non-finite value is an error, an all-zero block gets scale 0. */
    public static ActivationBlocks quantize(float[] x) {
        byte[] q = new byte[x.length];
        float[] scales = new float[x.length / BLOCK];
        for (int b = 0; b < scales.length; b++) {
            float max = 0f;
            for (int i = b * BLOCK; i < (b + 1) * BLOCK; i++) {
                if (!Float.isFinite(x[i])) throw new IllegalArgumentException("activation " + i + " is " + x[i]);
                max = Math.max(max, Math.abs(x[i]));
            }
            float scale = max / 127f;
            scales[b] = scale;
            if (scale == 0f) continue;
            for (int i = b * BLOCK; i < (b + 1) * BLOCK; i++) q[i] = (byte) Math.rint(x[i] / scale);
        }
        return new ActivationBlocks(q, scales);
    }

    /** Integer activations given directly (the integer oracle feeds these). */
    public static ActivationBlocks ofIntegers(byte[] q, float[] scales) {
        return new ActivationBlocks(q.clone(), scales.clone());
    }

    /** An all-zero column of {@code cols} values: the padding of a partial prefill tile. */
    static ActivationBlocks zeros(int cols) { return new ActivationBlocks(new byte[cols], new float[cols / BLOCK]); }

    public int cols() { return q.length; }

    public int blocks() { return scales.length; }

    public byte q(int i) { return q[i]; }

    public float scale(int block) { return scales[block]; }

    public int sum(int block) { return sums[block]; }

    /** One term of the shared output formula: {@code acc + (float) dot · (d · scale)}. */
    static float term(float acc, int dot, float d, float xScale) { return acc + dot * (d * xScale); }
}
