package jquant.formats.safetensors;

import jquant.formats.TensorKind;

/** Hugging Face {@code LlamaForCausalLM} / {@code Qwen2ForCausalLM} parameter names for each canonical tensor role. */
public final class HfNames {
    private HfNames() {}

    public static String of(TensorKind kind, int layer) {
        String block = "model.layers." + layer + ".";
        return switch (kind) {
            case EMBEDDING -> "model.embed_tokens.weight";
            case ATTN_NORM -> block + "input_layernorm.weight";
            case WQ -> block + "self_attn.q_proj.weight";
            case WK -> block + "self_attn.k_proj.weight";
            case WV -> block + "self_attn.v_proj.weight";
            case Q_BIAS -> block + "self_attn.q_proj.bias";
            case K_BIAS -> block + "self_attn.k_proj.bias";
            case V_BIAS -> block + "self_attn.v_proj.bias";
            case WO -> block + "self_attn.o_proj.weight";
            case FFN_NORM -> block + "post_attention_layernorm.weight";
            case W_GATE -> block + "mlp.gate_proj.weight";
            case W_UP -> block + "mlp.up_proj.weight";
            case W_DOWN -> block + "mlp.down_proj.weight";
            case FINAL_NORM -> "model.norm.weight";
            case HEAD -> "lm_head.weight";
        };
    }
}
