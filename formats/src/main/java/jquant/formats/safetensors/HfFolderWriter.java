package jquant.formats.safetensors;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import jquant.formats.AtomicOutput;
import jquant.formats.Checkpoint;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;

/**
 * Writes a Llama checkpoint as a Hugging Face folder: {@code config.json} ({@code LlamaForCausalLM})
 * and {@code model.safetensors} with Hugging Face's parameter names, the q/k rows of an adjacent-pair
 * checkpoint permuted into the rotate-half order Hugging Face's exporters produce (llama2.c's
 * {@code permute}; {@link RopeConvention#toAdjacentPairs} undoes it). The tokenizer files are the
 * caller's to add.
 */
public final class HfFolderWriter {
    private HfFolderWriter() {}

    public static void write(Checkpoint c, Path folder) throws IOException {
        ModelConfig m = c.config();
        Files.createDirectories(folder);
        ObjectNode config = new ObjectMapper().createObjectNode();
        config.putArray("architectures").add("LlamaForCausalLM");
        config.put("model_type", "llama");
        config.put("hidden_size", m.dim());
        config.put("intermediate_size", m.hiddenDim());
        config.put("num_hidden_layers", m.layers());
        config.put("num_attention_heads", m.heads());
        config.put("num_key_value_heads", m.kvHeads());
        config.put("vocab_size", m.vocabSize());
        config.put("max_position_embeddings", m.maxSeqLen());
        config.put("rope_theta", m.ropeTheta());
        config.put("rms_norm_eps", m.rmsEps());
        config.put("tie_word_embeddings", m.tiedEmbeddings());
        config.put("hidden_act", "silu");
        byte[] json = config.toPrettyString().getBytes(StandardCharsets.UTF_8);
        AtomicOutput.write(folder.resolve("config.json"), out -> out.write(json));
        try (Arena arena = Arena.ofConfined()) {
            List<Tensor> tensors = new ArrayList<>();
            add(tensors, c, TensorKind.EMBEDDING, 0, arena);
            for (int l = 0; l < m.layers(); l++) {
                for (TensorKind kind : TensorKind.values()) if (kind.perLayer()) add(tensors, c, kind, l, arena);
            }
            add(tensors, c, TensorKind.FINAL_NORM, 0, arena);
            if (!m.tiedEmbeddings()) add(tensors, c, TensorKind.HEAD, 0, arena);
            SafetensorsWriter.write(folder.resolve("model.safetensors"), Map.of("format", "pt"), tensors);
        }
    }

    private static void add(List<Tensor> out, Checkpoint c, TensorKind kind, int layer, Arena arena) {
        Tensor t = c.tensor(kind, layer);
        MemorySegment data = t.data();
        if (c.rope() == RopeConvention.ADJACENT_PAIRS && (kind == TensorKind.WQ || kind == TensorKind.WK)) {
            data = toRotateHalf(data, t.rows(), c.config().headDim(), arena);
        }
        out.add(new Tensor(HfNames.of(kind, layer), t.shape(), t.dtype(), data));
    }

    /** Row {@code h*headDim + p*headDim/2 + i} of the result is row {@code h*headDim + 2i + p} of {@code rows}. */
    private static MemorySegment toRotateHalf(MemorySegment rows, int count, int headDim, Arena arena) {
        long rowBytes = rows.byteSize() / count;
        MemorySegment out = arena.allocate(rows.byteSize(), 64);
        int half = headDim / 2;
        for (int r = 0; r < count; r++) {
            int h = r / headDim, within = r % headDim, i = within / 2, p = within % 2;
            MemorySegment.copy(rows, r * rowBytes, out, (long) (h * headDim + p * half + i) * rowBytes, rowBytes);
        }
        return out;
    }
}
