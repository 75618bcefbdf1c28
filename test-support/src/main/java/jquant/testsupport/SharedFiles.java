package jquant.testsupport;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The real checkpoints and text in {@code ../shared} beside the clone, found through the
 * {@code jquant.shared} property (the build sets it; {@code ../shared} otherwise). A test that asks for
 * a file that is not there is skipped, and says which file and where to put it, instead of failing.
 */
public final class SharedFiles {
    private SharedFiles() {}

    /** The shared folder (it may not exist; {@link #model} and {@link #data} check). */
    public static Path root() {
        return Path.of(System.getProperty("jquant.shared", "../shared")).toAbsolutePath().normalize();
    }

    /** {@code models/<name>} (a file or a folder), or the test is skipped. */
    public static Path model(String name) {
        return existing(root().resolve("models").resolve(name));
    }

    /** {@code data/<name>}, or the test is skipped. */
    public static Path data(String name) {
        return existing(root().resolve("data").resolve(name));
    }

    private static Path existing(Path p) {
        assumeTrue(Files.exists(p), () -> "skipped: shared test file " + p + " is absent (put ../shared beside the clone, or pass -Djquant.shared=DIR)");
        return p;
    }
}
