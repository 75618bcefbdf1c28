package jquant.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import jquant.formats.CheckpointException;
import jquant.formats.Tensor;
import jquant.formats.llama2c.Llama2cCheckpoint;

/** The llama2.c checkpoint reader (legacy and v1 headers), with no tokenizer beside it. */
class Llama2cFuzzer {

    public static void fuzzerTestOneInput(byte[] input) {
        try (Llama2cCheckpoint c = Llama2cCheckpoint.open(FuzzFiles.write("llama2c", "model.bin", input), null)) {
            for (Tensor t : c.tensors().values()) t.row(t.rows() - 1);
        } catch (CheckpointException refused) {
            // refused, naming the file
        }
    }

    /** Replays the seeds and regression inputs in {@code Llama2cFuzzerInputs/llama2c} (fuzzes under scripts/fuzz). */
    @FuzzTest
    void llama2c(byte[] input) {
        fuzzerTestOneInput(input);
    }
}
