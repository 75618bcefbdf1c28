package jquant.formats;

import jquant.formats.gguf.GgufCheckpoint;
import jquant.formats.llama2c.Llama2cCheckpoint;
import jquant.formats.safetensors.SafetensorsCheckpoint;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

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
        if (!Files.exists(path)) throw new CheckpointException(path, InputFiles.whyMissing(path, "no such file or folder"));
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

    /**
     * Every file that opening {@code path} may read, existing or not, without reading any: for a
     * Hugging Face folder (or a file in one) its config, weights, index and tokenizer files; for any
     * other file the file itself and, when it may be a llama2.c checkpoint, the explicit tokenizer or
     * the ones looked for beside it. Commands refuse to write over any of them.
     */
    public static List<Path> inputFiles(Path path, Path tokenizer) {
        List<Path> files = new ArrayList<>();
        files.add(path);
        String name = path.getFileName() == null ? "" : path.getFileName().toString();
        boolean hf = Files.isDirectory(path) || name.endsWith(".safetensors") || name.endsWith(".safetensors.index.json");
        Path folder = Files.isDirectory(path) ? path : path.toAbsolutePath().getParent();
        if (hf) {
            for (String f : HF_FILES) files.add(folder.resolve(f));
            try (DirectoryStream<Path> shards = Files.newDirectoryStream(folder, "*.safetensors")) {
                shards.forEach(files::add);
            } catch (IOException e) {
                // an unreadable folder is refused when the checkpoint is opened; there is nothing to guard here
            }
        } else if (tokenizer != null) {
            files.add(tokenizer);
        } else {
            files.add(folder.resolve("tokenizer.bin"));
            try (DirectoryStream<Path> toks = Files.newDirectoryStream(folder, "tok[0-9]*.bin")) {
                toks.forEach(files::add);
            } catch (IOException e) {
                // as above
            }
        }
        return files;
    }

    private static final List<String> HF_FILES = List.of("config.json", "model.safetensors", "model.safetensors.index.json",
            "tokenizer.model", "tokenizer.json", "tokenizer_config.json");

    private static void rejectTokenizer(Path path, Path tokenizer) throws CheckpointException {
        if (tokenizer != null) throw new CheckpointException(path, "--tokenizer applies to llama2.c checkpoints only; this one carries its own");
    }
}
