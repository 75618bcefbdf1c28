package jquant.runtime;

import jquant.runtime.kernels.Int8Dot;

/**
 * A linear layer as an NPU runs a W{B}A8 matmul (EdgeFlow §4.1): the int8 weight codes of a B-bit
 * channel (B ≤ 8), a per-channel scale, and a static per-tensor activation scale from calibration.
 * With smoothing, x is already the smoothed input x / f (the folded norm or producer outputs it) and
 * s_x is its scale, max |x / f| / 127. For each token row x:
 * <pre>
 *   s_x   = inputScale                                        (static, per tensor)
 *   x_q   = clamp(round(x / s_x), −127, 127)                  (int8; round half up)
 *   acc_r = Σ_k x_q[k] · w_q[r][k]                            (int8 × int8 → int32)
 *   y_r   = acc_r · (s_x · scale_r)                           (per-channel dequantization; the
 *                                                              smoothing output factor S_O is already
 *                                                              folded into scale_r by pack)
 * </pre>
 * Inputs beyond the calibrated range saturate, as they do on the NPU.
 */
public final class NpuInt8Weights implements LinearWeights {
    private final byte[] codes;
    private final float[] scales;
    private final int out;
    private final int in;
    private final float inputScale;
    private final Compute compute;
    private final Int8Dot dot;

    /**
     * @param codes        row-major int8 codes {@code [out][in]}, all in [−127, 127]
     * @param scales       per output channel
     * @param inputScale   the static int8 scale of this layer's input (its calibrated range / 127)
     */
    public NpuInt8Weights(byte[] codes, float[] scales, int out, int in, float inputScale, Compute compute, Int8Dot dot) {
        if (out <= 0 || in <= 0 || (long) out * in != codes.length || scales.length != out) {
            throw new IllegalArgumentException("a " + out + "×" + in + " int8 matrix needs " + (long) out * in + " codes and "
                    + out + " scales, got " + codes.length + " and " + scales.length);
        }
        if (in > Int8Dot.MAX_LENGTH) throw new IllegalArgumentException("input length " + in + " could overflow int32 accumulation (max " + Int8Dot.MAX_LENGTH + ")");
        if (!(inputScale > 0) || !Float.isFinite(inputScale)) throw new IllegalArgumentException("activation scale " + inputScale + " must be finite and > 0");
        this.codes = codes;
        this.scales = scales;
        this.out = out;
        this.in = in;
        this.inputScale = inputScale;
        this.compute = compute;
        this.dot = dot;
    }

    @Override
    public int inFeatures() {
        return in;
    }

    @Override
    public int outFeatures() {
        return out;
    }

    /** The int8 activation code of {@code x} under this layer's static scale. */
    byte quantizeInput(float x) {
        return (byte) Math.clamp(Math.round(x / inputScale), -127, 127);
    }

    @Override
    public void matmul(float[] x, int n, float[] y) {
        byte[] xq = new byte[n * in];
        for (int i = 0; i < xq.length; i++) xq[i] = quantizeInput(x[i]);
        compute.pool().forRange(out, (long) n * in, (worker, start, end) -> {
            for (int r = start; r < end; r++) {
                float dequant = inputScale * scales[r];
                for (int i = 0; i < n; i++) y[i * out + r] = dot.dot(xq, i * in, codes, r * in, in) * dequant;
            }
        });
    }
}
