package jquant.cli;

import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoints;
import jquant.formats.Vocabulary;
import jquant.runtime.Compute;
import jquant.runtime.LlamaModel;
import jquant.runtime.Tokenizer;

import java.nio.file.Path;

/** A model ready to run: its checkpoint, the runtime model built from it, and its tokenizer. */
record LoadedModel(Checkpoint checkpoint, LlamaModel model, Tokenizer tokenizer) implements AutoCloseable {

    /**
     * Opens any checkpoint jquant reads and loads it on the Vector API runtime.
     *
     * @param tokenizer a llama2.c tokenizer.bin for .bin checkpoints, or null
     * @param kernels   how linear layers multiply ({@link KernelChoice}: ternary kernels or float)
     */
    static LoadedModel open(Path path, Path tokenizer, KernelChoice kernels) throws CheckpointException {
        Checkpoint c = Checkpoints.open(path, tokenizer);
        try {
            Vocabulary v = c.vocabulary().orElseThrow(() -> new CheckpointException(path,
                    "no tokenizer found: pass --tokenizer, or put tokenizer.bin beside the checkpoint"));
            if (v.size() != c.config().vocabSize()) {
                throw new CheckpointException(path, "the tokenizer has " + v.size() + " tokens but the model's vocabulary is " + c.config().vocabSize());
            }
            Tokenizer t;
            try {
                t = Tokenizer.of(v);
            } catch (UnsupportedOperationException e) {
                throw new CheckpointException(path, e.getMessage());
            }
            Compute compute = Compute.vector();
            return new LoadedModel(c, LlamaModel.load(c, kernels.modelCompute(c), kernels.factory(compute)), t);
        } catch (CheckpointException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    @Override
    public void close() {
        checkpoint.close();
    }
}
