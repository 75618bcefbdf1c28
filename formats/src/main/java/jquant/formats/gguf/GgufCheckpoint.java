package jquant.formats.gguf;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import jquant.formats.Architecture;
import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.LlamaLayout;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.formats.RopeScaling;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;

/**
 * A llama.cpp GGUF file of architecture {@code llama} or {@code qwen2} ({@link Architecture}) as a
 * {@link Checkpoint}. Hyper-parameters are read from the architecture's keys ({@code llama.embedding_length},
 * {@code qwen2.embedding_length}, …; the head size from {@code *.attention.key_length} when present);
 * tensor names are llama.cpp's ({@link TensorKind#ggufName}); RoPE is the architecture's
 * ({@link Architecture#ggufRope()}), scaled by a {@code rope_freqs.weight} tensor when there is one; the
 * model is tied when there is no {@code output} tensor.
 */
public final class GgufCheckpoint implements Checkpoint {
    private final GgufFile file;
    private final ModelConfig config;
    private final Optional<Vocabulary> vocabulary;
    private final Map<String, Object> metadata;

    private GgufCheckpoint(GgufFile file) throws CheckpointException {
        this.file = file;
        Path path = file.path();
        SequencedMap<String, GgufValue> kv = file.metadata();
        String archName = required(kv, path, "general.architecture").asString();
        Architecture arch = Architecture.byGgufName(archName).orElseThrow(() -> new CheckpointException(path,
                "architecture '" + archName + "' is not supported: jquant reads " + Architecture.names()));
        String p = archName + ".";
        boolean tied = !file.tensors().containsKey(TensorKind.HEAD.ggufName(0));
        Tensor embedding = file.tensors().get(TensorKind.EMBEDDING.ggufName(0));
        if (embedding == null) throw new CheckpointException(path, "missing tensor " + TensorKind.EMBEDDING.ggufName(0));
        int dim = required(kv, path, p + "embedding_length").asInt();
        int heads = required(kv, path, p + "attention.head_count").asInt();
        int headDim = optional(kv, p + "attention.key_length").map(GgufValue::asInt).orElse(heads > 0 ? dim / heads : 0);
        int valueLength = optional(kv, p + "attention.value_length").map(GgufValue::asInt).orElse(headDim);
        int rotated = optional(kv, p + "rope.dimension_count").map(GgufValue::asInt).orElse(headDim);
        if (valueLength != headDim) {
            throw new CheckpointException(path, p + "attention.value_length " + valueLength + " differs from key_length " + headDim + ", which jquant does not run");
        }
        if (rotated != headDim) {
            throw new CheckpointException(path, p + "rope.dimension_count " + rotated + " rotates part of a " + headDim + "-element head, which jquant does not run");
        }
        float theta = optional(kv, p + "rope.freq_base").map(GgufValue::asFloat).orElse(10000f);
        try {
            this.config = new ModelConfig(arch, dim,
                    required(kv, path, p + "feed_forward_length").asInt(),
                    required(kv, path, p + "block_count").asInt(),
                    heads,
                    optional(kv, p + "attention.head_count_kv").map(GgufValue::asInt).orElse(heads),
                    headDim,
                    optional(kv, p + "vocab_size").map(GgufValue::asInt).orElse(embedding.rows()),
                    required(kv, path, p + "context_length").asInt(),
                    theta,
                    ropeScaling(file),
                    required(kv, path, p + "attention.layer_norm_rms_epsilon").asFloat(),
                    tied);
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new CheckpointException(path, "bad " + archName + " hyper-parameters: " + e.getMessage(), e);
        }
        this.vocabulary = GgufVocabulary.read(path, kv);
        Map<String, Object> display = new LinkedHashMap<>();
        kv.forEach((k, v) -> display.put(k, v.toJava()));
        this.metadata = java.util.Collections.unmodifiableMap(display);
        LlamaLayout.verify(this);
        // rope_freqs.weight is read into the config above (ropeScaling), not a weight of any layer.
        LlamaLayout.requireEveryTensorUsed(this, name -> name.equals(RopeScaling.GGUF_TENSOR));
    }

    /** llama.cpp's per-frequency RoPE divisors ({@link RopeScaling#GGUF_TENSOR}), if the file has them. */
    private static RopeScaling ropeScaling(GgufFile file) {
        Tensor t = file.tensors().get(RopeScaling.GGUF_TENSOR);
        return t == null ? null : RopeScaling.ofFactors(t.toFloats());
    }

    /** Opens and validates a llama or qwen2 GGUF file. */
    public static GgufCheckpoint open(Path path) throws CheckpointException {
        GgufFile file = GgufFile.open(path);
        try {
            return new GgufCheckpoint(file);
        } catch (CheckpointException e) {
            file.close();
            throw e;
        } catch (RuntimeException e) {
            file.close();
            throw new CheckpointException(path, "malformed llama GGUF: " + e.getMessage(), e);
        }
    }

    static GgufValue required(Map<String, GgufValue> kv, Path path, String key) throws CheckpointException {
        GgufValue v = kv.get(key);
        if (v == null) throw new CheckpointException(path, "missing metadata key " + key);
        return v;
    }

    static Optional<GgufValue> optional(Map<String, GgufValue> kv, String key) {
        return Optional.ofNullable(kv.get(key));
    }

    /** The low-level file, for metadata types, tensor offsets and alignment. */
    public GgufFile file() { return file; }

    @Override public Path source() { return file.path(); }

    @Override public String format() { return "gguf"; }

    @Override public ModelConfig config() { return config; }

    /** As llama.cpp runs the architecture: adjacent pairs for llama, rotate-half (NEOX) for qwen2. */
    @Override public RopeConvention rope() { return config.architecture().ggufRope(); }

    @Override public SequencedMap<String, Tensor> tensors() { return file.tensors(); }

    @Override
    public Optional<String> sourceName(TensorKind kind, int layer) {
        String name = kind.ggufName(layer);
        return file.tensors().containsKey(name) ? Optional.of(name) : Optional.empty();
    }

    @Override public Optional<Vocabulary> vocabulary() { return vocabulary; }

    @Override public Map<String, Object> metadata() { return metadata; }

    @Override public void close() { file.close(); }
}
