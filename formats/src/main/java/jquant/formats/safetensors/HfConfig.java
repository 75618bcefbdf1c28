package jquant.formats.safetensors;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import jquant.formats.Architecture;
import jquant.formats.CheckpointException;
import jquant.formats.ModelConfig;
import jquant.formats.RopeScaling;

/**
 * Hugging Face {@code config.json} of a {@code LlamaForCausalLM} or {@code Qwen2ForCausalLM} → {@link ModelConfig}.
 *
 * <p>Required: {@code hidden_size, intermediate_size, num_attention_heads, num_hidden_layers, vocab_size,
 * max_position_embeddings, rms_norm_eps}. Defaults as transformers' LlamaConfig / Qwen2Config:
 * {@code num_key_value_heads} = heads, {@code rope_theta} = 10000, {@code tie_word_embeddings} = false,
 * {@code head_dim} = hidden_size / heads. {@code rope_scaling} of type {@code llama3} becomes
 * {@link RopeScaling#llama3} (Llama 3.1 / 3.2). Refused by name, because jquant's runtime would silently
 * compute something else: any other architecture, any other {@code rope_scaling} type, a
 * {@code hidden_act} other than silu, Llama attention or MLP biases, Qwen2's sliding-window attention.
 */
final class HfConfig {
    private HfConfig() {}

    static ModelConfig parse(Path file, JsonNode c) throws CheckpointException {
        if (c == null || !c.isObject()) throw new CheckpointException(file, "config is not a JSON object");
        Architecture arch = architecture(file, c);
        if (c.hasNonNull("hidden_act") && !c.get("hidden_act").asText().equals("silu")) {
            throw new CheckpointException(file, "hidden_act " + c.get("hidden_act") + " is not supported (silu only)");
        }
        if (arch == Architecture.LLAMA && (c.path("attention_bias").asBoolean(false) || c.path("mlp_bias").asBoolean(false))) {
            throw new CheckpointException(file, "attention/MLP biases are not supported for llama (Qwen2's q/k/v biases are)");
        }
        if (c.path("use_sliding_window").asBoolean(false)) {
            throw new CheckpointException(file, "use_sliding_window true is not supported (full attention only)");
        }
        int dim = intField(file, c, "hidden_size");
        int heads = intField(file, c, "num_attention_heads");
        int headDim = c.hasNonNull("head_dim") ? intField(file, c, "head_dim") : heads > 0 ? dim / heads : 0;
        if (!c.hasNonNull("head_dim") && heads > 0 && dim % heads != 0) {
            throw new CheckpointException(file, "hidden_size " + dim + " is not a multiple of num_attention_heads " + heads + " and there is no head_dim");
        }
        float theta = c.hasNonNull("rope_theta") ? floatField(file, c, "rope_theta") : 10000f;
        try {
            return new ModelConfig(arch, dim,
                    intField(file, c, "intermediate_size"),
                    intField(file, c, "num_hidden_layers"),
                    heads,
                    c.hasNonNull("num_key_value_heads") ? intField(file, c, "num_key_value_heads") : heads,
                    headDim,
                    intField(file, c, "vocab_size"),
                    intField(file, c, "max_position_embeddings"),
                    theta,
                    ropeScaling(file, c.path("rope_scaling"), theta, headDim),
                    floatField(file, c, "rms_norm_eps"),
                    c.path("tie_word_embeddings").asBoolean(false));
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file, "inconsistent hyper-parameters: " + e.getMessage(), e);
        }
    }

    /** From {@code architectures} (every entry) and {@code model_type}, which must agree. */
    private static Architecture architecture(Path file, JsonNode c) throws CheckpointException {
        Architecture arch = null;
        for (JsonNode a : c.path("architectures")) {
            Architecture named = Architecture.byHfClass(a.asText()).orElseThrow(() -> new CheckpointException(file,
                    "architecture " + a.asText() + " is not supported: jquant runs LlamaForCausalLM and Qwen2ForCausalLM"));
            if (arch != null && arch != named) throw new CheckpointException(file, "architectures names both " + arch.hfClass() + " and " + named.hfClass());
            arch = named;
        }
        String modelType = c.path("model_type").asText("");
        if (!modelType.isEmpty()) {
            Architecture typed = Architecture.byGgufName(modelType).orElseThrow(() -> new CheckpointException(file,
                    "architecture '" + modelType + "' (model_type) is not supported: jquant runs " + Architecture.names()));
            if (arch != null && arch != typed) {
                throw new CheckpointException(file, "model_type '" + modelType + "' contradicts architectures " + arch.hfClass());
            }
            arch = typed;
        }
        if (arch == null) throw new CheckpointException(file, "neither architectures nor model_type names the architecture");
        return arch;
    }

    /** null for plain RoPE; Llama 3.1's table for {@code rope_type} (or legacy {@code type}) {@code llama3}. */
    private static RopeScaling ropeScaling(Path file, JsonNode s, float theta, int headDim) throws CheckpointException {
        if (s.isMissingNode() || s.isNull()) return null;
        if (!s.isObject()) throw new CheckpointException(file, "rope_scaling " + s + " is not an object");
        String type = s.path("rope_type").asText(s.path("type").asText(""));
        if (type.equals("default")) return null;
        if (!type.equals("llama3")) throw new CheckpointException(file, "rope_scaling type '" + type + "' is not supported (llama3 only)");
        for (String key : new String[] {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
            if (!s.path(key).isNumber()) throw new CheckpointException(file, "rope_scaling llama3 lacks a number " + key);
        }
        try {
            return RopeScaling.llama3(theta, headDim, s.get("factor").asDouble(), s.get("low_freq_factor").asDouble(),
                    s.get("high_freq_factor").asDouble(), s.get("original_max_position_embeddings").asInt());
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file, e.getMessage(), e);
        }
    }

    private static int intField(Path file, JsonNode c, String key) throws CheckpointException {
        JsonNode v = c.get(key);
        if (v == null || v.isNull()) throw new CheckpointException(file, "missing " + key);
        if (!v.canConvertToInt() || !v.isIntegralNumber()) throw new CheckpointException(file, key + " " + v + " is not an integer");
        return v.asInt();
    }

    private static float floatField(Path file, JsonNode c, String key) throws CheckpointException {
        JsonNode v = c.get(key);
        if (v == null || v.isNull()) throw new CheckpointException(file, "missing " + key);
        if (!v.isNumber()) throw new CheckpointException(file, key + " " + v + " is not a number");
        return v.floatValue();
    }
}
