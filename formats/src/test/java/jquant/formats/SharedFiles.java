package jquant.formats;

import java.nio.file.Files;
import java.nio.file.Path;

/** Paths of the real test checkpoints in the shared folder (system property {@code jquant.shared}). */
public final class SharedFiles {
    private SharedFiles() {}

    public static Path model(String relative) {
        String shared = System.getProperty("jquant.shared");
        if (shared == null) throw new IllegalStateException("system property jquant.shared is not set");
        Path p = Path.of(shared, "models", relative);
        if (!Files.exists(p)) throw new IllegalStateException("missing test asset " + p);
        return p;
    }
}
