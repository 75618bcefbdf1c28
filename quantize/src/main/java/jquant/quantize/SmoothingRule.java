package jquant.quantize;

/**
 * How the per-input-channel smoothing factors {@code f_j} of a group are made from its calibration
 * statistics, before W' = W·diag(f) is quantized (a plan records the rule its α belong to).
 * Both move the same output factor S_O^β into the channel scales, the NPU adaptation the EdgeFlow
 * paper gives every method it compares.
 */
public enum SmoothingRule {
    /** The EdgeFlow paper's NPU-aware smoothing: {@code f_j = S_I[j]^α}. */
    EDGEFLOW,
    /**
     * SmoothQuant (Xiao et al.): {@code f_j = S_I[j]^α / max_i |W[i, j]|^(1−α)}, the migration strength α
     * shared by the group; the EdgeFlow paper's baseline uses α = 0.5.
     */
    SMOOTHQUANT;

    /** {@code edgeflow}, {@code smoothquant}: the spelling plans and the command line use. */
    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    public static SmoothingRule of(String label) {
        for (SmoothingRule r : values()) if (r.label().equals(label)) return r;
        throw new IllegalArgumentException("smoothing rule \"" + label + "\" is not one of edgeflow, smoothquant");
    }
}
