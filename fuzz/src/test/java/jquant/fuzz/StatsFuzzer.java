package jquant.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import jquant.calibration.CalibrationStats;
import jquant.calibration.CalibrationStatsFile;
import jquant.calibration.GroupStats;
import jquant.formats.CheckpointException;

import java.io.UncheckedIOException;

/**
 * The calibration stats reader (GGUF, version, checksums, groups and vectors), and every group's E[x·xᵀ],
 * which the reader leaves in the file and reads, checking its CRC, when asked.
 */
class StatsFuzzer {

    public static void fuzzerTestOneInput(byte[] input) {
        try {
            CalibrationStats stats = CalibrationStatsFile.read(FuzzFiles.write("stats", "stats.gguf", input));
            for (GroupStats g : stats.groups()) {
                if (g.secondMoment() != null) g.secondMoment().full(null);
            }
        } catch (CheckpointException refused) {
            // refused, naming the file
        } catch (UncheckedIOException refused) {
            if (!(refused.getCause() instanceof CheckpointException)) throw refused;
        }
    }

    /** Replays the seeds and regression inputs in {@code StatsFuzzerInputs/stats} (fuzzes under scripts/fuzz). */
    @FuzzTest
    void stats(byte[] input) {
        fuzzerTestOneInput(input);
    }
}
