package jquant.cli;

import jquant.formats.AtomicOutput;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoints;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;

/**
 * The rule every command that writes follows before doing any work: an output may not be any of the
 * run's inputs, explicit (the model, {@code --data}, {@code --stats}, {@code --plan}) or implicit (the
 * tokenizer found beside a llama2.c model, a Hugging Face folder's config and tokenizer files), and it
 * must be writable where it goes ({@link AtomicOutput#checkWritable}), so that a read-only or full place
 * is found before an hour of work rather than after. Paths are compared as the files they reach:
 * through symbolic links, {@code ..} and hard links.
 */
final class OutputSafety {
    private final List<Path> inputs = new ArrayList<>();

    /** Adds every file a checkpoint at {@code model} may read ({@link Checkpoints#inputFiles}). */
    OutputSafety model(Path model, Path tokenizer) {
        if (model != null) inputs.addAll(Checkpoints.inputFiles(model, tokenizer));
        return this;
    }

    /** Adds input files given directly; nulls (options not given) are skipped. */
    OutputSafety inputs(Path... files) {
        for (Path f : files) if (f != null) inputs.add(f);
        return this;
    }

    OutputSafety inputs(Collection<Path> files) {
        files.stream().filter(Objects::nonNull).forEach(inputs::add);
        return this;
    }

    /**
     * Refuses {@code output} if it is one of the inputs, a folder (or other non-file) where a file is
     * to be written, or a file that cannot be created there.
     */
    void check(Path output) throws IOException {
        if (Files.exists(output) && !Files.isRegularFile(output)) {
            throw new CheckpointException(output, Files.isDirectory(output) ? "is a folder; the output must be a file"
                    : "is not a regular file (a named pipe, device or socket); the output must be a file");
        }
        Path out = realPath(output);
        for (Path input : inputs) {
            if (out.equals(realPath(input)) || sameFile(output, input)) {
                throw new CheckpointException(output, "is an input of this run"
                        + (input.toString().equals(output.toString()) ? "" : " (" + input + ")") + "; refusing to overwrite it, choose another output");
            }
        }
        AtomicOutput.checkWritable(output);
    }

    /**
     * Refuses {@code folder} as a folder of outputs (what {@code jquant sweep} writes into, under names of
     * its own) if it is not a folder, is one of the inputs, or holds one of them at any depth: a file
     * written there could be an input.
     */
    void checkFolder(Path folder) throws IOException {
        if (Files.exists(folder) && !Files.isDirectory(folder)) {
            throw new CheckpointException(folder, "is not a folder; the output must be a folder");
        }
        Path out = realPath(folder);
        for (Path input : inputs) {
            if (realPath(input).startsWith(out)) {
                throw new CheckpointException(folder, "holds an input of this run (" + input + "); choose another output folder");
            }
        }
        checkWritableFolder(folder);
    }

    /** Refuses a folder of outputs in which no file can be created. */
    private static void checkWritableFolder(Path folder) throws IOException {
        try {
            AtomicOutput.checkWritable(folder.resolve("probe"));
        } catch (FileSystemException e) {
            throw new FileSystemException(folder.toString(), null, e.getReason());
        }
    }

    /** The file {@code p} reaches: its real path if it exists, else its parent's real path and its name. */
    private static Path realPath(Path p) {
        Path abs = p.toAbsolutePath();
        try {
            return abs.toRealPath();
        } catch (IOException e) {
            // Not there (yet): resolve the folder, then the name; normalising is safe once the folder is a real path.
            Path parent = abs.getParent();
            return parent == null ? abs.normalize() : realPath(parent).resolve(abs.getFileName()).normalize();
        }
    }

    private static boolean sameFile(Path a, Path b) {
        try {
            return Files.exists(a) && Files.exists(b) && Files.isSameFile(a, b);
        } catch (IOException e) {
            return false;
        }
    }
}
