package jquant.pipeline;

import jquant.calibration.CalibrationStats;
import jquant.calibration.allocation.BitAllocation;
import jquant.calibration.allocation.SmoothingChoice;
import jquant.quantize.Rounding;
import jquant.quantize.SmoothingRule;

import java.util.Locale;

/**
 * The quantization methods {@code jquant sweep} compares, each a choice of widths, smoothing and
 * rounding for the same NPU-legal file (per-channel symmetric weights, per-tensor static int8
 * activations):
 *
 * <pre>
 *  method        widths                           smoothing                            rounding
 *  uniform       every channel at the budget      none (α = 0: output factors only)    to nearest
 *  smoothquant   every channel at the budget      SmoothQuant's rule, α = 0.5          to nearest
 *  edgeflow      EdgeFlow's Algorithm 1           EdgeFlow's, α searched per budget    to nearest
 *  ours          Algorithm 1, output-weighted,    EdgeFlow's, α searched per budget    GPTQ (error-compensated)
 *                one budget over the blocks,
 *                each block matrix weighed by
 *                its loss sensitivity
 * </pre>
 * Ours allocates on each channel's share of its layer's output energy with one budget shared by the
 * block matrices ({@link BitAllocation.Options#outputWeighted}, {@link BitAllocation.Scope#MODEL}),
 * which lowered the mean KL divergence against the paper's per-tensor allocation with the same
 * rounding, and weighs each block matrix by its loss sensitivity measured on the calibration text
 * ({@link BitAllocation.Sensitivity}), which lowered it by another 10–18 % (bench/RESULTS.md).
 * SmoothQuant and the per-channel baseline get the NPU output smoothing (S_O into the channel
 * scales) as the EdgeFlow paper's baselines do; without it their outputs could not be int8 per tensor.
 */
public enum QuantizationMethod {
    UNIFORM(BitAllocation.Widths.UNIFORM, BitAllocation.Scope.TENSOR, false, SmoothingChoice.fixed(SmoothingRule.EDGEFLOW, 0f), Rounding.RTN, false,
            "every channel at the budget; no input smoothing (alpha 0); round to nearest"),
    SMOOTHQUANT(BitAllocation.Widths.UNIFORM, BitAllocation.Scope.TENSOR, false, SmoothingChoice.fixed(SmoothingRule.SMOOTHQUANT, 0.5f), Rounding.RTN, false,
            "every channel at the budget; SmoothQuant, alpha 0.5; round to nearest"),
    EDGEFLOW(BitAllocation.Widths.GREEDY, BitAllocation.Scope.TENSOR, false, SmoothingChoice.searched(), Rounding.RTN, false,
            "Algorithm 1 per tensor; EdgeFlow, alpha and input clip searched; round to nearest"),
    OURS(BitAllocation.Widths.GREEDY, BitAllocation.Scope.MODEL, true, SmoothingChoice.searched(), Rounding.GPTQ, true,
            "Algorithm 1 over the blocks, output-weighted, loss sensitivity (3-bit probe, 128 tokens); EdgeFlow, alpha and input clip "
                    + "searched; GPTQ, columns by decreasing E[x^2]");

    private final BitAllocation.Widths widths;
    private final BitAllocation.Scope scope;
    private final boolean outputWeighted;
    private final SmoothingChoice smoothing;
    private final Rounding rounding;
    private final boolean lossSensitive;
    private final String recipe;

    QuantizationMethod(BitAllocation.Widths widths, BitAllocation.Scope scope, boolean outputWeighted, SmoothingChoice smoothing, Rounding rounding,
                       boolean lossSensitive, String recipe) {
        this.widths = widths;
        this.scope = scope;
        this.outputWeighted = outputWeighted;
        this.smoothing = smoothing;
        this.rounding = rounding;
        this.lossSensitive = lossSensitive;
        this.recipe = recipe;
    }

    /** How this method allocates a plan at {@code budget} (the paper's APPROX metric), but for the loss sensitivity, which needs calibration's sample. */
    public BitAllocation.Options allocation(double budget) {
        return BitAllocation.Options.budget(budget).scope(scope).outputWeighted(outputWeighted).widths(widths).smoothing(smoothing);
    }

    /**
     * How this method allocates a plan at {@code budget}, its loss sensitivity (if it uses one) probed on the sample of the
     * calibration text {@code stats} recorded, as {@code jquant allocate}'s default probes it.
     *
     * @throws IllegalArgumentException if the method needs the sample and the stats have none ({@link CalibrationStats#hasProbeTokens})
     */
    public BitAllocation.Options allocation(double budget, CalibrationStats stats) {
        if (!lossSensitive) return allocation(budget);
        int sample = stats.hasProbeTokens() ? stats.probeTokens().length : 0;
        return BitAllocation.Options.best(allocation(budget), stats, Math.min(BitAllocation.Sensitivity.DEFAULT_TOKENS, sample));
    }

    /** Whether the method weighs tensors by the loss probe, which runs calibration's recorded sample. */
    public boolean lossSensitive() { return lossSensitive; }

    public Rounding rounding() { return rounding; }

    /** Whether the method needs E[x·xᵀ] from calibration. */
    public boolean needsSecondMoments() { return rounding.compensated(); }

    /** Whether the method needs α searched for its budgets. */
    public boolean searchesAlpha() { return smoothing.alpha() == null; }

    /**
     * What the method does, in words: recorded in a sweep's manifest, so that a sweep folder whose packs were
     * made by an older recipe is not resumed beside new ones. Changed whenever the method's result changes.
     */
    public String recipe() { return recipe; }

    /** {@code uniform}, {@code smoothquant}, {@code edgeflow}, {@code ours}. */
    public String label() { return name().toLowerCase(Locale.ROOT); }
}
