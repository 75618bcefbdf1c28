package jquant.runtime;

import jquant.formats.weightlet.PackedTensor;

/**
 * A linear layer as an NPU runs a W{B}A8 matmul (EdgeFlow §4.1), from the packed bytes: the int8
 * weight codes of a B-bit channel (B ≤ 8, unpacked per group of four channels into an L1 buffer as
 * in {@link WeightletWeights}), a per-channel scale, and a static per-tensor activation scale from
 * calibration. With smoothing, x is already the smoothed input x / f (the folded norm or producer
 * outputs it) and s_x is its scale, max |x / f| / 127. For each token row x:
 * <pre>
 *   s_x   = inputScale                                        (static, per tensor)
 *   x_q   = clamp(round(x / s_x), −127, 127)                  (int8; round half up)
 *   acc_r = Σ_k x_q[k] · w_q[r][k]                            (int8 × int8 → integer, exact)
 *   y_r   = acc_r · (s_x · scale_r)                           (per-channel dequantization; the
 *                                                              smoothing output factor S_O is already
 *                                                              folded into scale_r by pack)
 * </pre>
 * Inputs beyond the calibrated range saturate, as they do on the NPU.
 *
 * <p>The integer products run on the float kernels, exactly: codes and activations are integers of
 * at most 127 in magnitude, so each fused multiply-add of a chain adds an integer below 2^14 to an
 * integer sum, exact while the sum stays below 2^24; {@link RowMajorWeights} moves each lane's sum to
 * a {@code long} every {@value RowMajorWeights#K_CHUNK} columns, long before that. The result is the
 * int32 accumulation an NPU performs, bit for bit, at the speed of the float kernels (the Vector API
 * has no int8 dot-product instruction).
 */
public final class NpuInt8Weights extends WeightletWeights {
    private final float inputScale;

    /** @param inputScale the static int8 scale of this layer's input (its calibrated range / 127) */
    public NpuInt8Weights(String name, PackedTensor packed, float[] scales, float inputScale, Compute compute) {
        super(name, packed, scales, compute);
        if (!(inputScale > 0) || !Float.isFinite(inputScale)) {
            throw new IllegalArgumentException(name + ": activation scale " + inputScale + " must be finite and > 0");
        }
        this.inputScale = inputScale;
    }

    /** The static activation scale. */
    float inputScale() {
        return inputScale;
    }

    /** The int8 activation code of {@code x} under this layer's static scale. */
    byte quantizeInput(float x) {
        return (byte) Math.clamp(Math.round(x / inputScale), -127, 127);
    }

    @Override
    boolean exactIntegers() {
        return true;
    }

    @Override
    float[] prepare(float[] x, int n, Scratch s) {
        float[] q = s.input(n * in);
        for (int i = 0; i < n * in; i++) q[i] = quantizeInput(x[i]);
        return q;
    }

    @Override
    float output(int r, long dot) {
        return dot * (inputScale * scales[r]);
    }
}
