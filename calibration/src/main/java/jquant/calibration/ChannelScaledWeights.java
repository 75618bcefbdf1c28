package jquant.calibration;

import jquant.runtime.LinearWeights;

/**
 * A linear layer followed by a per-output-channel scale, {@code o = (x · Wᵀ) · diag(s)}: how a
 * smoothed layer's output factor S_O^β is applied when it is not folded into a dequantization scale
 * (e.g. to run a {@link SmoothedModel} in float32).
 */
public final class ChannelScaledWeights implements LinearWeights {
    private final LinearWeights weights;
    private final float[] scales;

    public ChannelScaledWeights(LinearWeights weights, float[] scales) {
        if (scales.length != weights.outFeatures()) {
            throw new IllegalArgumentException(scales.length + " output scales for " + weights.outFeatures() + " output channels");
        }
        this.weights = weights;
        this.scales = scales.clone();
    }

    @Override
    public int inFeatures() { return weights.inFeatures(); }

    @Override
    public int outFeatures() { return weights.outFeatures(); }

    @Override
    public void matmul(float[] x, int n, float[] out) {
        weights.matmul(x, n, out);
        int c = scales.length;
        for (int t = 0; t < n; t++) {
            for (int i = 0; i < c; i++) out[t * c + i] *= scales[i];
        }
    }
}
