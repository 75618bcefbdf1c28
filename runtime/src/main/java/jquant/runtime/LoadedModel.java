package jquant.runtime;

import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoints;
import jquant.formats.Vocabulary;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwModelMetadata;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A model ready to run: where it came from, its vocabulary, the runtime model and its tokenizer, and
 * the open file or checkpoint behind it (closed with this). What {@code jquant run} and
 * {@code jquant eval} open, for library users too.
 */
public record LoadedModel(Path source, Vocabulary vocabulary, LlamaModel model, Tokenizer tokenizer, AutoCloseable resource) implements AutoCloseable {

    /**
     * Opens any checkpoint jquant reads, or a jquant packed file (recognised by its magic) in
     * {@code mode}, and loads it on the Vector API runtime.
     *
     * @param tokenizer a llama2.c tokenizer.bin for .bin checkpoints, or null
     * @param mode      how a packed file's weights run (ignored for checkpoints)
     * @param kernels   how a checkpoint's linear layers multiply ({@link KernelChoice}: ternary kernels or float)
     */
    public static LoadedModel open(Path path, Path tokenizer, PackedModelLoader.Mode mode, KernelChoice kernels) throws CheckpointException {
        return open(path, tokenizer, mode, kernels, Compute.vector());
    }

    /** As {@link #open(Path, Path, PackedModelLoader.Mode, KernelChoice)}, on the given kernels and threads. */
    public static LoadedModel open(Path path, Path tokenizer, PackedModelLoader.Mode mode, KernelChoice kernels, Compute compute) throws CheckpointException {
        if (isPacked(path)) return openPacked(path, mode, compute);
        Checkpoint c = Checkpoints.open(path, tokenizer);
        try {
            Vocabulary v = c.vocabulary().orElseThrow(() -> new CheckpointException(path,
                    "no tokenizer found: pass --tokenizer, or put tokenizer.bin beside the checkpoint"));
            LlamaModel model = LlamaModel.load(c, compute, kernels.factory(compute));
            return new LoadedModel(path, v, model, tokenizer(path, v, c.config().vocabSize()), c);
        } catch (CheckpointException | RuntimeException e) {
            c.close();
            throw e;
        }
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

    private static LoadedModel openPacked(Path path, PackedModelLoader.Mode mode, Compute compute) throws CheckpointException {
        JqwFile f = JqwFile.open(path);
        try {
            Vocabulary v = JqwModelMetadata.vocabulary(f);
            LlamaModel model = PackedModelLoader.load(f, compute, mode);
            return new LoadedModel(path, v, model, tokenizer(path, v, model.config().vocabSize()), f);
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
