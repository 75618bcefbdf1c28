package jquant.calibration;

import java.util.Arrays;

/**
 * What calibration measured at one group's input (see {@link LinearGroup}) and the smoothing
 * strength it chose there.
 *
 * @param inputMax        S_I: per input channel, max |x| over every calibration token
 * @param inputMeanSquare E[x²] per input channel over every calibration token (llama.cpp's imatrix signal)
 * @param alpha           the smoothing exponent α ∈ [0, 1] the search chose
 * @param alphaError      the group's quantized-matmul output error at {@code alpha} (see {@link AlphaSearch})
 * @param unsmoothedError the same error at α = 0 (no smoothing), for comparison
 */
public record GroupStats(LinearGroup group, int layer, float[] inputMax, float[] inputMeanSquare,
                         float alpha, double alphaError, double unsmoothedError) {

    public GroupStats {
        String name = group.canonicalName(layer);
        if (inputMax.length != inputMeanSquare.length) {
            throw new IllegalArgumentException(name + ": " + inputMax.length + " channel maxima but " + inputMeanSquare.length + " mean squares");
        }
        for (int j = 0; j < inputMax.length; j++) {
            if (!Float.isFinite(inputMax[j]) || inputMax[j] < 0 || !Float.isFinite(inputMeanSquare[j]) || inputMeanSquare[j] < 0) {
                throw new IllegalArgumentException(name + ": input channel " + j + " has max |x| " + inputMax[j] + " and E[x²] "
                        + inputMeanSquare[j] + " (both must be finite and ≥ 0)");
            }
        }
        if (!(alpha >= 0 && alpha <= 1)) throw new IllegalArgumentException(name + ": alpha " + alpha + " outside [0, 1]");
        inputMax = inputMax.clone();
        inputMeanSquare = inputMeanSquare.clone();
    }

    public String name() { return group.canonicalName(layer); }

    public int channels() { return inputMax.length; }

    @Override
    public float[] inputMax() { return inputMax.clone(); }

    @Override
    public float[] inputMeanSquare() { return inputMeanSquare.clone(); }

    /** max |x| over the whole input tensor: the static per-tensor int8 range before smoothing. */
    public float inputRange() {
        float max = 0;
        for (float v : inputMax) max = Math.max(max, v);
        return max;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GroupStats g && group == g.group && layer == g.layer && Arrays.equals(inputMax, g.inputMax)
                && Arrays.equals(inputMeanSquare, g.inputMeanSquare) && Float.compare(alpha, g.alpha) == 0
                && Double.compare(alphaError, g.alphaError) == 0 && Double.compare(unsmoothedError, g.unsmoothedError) == 0;
    }

    @Override
    public int hashCode() {
        return (group.hashCode() * 31 + layer) * 31 + Arrays.hashCode(inputMax);
    }

    @Override
    public String toString() {
        return "GroupStats[" + name() + ", " + channels() + " channels, alpha " + alpha + "]";
    }
}
