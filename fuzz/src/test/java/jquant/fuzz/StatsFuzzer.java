package jquant.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import jquant.calibration.CalibrationStatsFile;
import jquant.formats.CheckpointException;

/** The calibration stats reader (GGUF, version, checksum, groups and vectors). */
class StatsFuzzer {

    public static void fuzzerTestOneInput(byte[] input) {
        try {
            CalibrationStatsFile.read(FuzzFiles.write("stats", "stats.gguf", input));
        } catch (CheckpointException refused) {
            // refused, naming the file
        }
    }

    /** Replays the seeds and regression inputs in {@code StatsFuzzerInputs/stats} (fuzzes under scripts/fuzz). */
    @FuzzTest
    void stats(byte[] input) {
        fuzzerTestOneInput(input);
    }
}
