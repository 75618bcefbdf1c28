package jquant.formats.synthetic;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import jquant.formats.AtomicOutput;
import jquant.formats.Architecture;
import jquant.formats.DType;
import jquant.formats.FloatEncoder;
import jquant.formats.LlamaLayout;
import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;
import jquant.formats.Checkpoint;
import jquant.formats.RopeConvention;
import jquant.formats.Tensor;
import jquant.formats.gguf.GgufWriter;
import jquant.formats.safetensors.HfNames;
import jquant.formats.safetensors.SafetensorsWriter;

/**
 * A Hugging Face checkpoint folder of a seeded random model ({@link SyntheticLlama}'s weights, taken as HF
 * rows, i.e. rotate-half q/k), as transformers would save it: {@code config.json} ({@code LlamaForCausalLM}
 * or {@code Qwen2ForCausalLM}, with {@code head_dim} and a {@code llama3} {@code rope_scaling} when given),
 * {@code model.safetensors} written one tensor at a time, and the tokenizer files copied from a folder.
 * For tests of the model families and for the full-size runs (a Llama-3.2-1B-shaped folder is 2.5 GB in
 * BF16: generated where it is needed, never stored).
 */
public final class SyntheticHfFolder {

    /**
     * Llama 3.1's {@code rope_scaling} as config.json spells it.
     *
     * @param factor                        {@code factor}
     * @param lowFreqFactor                 {@code low_freq_factor}
     * @param highFreqFactor                {@code high_freq_factor}
     * @param originalMaxPositionEmbeddings {@code original_max_position_embeddings}
     */
    public record Llama3Scaling(double factor, double lowFreqFactor, double highFreqFactor, int originalMaxPositionEmbeddings) {}

    private SyntheticHfFolder() {}

    /**
     * Writes the folder.
     *
     * @param config         shape (its {@code ropeScaling} is ignored: {@code scaling} says what config.json gets)
     * @param scaling        Llama 3.1 RoPE scaling, or null
     * @param matrixType     F32, F16 or BF16 for the matrices (norms and biases too, as transformers saves them)
     * @param tokenizerFiles a folder whose tokenizer files ({@code tokenizer.json}, {@code tokenizer.model},
     *                       {@code tokenizer_config.json}) are copied
     * @param bos            config.json's {@code bos_token_id}, or -1 for none (likewise {@code eos})
     */
    public static void write(Path folder, ModelConfig config, Llama3Scaling scaling, long seed, DType matrixType, Path tokenizerFiles,
                             int bos, int eos) throws IOException {
        Files.createDirectories(folder);
        ObjectNode json = configJson(config, scaling);
        if (bos >= 0) json.put("bos_token_id", bos);
        if (eos >= 0) json.put("eos_token_id", eos);
        AtomicOutput.write(folder.resolve("config.json"), out -> out.write(json.toPrettyString().getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        for (String f : new String[] {"tokenizer.json", "tokenizer.model", "tokenizer_config.json"}) {
            if (Files.isRegularFile(tokenizerFiles.resolve(f))) Files.copy(tokenizerFiles.resolve(f), folder.resolve(f), StandardCopyOption.REPLACE_EXISTING);
        }
        SyntheticLlama model = new SyntheticLlama(config, seed);
        List<GgufWriter.PendingTensor> tensors = new ArrayList<>();
        tensors.add(tensor(model, TensorKind.EMBEDDING, 0, matrixType));
        for (int l = 0; l < config.layers(); l++) {
            for (TensorKind kind : TensorKind.values()) if (kind.perLayer() && kind.presentIn(config)) tensors.add(tensor(model, kind, l, matrixType));
        }
        tensors.add(tensor(model, TensorKind.FINAL_NORM, 0, matrixType));
        if (!config.tiedEmbeddings()) tensors.add(tensor(model, TensorKind.HEAD, 0, matrixType));
        SafetensorsWriter.write(folder.resolve("model.safetensors"), tensors);
    }

    /**
     * Writes {@code c} (a Llama checkpoint of any format, e.g. a {@link SyntheticCheckpoint}) as a folder
     * holding the same model: config.json, and model.safetensors with Hugging Face's names, the q/k rows
     * of an adjacent-pair checkpoint permuted into the rotate-half order Hugging Face's exporters
     * produce (llama2.c's {@code permute}; {@link RopeConvention#toAdjacentPairs} undoes it), one
     * tensor at a time. The tokenizer files are the caller's to add.
     */
    public static void write(Checkpoint c, Path folder) throws IOException {
        ModelConfig m = c.config();
        if (!m.isPlainLlama()) throw new IllegalArgumentException(c.source() + ": only plain Llama checkpoints are written as Hugging Face folders");
        Files.createDirectories(folder);
        ObjectNode json = configJson(m, null);
        AtomicOutput.write(folder.resolve("config.json"), out -> out.write(json.toPrettyString().getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        List<GgufWriter.PendingTensor> tensors = new ArrayList<>();
        tensors.add(tensor(c, TensorKind.EMBEDDING, 0));
        for (int l = 0; l < m.layers(); l++) {
            for (TensorKind kind : TensorKind.values()) if (kind.perLayer() && kind.presentIn(m)) tensors.add(tensor(c, kind, l));
        }
        tensors.add(tensor(c, TensorKind.FINAL_NORM, 0));
        if (!m.tiedEmbeddings()) tensors.add(tensor(c, TensorKind.HEAD, 0));
        SafetensorsWriter.write(folder.resolve("model.safetensors"), tensors);
    }

    /** One tensor of {@code c} under its HF name, q/k rows reordered as they are written. */
    private static GgufWriter.PendingTensor tensor(Checkpoint c, TensorKind kind, int layer) {
        Tensor t = c.tensor(kind, layer);
        boolean permute = c.rope() == RopeConvention.ADJACENT_PAIRS && (kind == TensorKind.WQ || kind == TensorKind.WK);
        return new GgufWriter.PendingTensor(HfNames.of(kind, layer), t.shape(), t.dtype(), out -> {
            long rowBytes = t.byteSize() / t.rows();
            int headDim = c.config().headDim(), half = headDim / 2;
            for (int r = 0; r < t.rows(); r++) {
                // row h·headDim + p·half + i of the output is row h·headDim + 2i + p of the checkpoint
                int h = r / headDim, within = r % headDim;
                int source = permute ? h * headDim + 2 * (within % half) + within / half : r;
                GgufWriter.writeFully(out, t.data().asSlice(source * rowBytes, rowBytes).asByteBuffer());
            }
        });
    }

    /** One tensor under its HF name, its values generated when written. */
    private static GgufWriter.PendingTensor tensor(SyntheticLlama model, TensorKind kind, int layer, DType type) {
        return new GgufWriter.PendingTensor(HfNames.of(kind, layer), LlamaLayout.expectedShape(kind, model.config()), type, out -> {
            float[] w = model.weights(kind, layer);
            FloatEncoder encoder = FloatEncoder.of(type);
            int chunk = 1 << 20;
            ByteBuffer bytes = ByteBuffer.allocate(Math.toIntExact(type.byteSize(Math.min(chunk, w.length), 1))).order(ByteOrder.LITTLE_ENDIAN);
            for (int at = 0; at < w.length; at += chunk) {
                bytes.clear();
                encoder.encode(w, at, Math.min(chunk, w.length - at), bytes);
                bytes.flip();
                GgufWriter.writeFully(out, bytes);
            }
        });
    }

    /** config.json as transformers' LlamaConfig / Qwen2Config saves it. */
    static ObjectNode configJson(ModelConfig c, Llama3Scaling scaling) {
        ObjectNode j = new ObjectMapper().createObjectNode();
        j.putArray("architectures").add(c.architecture().hfClass());
        j.put("model_type", c.architecture().ggufName());
        j.put("hidden_size", c.dim());
        j.put("intermediate_size", c.hiddenDim());
        j.put("num_attention_heads", c.heads());
        j.put("num_key_value_heads", c.kvHeads());
        if (c.architecture() == Architecture.LLAMA) j.put("head_dim", c.headDim());
        j.put("num_hidden_layers", c.layers());
        j.put("vocab_size", c.vocabSize());
        j.put("max_position_embeddings", c.maxSeqLen());
        j.put("rms_norm_eps", c.rmsEps());
        j.put("rope_theta", c.ropeTheta());
        if (scaling == null) {
            j.putNull("rope_scaling");
        } else {
            j.putObject("rope_scaling").put("rope_type", "llama3").put("factor", scaling.factor()).put("low_freq_factor", scaling.lowFreqFactor())
                    .put("high_freq_factor", scaling.highFreqFactor()).put("original_max_position_embeddings", scaling.originalMaxPositionEmbeddings());
        }
        j.put("hidden_act", "silu");
        j.put("tie_word_embeddings", c.tiedEmbeddings());
        if (c.architecture() == Architecture.QWEN2) j.put("use_sliding_window", false);
        return j;
    }
}
