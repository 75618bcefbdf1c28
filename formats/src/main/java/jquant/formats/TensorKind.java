package jquant.formats;

/**
 * The canonical roles of a Llama-family model's tensors. Every reader maps its own names onto these,
 * so the rest of jquant never sees "model.layers.3.mlp.up_proj.weight" vs "blk.3.ffn_up" vs a
 * llama2.c offset. {@link #canonicalName(int)} gives the name jquant prints and writes,
 * {@link #ggufName(int)} llama.cpp's tensor name.
 *
 * <p>The three bias vectors exist only in architectures that have them ({@link #presentIn}).
 */
public enum TensorKind {
    EMBEDDING("token_embd", false),
    ATTN_NORM("attn_norm", true),
    WQ("attn_q", true),
    WK("attn_k", true),
    WV("attn_v", true),
    WO("attn_output", true),
    FFN_NORM("ffn_norm", true),
    W_GATE("ffn_gate", true),
    W_UP("ffn_up", true),
    W_DOWN("ffn_down", true),
    FINAL_NORM("output_norm", false),
    HEAD("output", false),
    // last, so that the kinds before keep their ordinals (seeds of the synthetic models are derived from them)
    Q_BIAS("attn_q.bias", true),
    K_BIAS("attn_k.bias", true),
    V_BIAS("attn_v.bias", true);

    private final String shortName;
    private final boolean perLayer;

    TensorKind(String shortName, boolean perLayer) {
        this.shortName = shortName;
        this.perLayer = perLayer;
    }

    public boolean perLayer() { return perLayer; }

    /** True for the seven matrices inside a block that a linear layer multiplies by. */
    public boolean isBlockLinear() {
        return this == WQ || this == WK || this == WV || this == WO || this == W_GATE || this == W_UP || this == W_DOWN;
    }

    /** True for the q/k/v bias vectors. */
    public boolean isBias() {
        return this == Q_BIAS || this == K_BIAS || this == V_BIAS;
    }

    /** Whether a model of config {@code c} has a tensor of this kind (the classifier counts, tied or not). */
    public boolean presentIn(ModelConfig c) {
        return !isBias() || c.architecture().qkvBias();
    }

    /**
     * GGUF-style canonical name: {@code blk.3.ffn_up} for per-layer kinds, {@code token_embd} otherwise;
     * a bias keeps its suffix ({@code blk.3.attn_q.bias}).
     */
    public String canonicalName(int layer) {
        return perLayer ? "blk." + layer + "." + shortName : shortName;
    }

    /** llama.cpp's tensor name: {@code blk.3.ffn_up.weight}, {@code blk.3.attn_q.bias}. */
    public String ggufName(int layer) {
        return isBias() ? canonicalName(layer) : canonicalName(layer) + ".weight";
    }
}
