package jquant.calibration;

import jquant.formats.Checkpoint;
import jquant.formats.TensorKind;
import jquant.quantize.BitPlan;
import jquant.quantize.TensorPlan;
import jquant.quantize.SmoothingRule;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Entry point of NPU-aware smoothing: a checkpoint, its calibration stats and an α per group (and the
 * rule that turns them into factors) give a {@link SmoothedModel}.
 */
public final class Smoothing {

    private Smoothing() {}

    /**
     * The smoothed view of {@code checkpoint}, α per group from {@code alphas} (keyed by group name).
     *
     * @throws IllegalArgumentException if {@code stats} were measured on another model (fingerprints differ)
     */
    public static SmoothedModel apply(Checkpoint checkpoint, CalibrationStats stats, SmoothingRule rule, Map<String, Float> alphas) {
        Map<String, Float> full = new LinkedHashMap<>();
        for (GroupStats g : stats.groups()) full.put(g.name(), 1f);
        return apply(checkpoint, stats, rule, alphas, full);
    }

    /** The same, with each group's static input range clipped to {@code inputClips} of its maximum (keyed by group name). */
    public static SmoothedModel apply(Checkpoint checkpoint, CalibrationStats stats, SmoothingRule rule, Map<String, Float> alphas,
                                      Map<String, Float> inputClips) {
        checkBelongs(checkpoint, stats);
        return new SmoothedModel(checkpoint, stats, rule, alphas, inputClips);
    }

    /** EdgeFlow's smoothing with the α calibration searched for {@code budget}. */
    public static SmoothedModel searched(Checkpoint checkpoint, CalibrationStats stats, double budget) {
        return apply(checkpoint, stats, SmoothingRule.EDGEFLOW, stats.alphas(budget), stats.inputClips(budget));
    }

    /**
     * The smoothing a plan was allocated on: its rule, its tensors' α and input clips (every member of a
     * group must carry the group's, and every group must be in the plan; a plan without clips has the full range).
     */
    public static SmoothedModel forPlan(Checkpoint checkpoint, CalibrationStats stats, BitPlan plan) {
        if (plan.smoothing() == null) {
            throw new IllegalArgumentException("the plan was allocated on the raw weights (no α): pack it without calibration stats, "
                    + "or allocate it with --stats");
        }
        Map<String, Float> alphas = new LinkedHashMap<>(), clips = new LinkedHashMap<>();
        for (GroupStats g : stats.groups()) {
            for (TensorKind kind : g.group().members()) {
                String name = CalibrationStats.tensorName(kind, g.layer());
                if (plan.wholeFile() != null && plan.wholeFile().float16().contains(kind.canonicalName(g.layer()))) {
                    // kept in float16 by a whole-file plan: packed from the source as it is, so its group is not smoothed
                    alphas.put(g.name(), 0f);
                    clips.put(g.name(), 1f);
                    continue;
                }
                TensorPlan t = plan.tensors().stream().filter(p -> p.name().equals(name)).findFirst()
                        .orElseThrow(() -> new IllegalArgumentException("the plan has no entry for " + name));
                if (t.alpha() == null) throw new IllegalArgumentException("the plan's " + name + " has no α");
                Float previous = alphas.putIfAbsent(g.name(), t.alpha().floatValue());
                if (previous != null && previous != t.alpha().floatValue()) {
                    throw new IllegalArgumentException("the plan gives the members of " + g.name() + " different α (" + previous + " and " + t.alpha() + ")");
                }
                float clip = t.inputClip() == null ? 1f : t.inputClip().floatValue();
                Float previousClip = clips.putIfAbsent(g.name(), clip);
                if (previousClip != null && previousClip != clip) {
                    throw new IllegalArgumentException("the plan gives the members of " + g.name() + " different input clips (" + previousClip + " and " + clip + ")");
                }
            }
        }
        return apply(checkpoint, stats, plan.smoothing(), alphas, clips);
    }

    /** Refuses stats whose {@link ModelFingerprint} is not this checkpoint's. */
    public static void checkBelongs(Checkpoint checkpoint, CalibrationStats stats) {
        String fingerprint = ModelFingerprint.of(checkpoint);
        if (!fingerprint.equals(stats.fingerprint())) {
            throw new IllegalArgumentException("the calibration stats were measured on another model (" + stats.model() + ", fingerprint "
                    + stats.fingerprint().substring(0, 12) + "…), not on " + checkpoint.source().getFileName() + " (fingerprint "
                    + fingerprint.substring(0, 12) + "…)");
        }
        int layers = checkpoint.config().layers();
        for (LinearGroup g : LinearGroup.values()) {
            for (int l = 0; l < g.count(layers); l++) stats.group(g, l);
        }
    }
}
