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
 * @param wholeFile with a budget over the whole file's tensors, what it counted; null when the budget is the
 *                  planned tensors' average width (the paper's budget)
 */
public record BitPlan(double budget, List<TensorPlan> tensors, SmoothingRule smoothing, ModelId model, WholeFile wholeFile) {

    /**
     * A budget counted as llama.cpp counts bits per weight: every byte of the file's tensors (weightlets
     * with their scales and widths, float16 tensors, float32 norms), times 8, over every weight of the
     * model. The plan then covers the embedding and the classifier too, unless they are kept in float16.
     *
     * @param weights the model's weights, every tensor of the source counted once
     * @param bytes   the bytes of the packed tensors the allocation counted (at most budget · weights / 8)
     * @param float16 canonical names of the tensors the allocation keeps in float16 ({@code token_embd},
     *                {@code output}), which the plan then does not list
     */
    public record WholeFile(long weights, long bytes, List<String> float16) {
        public WholeFile {
            if (weights <= 0 || bytes <= 0) throw new IllegalArgumentException("a whole-file budget needs positive weights and bytes, not " + weights + " and " + bytes);
            float16 = List.copyOf(float16);
        }

        /** Bits per weight of the file's tensors, as llama.cpp prints them. */
        public double bitsPerWeight() {
            return 8.0 * bytes / weights;
        }
    }

    /** A plan whose budget is the planned tensors' average width. */
    public BitPlan(double budget, List<TensorPlan> tensors, SmoothingRule smoothing, ModelId model) {
        this(budget, tensors, smoothing, model, null);
    }

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
        if (wholeFile == null) checkBudget(budget);
        else checkFileBudget(budget);
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

    /** The largest whole-file budget: every tensor in float16 is 16 bits a weight, the norms' few weights aside. */
    public static final int MAX_FILE_BITS = 16;

    /**
     * {@code budget}, if it can be a whole-file budget ({@link WholeFile}): in [1, {@value #MAX_FILE_BITS}] bits per
     * weight (whether the file's fixed bytes fit under it, the allocator says).
     *
     * @throws IllegalArgumentException otherwise, NaN included
     */
    public static double checkFileBudget(double budget) {
        if (!(budget >= QuantLimits.MIN_BITS && budget <= MAX_FILE_BITS)) {
            throw new IllegalArgumentException("whole-file budget " + budget + " bits per weight is outside [" + QuantLimits.MIN_BITS + ", " + MAX_FILE_BITS + "]");
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
        return new BitPlan(budget, changed, smoothing == null ? edgeFlowIfAnyAlpha(changed) : smoothing, model, wholeFile);
    }

    /** This plan, recorded as allocated for {@code model}. */
    public BitPlan withModel(ModelId model) {
        return new BitPlan(budget, tensors, smoothing, model, wholeFile);
    }
}
