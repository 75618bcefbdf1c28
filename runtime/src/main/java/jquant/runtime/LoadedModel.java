package jquant.runtime;

import jquant.core.Memory;
import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoints;
import jquant.formats.Vocabulary;
import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwLayer;
import jquant.formats.jqw.JqwModelMetadata;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.IntConsumer;

/**
 * A model ready to run: where it came from, its vocabulary, the runtime model and its tokenizer, and
 * the open file or checkpoint behind it (closed with this). What {@code jquant run} and
 * {@code jquant eval} open, for library users too.
 *
 * @param pages         drops a stage's pages of the mapped file from the process's resident memory ({@link #release})
 * @param withoutCopies whether the kernels asked for copies ({@link KernelChoice#copies}) and the file was too large for
 *                      them ({@link #copiesFit}): its tensors run as stored
 */
public record LoadedModel(Path source, Vocabulary vocabulary, LlamaModel model, Tokenizer tokenizer, AutoCloseable resource, IntConsumer pages,
                          boolean withoutCopies) implements AutoCloseable {

    /**
     * Drops the pages of stage {@code stage} (numbered as {@link LayerLoader}'s: 0 the embedding, l + 1 block
     * l, layers + 1 the classifier) from the process's resident memory; they are read again from the page
     * cache or the disk if used later. A pass that goes through the model one layer at a time calls it
     * after each layer, so its resident set holds one layer of the file.
     */
    public void release(int stage) {
        pages.accept(stage);
    }

    /**
     * Opens any checkpoint jquant reads, or a jquant packed file (recognised by its magic) in
     * {@code mode}, and loads it on the Vector API runtime with layer-pipelined loading.
     *
     * @param tokenizer a llama2.c tokenizer.bin for .bin checkpoints, or null
     * @param mode      how a packed file's weights run (ignored for checkpoints)
     * @param kernels   how a checkpoint's linear layers multiply ({@link KernelChoice}: ternary kernels or float)
     */
    public static LoadedModel open(Path path, Path tokenizer, PackedModelLoader.Mode mode, KernelChoice kernels) throws CheckpointException {
        return open(path, tokenizer, mode, kernels, Compute.vector(), LayerLoader.Policy.PIPELINED);
    }

    /**
     * As {@link #open(Path, Path, PackedModelLoader.Mode, KernelChoice)}, on the given kernels and threads,
     * with the layers paged in (and a packed file's layer checksums verified) by {@code loading}. The
     * weights are used where they lie in the mapped file; nothing is copied.
     */
    public static LoadedModel open(Path path, Path tokenizer, PackedModelLoader.Mode mode, KernelChoice kernels, Compute compute,
                                   LayerLoader.Policy loading) throws CheckpointException {
        return open(path, tokenizer, null, mode, kernels, compute, loading);
    }

    /**
     * As {@link #open(Path, Path, PackedModelLoader.Mode, KernelChoice, Compute, LayerLoader.Policy)}, a
     * checkpoint without a tokenizer of its own (none given, none beside it) taking {@code otherwise}: the
     * base of an evaluation reads the tokenizer of the packed model it is compared with, which must be the same.
     *
     * @param otherwise the vocabulary of a checkpoint that has none, or null (then such a checkpoint is an error)
     */
    public static LoadedModel open(Path path, Path tokenizer, Vocabulary otherwise, PackedModelLoader.Mode mode, KernelChoice kernels,
                                   Compute compute, LayerLoader.Policy loading) throws CheckpointException {
        if (isPacked(path)) {
            boolean copies = copiesMade(kernels, path);
            return openPacked(path, mode, copies, kernels.copies() && !copies, compute, loading);
        }
        Checkpoint c = Checkpoints.open(path, tokenizer);
        try {
            boolean copies = copiesMade(kernels, path);
            KernelWarmup.start(c.tensor(TensorKind.EMBEDDING, 0).data());
            Vocabulary v = c.vocabulary().or(() -> Optional.ofNullable(otherwise)).orElseThrow(() -> new CheckpointException(path,
                    "no tokenizer found: pass --tokenizer, or put tokenizer.bin beside the checkpoint"));
            LayerLoader loader = LayerLoader.start(stages(c), loading);
            LlamaModel model = LlamaModel.load(c, compute, kernels.factory(compute, copies)).withGate(loader);
            return new LoadedModel(path, v, model, tokenizer(path, v, c.config().vocabSize()), closing(loader, c), stage -> release(c, stage),
                    kernels.copies() && !copies);
        } catch (CheckpointException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    /** A checkpoint's tensors in forward-pass order: embedding, each block, final norm and classifier. */
    private static List<LayerLoader.Stage> stages(Checkpoint c) {
        ModelConfig config = c.config();
        List<LayerLoader.Stage> stages = new ArrayList<>();
        stages.add(LayerLoader.pageIn(List.of(c.tensor(TensorKind.EMBEDDING, 0).data())));
        for (int l = 0; l < config.layers(); l++) {
            List<MemorySegment> block = new ArrayList<>();
            for (TensorKind kind : TensorKind.values()) if (kind.perLayer() && kind.presentIn(config)) block.add(c.tensor(kind, l).data());
            stages.add(LayerLoader.pageIn(block));
        }
        stages.add(LayerLoader.pageIn(List.of(c.tensor(TensorKind.FINAL_NORM, 0).data(), c.tensor(TensorKind.HEAD, 0).data())));
        return stages;
    }

    /** Unloads the tensors of one stage of a checkpoint. */
    private static void release(Checkpoint c, int stage) {
        ModelConfig config = c.config();
        if (stage == 0) {
            c.tensor(TensorKind.EMBEDDING, 0).unload();
        } else if (stage <= config.layers()) {
            for (TensorKind kind : TensorKind.values()) if (kind.perLayer() && kind.presentIn(config)) c.tensor(kind, stage - 1).unload();
        } else {
            c.tensor(TensorKind.FINAL_NORM, 0).unload();
            c.tensor(TensorKind.HEAD, 0).unload();
        }
    }

    /** Stops the loader before the mapping it reads is closed. */
    private static AutoCloseable closing(LayerLoader loader, AutoCloseable file) {
        return () -> {
            loader.close();
            file.close();
        };
    }

    /** Whether {@code path} is a jquant packed file (by its magic). */
    public static boolean isPacked(Path path) {
        if (!Files.isRegularFile(path)) return false;
        try (InputStream in = Files.newInputStream(path)) {
            return JqwFile.looksLike(MemorySegment.ofArray(in.readNBytes(8)));
        } catch (IOException e) {
            return false;
        }
    }

    /** Whether {@code kernels} make their copies of the file at {@code path}: they ask for them and the file fits ({@link #copiesFit}; the memory read only then). */
    private static boolean copiesMade(KernelChoice kernels, Path path) throws CheckpointException {
        return kernels.copies() && copiesFit(path);
    }

    /**
     * Whether the copies some native kernels read ({@link KernelChoice#copies}: a .jqw's weightlet lanes, a little larger than
     * its weightlets; T2P's sixteen-row tiles, its size) fit: the file in at most half the memory the system has available, so
     * that a model near the size of memory runs from its mapping (paged from disk if need be) rather than running the system
     * out of memory.
     */
    public static boolean copiesFit(Path path) throws CheckpointException {
        try {
            return Files.size(path) <= Memory.systemAvailable() / 2;
        } catch (IOException e) {
            throw new CheckpointException(path, "cannot read its size: " + e.getMessage());
        }
    }

    /**
     * A packed file opened without reading its layers: the loader verifies each layer's CRC-32C as it
     * pages it in, and the forward pass uses no layer before it has passed.
     */
    private static LoadedModel openPacked(Path path, PackedModelLoader.Mode mode, boolean lanes, boolean withoutCopies, Compute compute,
                                          LayerLoader.Policy loading) throws CheckpointException {
        JqwFile f = JqwFile.openWithoutLayerChecksums(path);
        try {
            KernelWarmup.start(f.tensors().values().stream().filter(t -> !t.parts().isEmpty()).findFirst()
                    .map(t -> f.part(t, t.parts().keySet().iterator().next())).orElse(null));
            Vocabulary v = JqwModelMetadata.vocabulary(f);
            List<LayerLoader.Stage> stages = new ArrayList<>();
            for (JqwLayer layer : f.layers()) {
                stages.add(() -> f.checkLayerChecksum(layer));
            }
            LayerLoader loader = LayerLoader.start(stages, loading);
            LlamaModel model = PackedModelLoader.load(f, compute, mode, lanes).withGate(loader);
            // The file's layers are not slices we keep; dropping the whole mapping's pages is as cheap and leaves the next layer to the loader.
            return new LoadedModel(path, v, model, tokenizer(path, v, model.config().vocabSize()), closing(loader, f), stage -> f.unload(),
                    withoutCopies);
        } catch (CheckpointException | RuntimeException e) {
            f.close();
            throw e;
        }
    }

    private static Tokenizer tokenizer(Path path, Vocabulary v, int vocabSize) throws CheckpointException {
        if (v.size() != vocabSize) {
            throw new CheckpointException(path, "the tokenizer has " + v.size() + " tokens but the model's vocabulary is " + vocabSize);
        }
        try {
            return Tokenizer.of(v);
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(path, "its tokenizer: " + e.getMessage());
        }
    }

    @Override
    public void close() {
        try {
            resource.close();
        } catch (Exception e) {
            throw new IllegalStateException("closing " + source + ": " + e.getMessage(), e);
        }
    }
}
