package jquant.calibration;

import jquant.formats.TensorKind;
import jquant.quantize.QuantLimits;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

/**
 * Activation statistics of one model on one calibration text: per group input statistics and
 * chosen α ({@link GroupStats}), per linear layer S_O (max |o| per output channel), and the
 * {@link ModelFingerprint} of the model they belong to. Stored by {@link CalibrationStatsFile}.
 *
 * @param fingerprint   {@link ModelFingerprint#of} the calibrated model
 * @param model         the calibrated checkpoint's file name, for display
 * @param tokens        calibration tokens the model ran
 * @param sampleTokens  input rows per group the α search used (a seeded random subsample)
 * @param referenceBits the uniform weight width the α search quantized at
 * @param groups        every group of the model, in forward order
 * @param outputMax     S_O per linear layer, keyed by {@link #tensorName}
 */
public record CalibrationStats(String fingerprint, String model, int tokens, int sampleTokens, int referenceBits,
                               List<GroupStats> groups, SequencedMap<String, float[]> outputMax) {

    /** β of the paper: output factors are S_O^β; fixed at 1 (all output variance moves into the weights). */
    public static final float BETA = 1f;

    public CalibrationStats {
        if (tokens <= 0) throw new IllegalArgumentException("calibration ran " + tokens + " tokens");
        if (!QuantLimits.isBitWidth(referenceBits)) throw new IllegalArgumentException("reference bit width " + referenceBits + " outside " + QuantLimits.BIT_RANGE);
        groups = List.copyOf(groups);
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

    /** S_O of one linear layer (a copy). */
    public float[] outputMax(TensorKind kind, int layer) {
        float[] v = outputMax.get(tensorName(kind, layer));
        if (v == null) throw new IllegalArgumentException("calibration stats have no " + tensorName(kind, layer));
        return v.clone();
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof CalibrationStats s) || !fingerprint.equals(s.fingerprint) || !model.equals(s.model) || tokens != s.tokens
                || sampleTokens != s.sampleTokens || referenceBits != s.referenceBits || !groups.equals(s.groups)
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
