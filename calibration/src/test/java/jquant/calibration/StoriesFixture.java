package jquant.calibration;

import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.testsupport.Stories260K;

import java.io.IOException;

/** stories260K and its text, and one calibration of it shared by the tests. */
public final class StoriesFixture {
    /** Enough text for every group's sample to be full, small enough for a quick test; α for 3 and 5 bits, and E[x·xᵀ]. */
    public static final Calibrator.Options OPTIONS = new Calibrator.Options(2048, 512, 256, java.util.List.of(3.0, 5.0), true, 7);
    private static CalibrationStats stories;

    private StoriesFixture() {}

    public static Checkpoint stories260K() throws IOException {
        return Checkpoints.open(Stories260K.model());
    }

    public static String text() throws IOException {
        return Stories260K.text();
    }

    /** stories260K calibrated on the first 2048 tokens of the TinyStories sample (computed once). */
    public static synchronized CalibrationStats storiesStats() throws IOException {
        if (stories == null) {
            try (Checkpoint c = stories260K()) {
                java.nio.file.Path file = java.nio.file.Files.createTempFile("stories260K-stats", ".gguf");
                file.toFile().deleteOnExit();
                stories = Calibrator.calibrate(c, text(), OPTIONS, file, (done, total, stage) -> {});
            }
        }
        return stories;
    }
}
