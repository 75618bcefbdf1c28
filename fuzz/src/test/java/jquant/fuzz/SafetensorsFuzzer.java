package jquant.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import jquant.formats.CheckpointException;
import jquant.formats.Tensor;
import jquant.formats.safetensors.SafetensorsFile;

/** The safetensors reader: header, dtypes, offsets, then every tensor's values. */
class SafetensorsFuzzer {

    public static void fuzzerTestOneInput(byte[] input) {
        try (SafetensorsFile f = SafetensorsFile.open(FuzzFiles.write("safetensors", "model.safetensors", input))) {
            for (Tensor t : f.tensors().values()) t.toFloats();
        } catch (CheckpointException refused) {
            // refused, naming the file: what a reader may do
        }
    }

    /** Replays the seeds and regression inputs in {@code SafetensorsFuzzerInputs/safetensors} (fuzzes under scripts/fuzz). */
    @FuzzTest
    void safetensors(byte[] input) {
        fuzzerTestOneInput(input);
    }
}
