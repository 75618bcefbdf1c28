package jquant.fuzz;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The readers take files (they memory-map them), so each fuzz input is written to a file first: one
 * file per target and name, rewritten for every input, in a folder of its own under {@code java.io.tmpdir}
 * (scripts/fuzz points it at /dev/shm), so that nothing else is ever beside it (a llama2.c reader looks
 * for a tokenizer there).
 */
final class FuzzFiles {
    private FuzzFiles() {}

    static Path write(String target, String name, byte[] bytes) {
        try {
            Path dir = Path.of(System.getProperty("java.io.tmpdir"), "jquant-fuzz-" + ProcessHandle.current().pid(), target);
            Files.createDirectories(dir);
            return Files.write(dir.resolve(name), bytes);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the fuzz input file", e);
        }
    }
}
