package jquant.calibration;

import jquant.formats.TensorKind;
import jquant.quantize.BitPlan;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

/**
 * Activation statistics of one model on one calibration text: per group input statistics and the α
 * chosen for each budget ({@link GroupStats}), per linear layer S_O (max |o| per output channel), and
 * the {@link ModelFingerprint} of the model they belong to. Stored by {@link CalibrationStatsFile}.
 *
 * @param fingerprint  {@link ModelFingerprint#of} the calibrated model
 * @param model        the calibrated checkpoint's file name, for display
 * @param tokens       calibration tokens the model ran
 * @param sampleTokens input rows per group the α search used (a seeded random subsample)
 * @param budgets      the bit budgets α was searched for, ascending; every group has one α per budget
 * @param groups       every group of the model, in forward order
 * @param outputMax    S_O per linear layer, keyed by {@link #tensorName}
 * @param probeTokens  the first {@link #PROBE_TOKENS} (at most) token ids of the calibration text, which allocate's loss probe
 *                     runs by default; null in files written before they were recorded
 * @param source       the stats file they were read from: E[x·xᵀ] stays there until asked for, and a packed file
 *                     names its stats by that file's SHA-256 ({@link StatsSmoothing})
 */
public record CalibrationStats(String fingerprint, String model, int tokens, int sampleTokens, List<Double> budgets,
                               List<GroupStats> groups, SequencedMap<String, float[]> outputMax, int[] probeTokens, Path source) {

    /** β of the paper: output factors are S_O^β; fixed at 1 (all output variance moves into the weights). */
    public static final float BETA = 1f;
    /** Calibration tokens kept for the loss probe: 4× the 128 it runs by default, which did as well as 512. */
    public static final int PROBE_TOKENS = 512;

    public CalibrationStats {
        if (tokens <= 0) throw new IllegalArgumentException("calibration ran " + tokens + " tokens");
        budgets = List.copyOf(budgets);
        for (int i = 0; i < budgets.size(); i++) {
            BitPlan.checkBudget(budgets.get(i));
            if (i > 0 && budgets.get(i) <= budgets.get(i - 1)) throw new IllegalArgumentException("budgets " + budgets + " are not ascending");
        }
        groups = List.copyOf(groups);
        for (GroupStats g : groups) {
            if (!g.alphas().stream().map(GroupStats.SearchedAlpha::budget).toList().equals(budgets)) {
                throw new IllegalArgumentException(g.name() + ": α searched for budgets " + g.alphas().stream().map(GroupStats.SearchedAlpha::budget).toList()
                        + ", not for the run's " + budgets);
            }
        }
        if (groups.stream().map(g -> g.secondMoment() != null).distinct().count() > 1) {
            throw new IllegalArgumentException("E[x·xᵀ] was recorded for some groups but not for others");
        }
        SequencedMap<String, float[]> copy = new LinkedHashMap<>();
        outputMax.forEach((name, v) -> {
            for (int i = 0; i < v.length; i++) {
                if (!Float.isFinite(v[i]) || v[i] < 0) {
                    throw new IllegalArgumentException(name + ": output channel " + i + " has max |o| " + v[i] + " (must be finite and ≥ 0)");
                }
            }
            copy.put(name, v.clone());
        });
        outputMax = java.util.Collections.unmodifiableSequencedMap(copy);
        if (probeTokens != null) {
            if (probeTokens.length < 2 || probeTokens.length > PROBE_TOKENS) {
                throw new IllegalArgumentException("the probe's sample has " + probeTokens.length + " tokens, not 2 … " + PROBE_TOKENS);
            }
            probeTokens = probeTokens.clone();
        }
    }

    /** Whether calibration recorded the loss probe's sample ({@link #probeTokens}). */
    public boolean hasProbeTokens() {
        return probeTokens != null;
    }

    /** The loss probe's sample, a copy; null when the file predates it. */
    @Override
    public int[] probeTokens() {
        return probeTokens == null ? null : probeTokens.clone();
    }

    /** The name S_O and plans use for a linear layer: {@code blk.3.attn_q.weight}, {@code output.weight}. */
    public static String tensorName(TensorKind kind, int layer) {
        return kind.canonicalName(layer) + ".weight";
    }

    public GroupStats group(LinearGroup group, int layer) {
        int l = group.perLayer() ? layer : 0;
        for (GroupStats g : groups) {
            if (g.group() == group && g.layer() == l) return g;
        }
        throw new IllegalArgumentException("calibration stats have no " + group.canonicalName(l));
    }

    /**
     * α of every group for {@code budget}, keyed by group name ({@code blk.0.attn_qkv}, …, {@code output}).
     *
     * @throws IllegalArgumentException if α was not searched for this budget
     */
    public Map<String, Float> alphas(double budget) {
        if (!budgets.contains(budget)) {
            throw new IllegalArgumentException("these calibration stats searched α for budgets " + budgetList(budgets) + ", not for " + budgetList(List.of(budget))
                    + ": calibrate again with --budgets including it, or fix α (--alpha)");
        }
        Map<String, Float> alphas = new LinkedHashMap<>();
        for (GroupStats g : groups) alphas.put(g.name(), g.alpha(budget).alpha());
        return alphas;
    }

    /** The static input clip searched with each group's α for {@code budget}, keyed by group name ({@link GroupStats.SearchedAlpha#inputClip}). */
    public Map<String, Float> inputClips(double budget) {
        alphas(budget);   // the same check of the budget
        Map<String, Float> clips = new LinkedHashMap<>();
        for (GroupStats g : groups) clips.put(g.name(), g.alpha(budget).inputClip());
        return clips;
    }

    /** Whether calibration recorded E[x·xᵀ] of every group, which GPTQ rounding needs. */
    public boolean hasSecondMoments() {
        return groups.getFirst().secondMoment() != null;
    }

    /** {@code 3, 4, 4.5}: budgets as a person writes them. */
    public static String budgetList(List<Double> budgets) {
        return String.join(", ", budgets.stream().map(b -> b == Math.rint(b) ? Long.toString(b.longValue()) : b.toString()).toList());
    }

    /** S_O of one linear layer (a copy). */
    public float[] outputMax(TensorKind kind, int layer) {
        float[] v = outputMax.get(tensorName(kind, layer));
        if (v == null) throw new IllegalArgumentException("calibration stats have no " + tensorName(kind, layer));
        return v.clone();
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof CalibrationStats s) || !fingerprint.equals(s.fingerprint) || !model.equals(s.model) || tokens != s.tokens
                || sampleTokens != s.sampleTokens || !budgets.equals(s.budgets) || !groups.equals(s.groups) || !Arrays.equals(probeTokens, s.probeTokens)
                || !new ArrayList<>(outputMax.keySet()).equals(new ArrayList<>(s.outputMax.keySet()))) {
            return false;
        }
        for (Map.Entry<String, float[]> e : outputMax.entrySet()) {
            if (!Arrays.equals(e.getValue(), s.outputMax.get(e.getKey()))) return false;
        }
        return true;
    }

    @Override
    public int hashCode() {
        return fingerprint.hashCode() * 31 + groups.hashCode();
    }

    @Override
    public String toString() {
        return "CalibrationStats[" + model + ", " + tokens + " tokens, " + groups.size() + " groups]";
    }
}
