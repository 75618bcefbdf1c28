package jquant.quantize;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A bit allocation: the requested average budget and the per-channel widths of every tensor it
 * covers, in allocation order. Written and read by {@link BitPlanJson}.
 *
 * @param budget the requested average bits per weight over all tensors, in [1, 8]
 */
public record BitPlan(double budget, List<TensorPlan> tensors) {

    public BitPlan {
        if (!QuantLimits.isBudget(budget)) {
            throw new IllegalArgumentException("budget " + budget + " outside " + QuantLimits.BUDGET_RANGE);
        }
        tensors = List.copyOf(tensors);
        if (tensors.isEmpty()) throw new IllegalArgumentException("a bit plan needs at least one tensor");
        Set<String> names = new HashSet<>();
        for (TensorPlan t : tensors) {
            if (!names.add(t.name())) throw new IllegalArgumentException("tensor " + t.name() + " appears twice in the plan");
        }
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
        return new BitPlan(budget, tensors.stream().map(t -> t.name().equals(name) ? t.withAlpha(alpha) : t).toList());
    }
}
