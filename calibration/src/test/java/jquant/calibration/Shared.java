package jquant.calibration;

import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assumptions.assumeThat;

/** Real models and text in {@code ../shared} (property {@code jquant.shared}), and one calibration of stories260K shared by the tests. */
final class Shared {
    /** Enough text for every group's sample to be full, small enough for a quick test. */
    static final Calibrator.Options OPTIONS = new Calibrator.Options(2048, 512, 256, 5, 7);
    private static CalibrationStats stories;

    private Shared() {}

    static Path path(String folder, String name) {
        Path root = Path.of(System.getProperty("jquant.shared", "../shared")).toAbsolutePath().normalize();
        Path p = root.resolve(folder).resolve(name);
        assumeThat(Files.exists(p)).as("shared test file %s", p).isTrue();
        return p;
    }

    static Checkpoint stories260K() throws IOException {
        return Checkpoints.open(path("models", "stories260K.bin"));
    }

    static String text() throws IOException {
        return Files.readString(path("data", "tinystories-valid-sample.txt"), StandardCharsets.UTF_8);
    }

    /** stories260K calibrated on the first 2048 tokens of the TinyStories sample (computed once). */
    static synchronized CalibrationStats storiesStats() throws IOException {
        if (stories == null) {
            try (Checkpoint c = stories260K()) {
                stories = Calibrator.calibrate(c, text(), OPTIONS, (stage, done, total) -> {});
            }
        }
        return stories;
    }
}
