package jquant.formats;

import jquant.formats.gguf.GgufCheckpoint;
import jquant.formats.llama2c.Llama2cCheckpoint;
import jquant.formats.safetensors.SafetensorsCheckpoint;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/** Opens any checkpoint jquant reads, recognising its format from its content. */
public final class Checkpoints {
    private static final byte[] GGUF_MAGIC = {'G', 'G', 'U', 'F'};

    private Checkpoints() {}

    /**
     * Opens {@code path}: a Hugging Face folder (or its {@code .safetensors} / index file), a GGUF file,
     * or a llama2.c {@code .bin}.
     *
     * @param tokenizer a llama2.c {@code tokenizer.bin} for a {@code .bin} checkpoint, or null to use the
     *                  one beside it; other formats carry their own
     */
    public static Checkpoint open(Path path, Path tokenizer) throws CheckpointException {
        if (!Files.exists(path)) throw new CheckpointException(path, "no such file or folder");
        if (Files.isDirectory(path) || path.getFileName().toString().endsWith(".safetensors")
                || path.getFileName().toString().endsWith(".safetensors.index.json")) {
            rejectTokenizer(path, tokenizer);
            return SafetensorsCheckpoint.open(path);
        }
        try (MappedFile head = MappedFile.open(path)) {
            MemorySegment seg = head.segment();
            if (seg.byteSize() >= 4 && Arrays.equals(seg.asSlice(0, 4).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE), GGUF_MAGIC)) {
                rejectTokenizer(path, tokenizer);
                return GgufCheckpoint.open(path);
            }
            if (Llama2cCheckpoint.looksLike(seg)) {
                return Llama2cCheckpoint.open(path, tokenizer);
            }
        }
        throw new CheckpointException(path, "not a checkpoint jquant recognises (HF safetensors folder, GGUF, llama2.c .bin)");
    }

    public static Checkpoint open(Path path) throws CheckpointException {
        return open(path, null);
    }

    private static void rejectTokenizer(Path path, Path tokenizer) throws CheckpointException {
        if (tokenizer != null) throw new CheckpointException(path, "--tokenizer applies to llama2.c checkpoints only; this one carries its own");
    }
}
