package jquant.runtime;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assumptions.assumeThat;

/** The real checkpoints, golden outputs and text in {@code ../shared}, found through the {@code jquant.shared} property. */
final class Shared {
    private Shared() {}

    static Path root() {
        Path root = Path.of(System.getProperty("jquant.shared", "../shared")).toAbsolutePath().normalize();
        assumeThat(Files.isDirectory(root.resolve("models"))).as("shared test files at %s", root).isTrue();
        return root;
    }

    static Path model(String name) {
        return root().resolve("models").resolve(name);
    }

    static Path data(String name) {
        return root().resolve("data").resolve(name);
    }

    /** The 200 golden token ids (positions 1..200) of a {@code golden_generation.txt}: the first line of exactly 200 integers. */
    static int[] goldenIds(Path goldenFile) {
        try {
            List<String> lines = Files.readAllLines(goldenFile);
            for (String line : lines) {
                String tail = line.substring(line.lastIndexOf(':') + 1).trim();
                if (tail.isEmpty() || !tail.matches("[0-9 ]+")) continue;
                int[] ids = Arrays.stream(tail.split(" +")).mapToInt(Integer::parseInt).toArray();
                if (ids.length == 200) return ids;
            }
            throw new IllegalStateException(goldenFile + " has no line of 200 token ids");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Little-endian float32 file as an array. */
    static float[] floats(Path file) {
        try {
            ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
            float[] out = new float[b.remaining() / 4];
            b.asFloatBuffer().get(out);
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
