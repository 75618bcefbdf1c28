package jquant.quantize;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A bit allocation: the requested average budget and the per-channel widths of every tensor it
 * covers, in allocation order. Written and read by {@link BitPlanJson}.
 *
 * @param budget    the requested average bits per weight over all tensors, in [1, 8]
 * @param smoothing the rule that made the smoothing factors the tensors' α belong to, null when no
 *                  tensor has an α (allocated on the raw weights)
 * @param model     the model the plan was allocated for, or null if unknown (plans written before it was recorded)
 */
public record BitPlan(double budget, List<TensorPlan> tensors, SmoothingRule smoothing, ModelId model) {

    /**
     * Which model a plan belongs to.
     *
     * @param fingerprint calibration's model fingerprint (64 hex digits)
     * @param name        the model's file or folder name, for messages
     */
    public record ModelId(String fingerprint, String name) {
        public ModelId {
            if (fingerprint == null || !fingerprint.matches("[0-9a-f]{64}")) throw new IllegalArgumentException("model fingerprint must be 64 hex digits, got " + fingerprint);
            if (name == null) throw new IllegalArgumentException("no model name");
        }
    }

    /** A plan for no recorded model whose α, if any, are EdgeFlow's (what every plan before SmoothQuant's rule meant). */
    public BitPlan(double budget, List<TensorPlan> tensors) {
        this(budget, tensors, edgeFlowIfAnyAlpha(tensors), null);
    }

    /** A plan that does not say which model it is for. */
    public BitPlan(double budget, List<TensorPlan> tensors, SmoothingRule smoothing) {
        this(budget, tensors, smoothing, null);
    }

    private static SmoothingRule edgeFlowIfAnyAlpha(List<TensorPlan> tensors) {
        return tensors.stream().anyMatch(t -> t.alpha() != null) ? SmoothingRule.EDGEFLOW : null;
    }

    public BitPlan {
        checkBudget(budget);
        tensors = List.copyOf(tensors);
        if (tensors.isEmpty()) throw new IllegalArgumentException("a bit plan needs at least one tensor");
        Set<String> names = new HashSet<>();
        for (TensorPlan t : tensors) {
            if (!names.add(t.name())) throw new IllegalArgumentException("tensor " + t.name() + " appears twice in the plan");
        }
        if ((smoothing == null) != tensors.stream().allMatch(t -> t.alpha() == null)) {
            throw new IllegalArgumentException(smoothing == null ? "the plan's tensors have α but no smoothing rule"
                    : "the plan names smoothing rule " + smoothing.label() + " but no tensor has an α");
        }
    }

    /**
     * {@code budget}, if it is an average the allocator can meet: in [1, 8] bits per weight, the range of
     * a channel's width (the one place every stage and option checks it).
     *
     * @throws IllegalArgumentException otherwise, NaN included
     */
    public static double checkBudget(double budget) {
        if (!isBudget(budget)) {
            throw new IllegalArgumentException("budget " + budget + " bits per weight is outside [" + QuantLimits.MIN_BITS + ", "
                    + QuantLimits.MAX_BITS + "]");
        }
        return budget;
    }

    /** Whether {@code budget} is in [1, 8] bits per weight (false for NaN). */
    public static boolean isBudget(double budget) {
        return budget >= QuantLimits.MIN_BITS && budget <= QuantLimits.MAX_BITS;
    }

    public long weights() {
        return tensors.stream().mapToLong(TensorPlan::weights).sum();
    }

    /** Achieved average bits per weight over all tensors (channels weighted by their length). */
    public double averageBits() {
        long bits = 0;
        for (TensorPlan t : tensors) bits += t.totalChannelBits() * t.cols();
        return (double) bits / weights();
    }

    public TensorPlan tensor(String name) {
        return tensors.stream().filter(t -> t.name().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no tensor " + name + " in the plan"));
    }

    /** This plan with one tensor's alpha set (calibration fills these in after allocation). */
    public BitPlan withAlpha(String name, Double alpha) {
        tensor(name);
        List<TensorPlan> changed = tensors.stream().map(t -> t.name().equals(name) ? t.withAlpha(alpha) : t).toList();
        return new BitPlan(budget, changed, smoothing == null ? edgeFlowIfAnyAlpha(changed) : smoothing, model);
    }

    /** This plan, recorded as allocated for {@code model}. */
    public BitPlan withModel(ModelId model) {
        return new BitPlan(budget, tensors, smoothing, model);
    }
}
