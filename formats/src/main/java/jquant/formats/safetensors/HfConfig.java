package jquant.formats.safetensors;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import jquant.formats.CheckpointException;
import jquant.formats.ModelConfig;

/**
 * Hugging Face {@code config.json} of a {@code LlamaForCausalLM} → {@link ModelConfig}.
 *
 * <p>Required: {@code hidden_size, intermediate_size, num_attention_heads, num_hidden_layers, vocab_size,
 * max_position_embeddings, rms_norm_eps}. Defaults: {@code num_key_value_heads} = heads,
 * {@code rope_theta} = 10000, {@code tie_word_embeddings} = false (transformers' LlamaConfig default).
 * Refused, because jquant's runtime would silently compute something else: an architecture other than
 * Llama, a non-null {@code rope_scaling}, a {@code hidden_act} other than silu, a {@code head_dim} other
 * than hidden_size / heads, and attention or MLP biases.
 */
final class HfConfig {
    private HfConfig() {}

    static ModelConfig parse(Path file, JsonNode c) throws CheckpointException {
        if (c == null || !c.isObject()) throw new CheckpointException(file, "config is not a JSON object");
        requireLlama(file, c);
        if (c.hasNonNull("rope_scaling")) throw new CheckpointException(file, "rope_scaling " + c.get("rope_scaling") + " is not supported");
        if (c.hasNonNull("hidden_act") && !c.get("hidden_act").asText().equals("silu")) {
            throw new CheckpointException(file, "hidden_act " + c.get("hidden_act") + " is not supported (silu only)");
        }
        if (c.path("attention_bias").asBoolean(false) || c.path("mlp_bias").asBoolean(false)) {
            throw new CheckpointException(file, "attention/MLP biases are not supported");
        }
        int dim = intField(file, c, "hidden_size");
        int heads = intField(file, c, "num_attention_heads");
        if (c.hasNonNull("head_dim") && heads > 0 && c.get("head_dim").asInt() != dim / heads) {
            throw new CheckpointException(file, "head_dim " + c.get("head_dim") + " differs from hidden_size / num_attention_heads = " + dim / heads);
        }
        try {
            return new ModelConfig(dim,
                    intField(file, c, "intermediate_size"),
                    intField(file, c, "num_hidden_layers"),
                    heads,
                    c.hasNonNull("num_key_value_heads") ? intField(file, c, "num_key_value_heads") : heads,
                    intField(file, c, "vocab_size"),
                    intField(file, c, "max_position_embeddings"),
                    c.hasNonNull("rope_theta") ? floatField(file, c, "rope_theta") : 10000f,
                    floatField(file, c, "rms_norm_eps"),
                    c.path("tie_word_embeddings").asBoolean(false));
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file, "inconsistent hyper-parameters: " + e.getMessage(), e);
        }
    }

    private static void requireLlama(Path file, JsonNode c) throws CheckpointException {
        String modelType = c.path("model_type").asText("");
        JsonNode architectures = c.path("architectures");
        boolean llamaArch = false;
        for (JsonNode a : architectures) {
            if (!a.asText().equals("LlamaForCausalLM")) {
                throw new CheckpointException(file, "architecture " + a + " is not supported (LlamaForCausalLM only)");
            }
            llamaArch = true;
        }
        if (!modelType.isEmpty() && !modelType.equals("llama")) {
            throw new CheckpointException(file, "model_type '" + modelType + "' is not supported (llama only)");
        }
        if (!llamaArch && modelType.isEmpty()) {
            throw new CheckpointException(file, "neither architectures nor model_type says this is a Llama model");
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
