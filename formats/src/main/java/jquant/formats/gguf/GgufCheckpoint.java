package jquant.formats.gguf;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.LlamaLayout;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;

/**
 * A llama.cpp GGUF file of architecture {@code llama} as a {@link Checkpoint}. Tensor names are the
 * canonical ones plus {@code .weight} ({@code blk.3.attn_q.weight}); RoPE is llama.cpp NORM, i.e.
 * {@link RopeConvention#ADJACENT_PAIRS}; the model is tied when there is no {@code output} tensor.
 */
public final class GgufCheckpoint implements Checkpoint {
    private static final String ARCH = "llama";

    private final GgufFile file;
    private final ModelConfig config;
    private final Optional<Vocabulary> vocabulary;
    private final Map<String, Object> metadata;

    private GgufCheckpoint(GgufFile file) throws CheckpointException {
        this.file = file;
        Path path = file.path();
        SequencedMap<String, GgufValue> kv = file.metadata();
        String arch = required(kv, path, "general.architecture").asString();
        if (!arch.equals(ARCH)) throw new CheckpointException(path, "architecture '" + arch + "' is not supported (jquant reads 'llama')");
        boolean tied = !file.tensors().containsKey(TensorKind.HEAD.canonicalName(0) + ".weight");
        Tensor embedding = file.tensors().get(TensorKind.EMBEDDING.canonicalName(0) + ".weight");
        if (embedding == null) throw new CheckpointException(path, "missing tensor token_embd.weight");
        int heads = required(kv, path, "llama.attention.head_count").asInt();
        try {
            this.config = new ModelConfig(
                    required(kv, path, "llama.embedding_length").asInt(),
                    required(kv, path, "llama.feed_forward_length").asInt(),
                    required(kv, path, "llama.block_count").asInt(),
                    heads,
                    optional(kv, "llama.attention.head_count_kv").map(GgufValue::asInt).orElse(heads),
                    optional(kv, "llama.vocab_size").map(GgufValue::asInt).orElse(embedding.rows()),
                    required(kv, path, "llama.context_length").asInt(),
                    optional(kv, "llama.rope.freq_base").map(GgufValue::asFloat).orElse(10000f),
                    required(kv, path, "llama.attention.layer_norm_rms_epsilon").asFloat(),
                    tied);
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new CheckpointException(path, "bad llama hyper-parameters: " + e.getMessage(), e);
        }
        this.vocabulary = GgufVocabulary.read(path, kv);
        Map<String, Object> display = new LinkedHashMap<>();
        kv.forEach((k, v) -> display.put(k, v.toJava()));
        this.metadata = java.util.Collections.unmodifiableMap(display);
        LlamaLayout.verify(this);
        LlamaLayout.requireEveryTensorUsed(this, name -> false);
    }

    /** Opens and validates a llama GGUF file. */
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

    @Override public RopeConvention rope() { return RopeConvention.ADJACENT_PAIRS; }

    @Override public SequencedMap<String, Tensor> tensors() { return file.tensors(); }

    @Override
    public Optional<String> sourceName(TensorKind kind, int layer) {
        String name = kind.canonicalName(layer) + ".weight";
        return file.tensors().containsKey(name) ? Optional.of(name) : Optional.empty();
    }

    @Override public Optional<Vocabulary> vocabulary() { return vocabulary; }

    @Override public Map<String, Object> metadata() { return metadata; }

    @Override public void close() { file.close(); }
}
