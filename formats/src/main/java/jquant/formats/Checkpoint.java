package jquant.formats;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * One model view over any checkpoint format jquant reads. Tensors are exposed in the source's own
 * naming ({@link #tensors()}, file order) and by canonical role ({@link #tensor}). Weights are
 * returned exactly as stored: q/k rows follow {@link #rope()}, which the runtime honours.
 */
public interface Checkpoint extends AutoCloseable {

    /** Where it was read from (a file, or a folder for HF checkpoints). */
    Path source();

    /** A short format name: "llama2c", "llama2c-v1", "safetensors", "gguf". */
    String format();

    ModelConfig config();

    RopeConvention rope();

    /** Every stored tensor by its source name, in file order. */
    SequencedMap<String, Tensor> tensors();

    /** The source name of the tensor playing {@code kind} in {@code layer} (ignored for global kinds), if present. */
    Optional<String> sourceName(TensorKind kind, int layer);

    /**
     * The tensor playing {@code kind} in {@code layer}. For a tied model {@link TensorKind#HEAD} is the
     * embedding.
     *
     * @throws IllegalStateException if the checkpoint lacks it (readers check completeness on open)
     */
    default Tensor tensor(TensorKind kind, int layer) {
        Optional<String> name = sourceName(kind, layer);
        if (name.isEmpty() && kind == TensorKind.HEAD && config().tiedEmbeddings()) {
            return tensor(TensorKind.EMBEDDING, 0);
        }
        return tensors().get(name.orElseThrow(
                () -> new IllegalStateException(source() + ": no tensor for " + kind.canonicalName(layer))));
    }

    /** The tokenizer vocabulary stored in or beside the checkpoint, if any. */
    Optional<Vocabulary> vocabulary();

    /** Format-specific metadata (GGUF key/values, safetensors __metadata__, config.json), for display. */
    Map<String, Object> metadata();

    @Override
    void close();
}
