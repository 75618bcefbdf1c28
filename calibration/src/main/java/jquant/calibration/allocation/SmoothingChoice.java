package jquant.calibration.allocation;

import jquant.calibration.CalibrationStats;
import jquant.calibration.GroupStats;
import jquant.quantize.SmoothingRule;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Which α every group gets when a plan is allocated with calibration stats: the α calibration searched
 * for the plan's budget (EdgeFlow's smoothing), or one fixed α for every group under a rule (α = 0 is
 * no smoothing; SmoothQuant's baseline is its own rule at α = 0.5).
 *
 * @param rule  how α becomes factors
 * @param alpha the fixed α, or null for the α searched for the budget
 */
public record SmoothingChoice(SmoothingRule rule, Float alpha) {

    public SmoothingChoice {
        if (alpha != null && !(alpha >= 0 && alpha <= 1)) throw new IllegalArgumentException("α " + alpha + " is outside [0, 1]");
        if (alpha == null && rule != SmoothingRule.EDGEFLOW) throw new IllegalArgumentException("calibration searches α for EdgeFlow's rule only; give " + rule.label() + " an α");
    }

    /** EdgeFlow's smoothing with the α searched for the budget. */
    public static SmoothingChoice searched() {
        return new SmoothingChoice(SmoothingRule.EDGEFLOW, null);
    }

    public static SmoothingChoice fixed(SmoothingRule rule, float alpha) {
        return new SmoothingChoice(rule, alpha);
    }

    /** α of every group for a plan at {@code budget}. */
    public Map<String, Float> alphas(CalibrationStats stats, double budget) {
        if (alpha == null) return stats.alphas(budget);
        Map<String, Float> fixed = new LinkedHashMap<>();
        for (GroupStats g : stats.groups()) fixed.put(g.name(), alpha);
        return fixed;
    }

    /** The static input clip of every group for a plan at {@code budget}: searched with the searched α, else 1 (the full range). */
    public Map<String, Float> inputClips(CalibrationStats stats, double budget) {
        if (alpha == null) return stats.inputClips(budget);
        Map<String, Float> full = new LinkedHashMap<>();
        for (GroupStats g : stats.groups()) full.put(g.name(), 1f);
        return full;
    }

    /** {@code searched}, {@code edgeflow α 0}, {@code smoothquant α 0.5}. */
    public String describe() {
        return alpha == null ? "α searched for the budget" : rule.label() + " α " + alpha;
    }
}
