package jquant.calibration;

import jquant.formats.TensorKind;

import java.util.List;

/**
 * Linear layers that read one and the same input, so they share one input smoothing factor
 * {@code S_I^α} (one α), and where that factor folds at no run-time cost:
 *
 * <pre>
 *  group          members            input                         fold of 1/S_I^α
 *  ATTN_QKV       q, k, v            attn_norm(x)                  attn_norm weight
 *  ATTN_OUTPUT    o                  attention output              rows of v (kv channel, tied over the query heads sharing it)
 *  FFN_GATE_UP    gate, up           ffn_norm(x)                   ffn_norm weight
 *  FFN_DOWN       down               silu(gate)·up                 rows of up
 *  HEAD           classifier         output_norm(x)                output_norm weight
 * </pre>
 */
public enum LinearGroup {
    ATTN_QKV("attn_qkv", true, List.of(TensorKind.WQ, TensorKind.WK, TensorKind.WV), TensorKind.ATTN_NORM),
    ATTN_OUTPUT("attn_output", true, List.of(TensorKind.WO), TensorKind.WV),
    FFN_GATE_UP("ffn_gate_up", true, List.of(TensorKind.W_GATE, TensorKind.W_UP), TensorKind.FFN_NORM),
    FFN_DOWN("ffn_down", true, List.of(TensorKind.W_DOWN), TensorKind.W_UP),
    HEAD("output", false, List.of(TensorKind.HEAD), TensorKind.FINAL_NORM);

    private final String shortName;
    private final boolean perLayer;
    private final List<TensorKind> members;
    private final TensorKind foldTarget;

    LinearGroup(String shortName, boolean perLayer, List<TensorKind> members, TensorKind foldTarget) {
        this.shortName = shortName;
        this.perLayer = perLayer;
        this.members = members;
        this.foldTarget = foldTarget;
    }

    public boolean perLayer() { return perLayer; }

    /** The linear layers that read this group's input, in forward order (the first one records it). */
    public List<TensorKind> members() { return members; }

    /** The norm whose weight, or the projection whose rows, absorb 1/S_I^α. */
    public TensorKind foldTarget() { return foldTarget; }

    /** Whether the fold target is a norm vector (otherwise it is the rows of a projection). */
    public boolean foldsIntoNorm() {
        return foldTarget == TensorKind.ATTN_NORM || foldTarget == TensorKind.FFN_NORM || foldTarget == TensorKind.FINAL_NORM;
    }

    /** {@code blk.3.attn_qkv} for per-layer groups, {@code output} for the classifier. */
    public String canonicalName(int layer) {
        return perLayer ? "blk." + layer + "." + shortName : shortName;
    }

    /** The group whose members include {@code kind}. */
    public static LinearGroup of(TensorKind kind) {
        for (LinearGroup g : values()) {
            if (g.members.contains(kind)) return g;
        }
        throw new IllegalArgumentException(kind + " is not a linear layer");
    }

    /** Instances of this group in a model of {@code layers} blocks. */
    public int count(int layers) {
        return perLayer ? layers : 1;
    }
}
