package jquant.formats;

import jquant.formats.llama2c.Llama2cCheckpoint;

import java.nio.file.Files;
import java.nio.file.Path;

/** Opens any checkpoint jquant reads, recognising its format from its content. */
public final class Checkpoints {
    private Checkpoints() {}

    /**
     * Opens {@code path}: a llama2.c {@code .bin} (tokenizer beside it or {@code tokenizer}).
     *
     * @param tokenizer an explicit tokenizer file, or null to use what the checkpoint carries or has beside it
     */
    public static Checkpoint open(Path path, Path tokenizer) throws CheckpointException {
        if (!Files.exists(path)) throw new CheckpointException(path, "no such file or folder");
        try (MappedFile head = MappedFile.open(path)) {
            if (Llama2cCheckpoint.looksLike(head.segment())) {
                return Llama2cCheckpoint.open(path, tokenizer);
            }
        }
        throw new CheckpointException(path, "not a checkpoint jquant recognises (llama2.c .bin)");
    }

    public static Checkpoint open(Path path) throws CheckpointException {
        return open(path, null);
    }
}
