package jquant.formats;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assumptions.assumeThat;

/** The real checkpoints and text in {@code ../shared}, found through the {@code jquant.shared} property. */
public final class SharedFiles {
    private SharedFiles() {}

    public static Path root() {
        Path root = Path.of(System.getProperty("jquant.shared", "../shared")).toAbsolutePath().normalize();
        assumeThat(Files.isDirectory(root.resolve("models"))).as("shared test files at %s", root).isTrue();
        return root;
    }

    public static Path model(String name) {
        return root().resolve("models").resolve(name);
    }

    public static Path data(String name) {
        return root().resolve("data").resolve(name);
    }
}
