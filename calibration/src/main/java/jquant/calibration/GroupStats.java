package jquant.calibration;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * What calibration measured at one group's input (see {@link LinearGroup}) and the smoothing
 * strength it chose there for each bit budget.
 *
 * @param inputMax          S_I: per input channel, max |x| over every calibration token
 * @param inputMeanSquare   E[x²] per input channel over every calibration token (llama.cpp's imatrix signal)
 * @param alphas            the α the search chose for each budget it searched, in budget order ({@link AlphaSearch})
 * @param secondMoment      E[x·xᵀ] over every calibration token (what GPTQ rounding needs; read from the stats file
 *                          when asked), or null when calibration did not record it
 */
public record GroupStats(LinearGroup group, int layer, float[] inputMax, float[] inputMeanSquare, List<SearchedAlpha> alphas,
                         SecondMoment secondMoment) {

    /**
     * α of one budget.
     *
     * @param budget          average bits per weight the search quantized at (the widths allocation gives at that budget)
     * @param alpha           the smoothing exponent α ∈ [0, 1] the search chose
     * @param error           the group's quantized-matmul output error at {@code alpha} (see {@link AlphaSearch})
     * @param unsmoothedError the same error at α = 0 (no smoothing): never below {@code error}
     * @param inputClip       the static input range as a fraction of max |x / f| that gives the least error at
     *                        {@code alpha} (1: no clipping; files from before the search hold 1)
     */
    public record SearchedAlpha(double budget, float alpha, double error, double unsmoothedError, float inputClip) {
        public SearchedAlpha {
            if (!(inputClip > 0 && inputClip <= 1)) throw new IllegalArgumentException("input clip " + inputClip + " outside (0, 1]");
        }
    }

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
        for (SearchedAlpha a : alphas) {
            if (!(a.alpha() >= 0 && a.alpha() <= 1)) throw new IllegalArgumentException(name + ": alpha " + a.alpha() + " outside [0, 1]");
        }
        if (secondMoment != null && secondMoment.channels() != inputMax.length) {
            throw new IllegalArgumentException(name + ": E[x·xᵀ] has " + secondMoment.channels() + " channels, the input " + inputMax.length);
        }
        inputMax = inputMax.clone();
        inputMeanSquare = inputMeanSquare.clone();
        alphas = List.copyOf(alphas);
    }

    public String name() { return group.canonicalName(layer); }

    public int channels() { return inputMax.length; }

    @Override
    public float[] inputMax() { return inputMax.clone(); }

    @Override
    public float[] inputMeanSquare() { return inputMeanSquare.clone(); }

    /** The α searched for {@code budget}. */
    public SearchedAlpha alpha(double budget) {
        for (SearchedAlpha a : alphas) if (a.budget() == budget) return a;
        throw new IllegalArgumentException(name() + ": no α was searched for a budget of " + budget + " bits");
    }

    /** max |x| over the whole input tensor: the static per-tensor int8 range before smoothing. */
    public float inputRange() {
        float max = 0;
        for (float v : inputMax) max = Math.max(max, v);
        return max;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GroupStats g && group == g.group && layer == g.layer && Arrays.equals(inputMax, g.inputMax)
                && Arrays.equals(inputMeanSquare, g.inputMeanSquare) && alphas.equals(g.alphas)
                && SecondMoment.sameValues(secondMoment, g.secondMoment);
    }

    @Override
    public int hashCode() {
        return Objects.hash(group, layer, Arrays.hashCode(inputMax), alphas);
    }

    @Override
    public String toString() {
        return "GroupStats[" + name() + ", " + channels() + " channels, alphas " + alphas + "]";
    }
}
