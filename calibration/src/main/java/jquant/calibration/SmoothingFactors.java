package jquant.calibration;

import jquant.formats.ModelConfig;

import java.util.List;

/**
 * The per-input-channel smoothing factors of a group, from its S_I: EdgeFlow's {@code f_j = b_j^α},
 * or SmoothQuant's {@code f_j = b_j^α / m_j^(1−α)} with m_j the largest |weight| of input channel j
 * over the group's layers (SmoothQuant by Xiao et al.; {@link jquant.quantize.SmoothingRule}).
 *
 * <p><b>Tying (grouped-query attention).</b> o_proj's input channel {@code h·headDim + d} carries
 * query head h's weighted sum of kv head {@code h / (heads / kvHeads)}'s values. Its factor folds into
 * row {@code kvHead·headDim + d} of v_proj, which every query head of that kv head reads, so those
 * channels must share one factor: {@code b = max S_I} over them (the max keeps every tied channel
 * within its new range after division).
 *
 * <p><b>Floor.</b> A channel that never fired (S_I = 0) would get a factor of 0 (its weight column
 * zeroed, its norm gain divided by 0). Bases below {@link #FLOOR} × the group's largest base are
 * raised to that: such channels carry nothing on the calibration text, and dividing them by a small
 * positive factor keeps the transform exactly invertible. A group whose input was all zeros gets
 * b = 1 (no smoothing).
 */
public final class SmoothingFactors {
    /** Smallest base, relative to the group's largest. */
    public static final float FLOOR = 1e-5f;

    private SmoothingFactors() {}

    /** The bases b_j (length = the group's input channels): S_I, tied for o_proj, floored. */
    public static float[] bases(LinearGroup group, float[] inputMax, ModelConfig c) {
        return floored(tied(group, inputMax, c));
    }

    /**
     * SmoothQuant's weight ranges m_j: max |W[i, j]| over every row of every member layer, tied for
     * o_proj like the bases (the tied channels share one factor), floored.
     */
    public static float[] weightRanges(LinearGroup group, List<float[]> memberWeights, int channels, ModelConfig c) {
        float[] m = new float[channels];
        for (float[] w : memberWeights) {
            for (int i = 0; i < w.length; i++) m[i % channels] = Math.max(m[i % channels], Math.abs(w[i]));
        }
        return floored(tied(group, m, c));
    }

    /** {@code v} with o_proj's channels of one kv channel set to their max; other groups unchanged. */
    private static float[] tied(LinearGroup group, float[] inputMax, ModelConfig c) {
        float[] b = inputMax.clone();
        if (group == LinearGroup.ATTN_OUTPUT) {
            int headDim = c.headDim();
            int perKv = c.heads() / c.kvHeads();
            for (int kv = 0; kv < c.kvHeads(); kv++) {
                for (int d = 0; d < headDim; d++) {
                    float tied = 0;
                    for (int h = kv * perKv; h < (kv + 1) * perKv; h++) tied = Math.max(tied, inputMax[h * headDim + d]);
                    for (int h = kv * perKv; h < (kv + 1) * perKv; h++) b[h * headDim + d] = tied;
                }
            }
        }
        return b;
    }

    /** {@code v} with entries below FLOOR × max(v) raised to it; all ones if v is all zero. */
    static float[] floored(float[] v) {
        float max = 0;
        for (float x : v) max = Math.max(max, x);
        float[] out = new float[v.length];
        if (max == 0) {
            java.util.Arrays.fill(out, 1f);
            return out;
        }
        float floor = FLOOR * max;
        for (int j = 0; j < v.length; j++) out[j] = Math.max(v[j], floor);
        return out;
    }

    /** EdgeFlow's f_j = b_j^α. */
    public static float[] factors(float[] bases, float alpha) {
        float[] f = new float[bases.length];
        for (int j = 0; j < f.length; j++) f[j] = (float) Math.pow(bases[j], alpha);
        return f;
    }

    /** SmoothQuant's f_j = b_j^α / m_j^(1−α) ({@link #weightRanges m}). */
    public static float[] smoothQuantFactors(float[] bases, float[] weightRanges, float alpha) {
        float[] f = new float[bases.length];
        for (int j = 0; j < f.length; j++) f[j] = (float) (Math.pow(bases[j], alpha) / Math.pow(weightRanges[j], 1 - alpha));
        return f;
    }

    /** The static per-tensor input range after smoothing: max_j S_I[j] / f_j. */
    public static float smoothedRange(float[] inputMax, float[] factors) {
        float max = 0;
        for (int j = 0; j < factors.length; j++) max = Math.max(max, inputMax[j] / factors[j]);
        return max;
    }
}
