package jquant.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import jquant.quantize.BitPlanJson;

/** The bit plan reader; {@code fromBytes} refuses with IllegalArgumentException (documented), the file reader with CheckpointException. */
class BitPlanFuzzer {

    public static void fuzzerTestOneInput(byte[] input) {
        try {
            BitPlanJson.fromBytes(input);
        } catch (IllegalArgumentException refused) {
            // refused with the reason
        }
    }

    /** Replays the seeds and regression inputs in {@code BitPlanFuzzerInputs/plan} (fuzzes under scripts/fuzz). */
    @FuzzTest
    void plan(byte[] input) {
        fuzzerTestOneInput(input);
    }
}
