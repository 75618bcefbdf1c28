package jquant.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoints;
import jquant.formats.Tensor;
import jquant.formats.gguf.GgufFile;
import jquant.formats.gguf.GgufValue;

import java.nio.file.Path;

/** The GGUF reader: the file, then as a checkpoint (config, vocabulary, layout), then every decodable tensor's values. */
class GgufFuzzer {

    public static void fuzzerTestOneInput(byte[] input) {
        Path file = FuzzFiles.write("gguf", "model.gguf", input);
        try (GgufFile gguf = GgufFile.open(file)) {
            for (GgufValue v : gguf.metadata().values()) v.toJava();
            for (Tensor t : gguf.tensors().values()) {
                if (t.dtype().isDecodable()) t.toFloats();
            }
        } catch (CheckpointException refused) {
            return;
        }
        try (Checkpoint c = Checkpoints.open(file)) {
            c.vocabulary().ifPresent(TokenizerUse::exercise);
        } catch (CheckpointException refused) {
            // the file is well-formed GGUF but not a model jquant runs
        }
    }

    /** Replays the seeds and regression inputs in {@code GgufFuzzerInputs/gguf} (fuzzes under scripts/fuzz). */
    @FuzzTest
    void gguf(byte[] input) {
        fuzzerTestOneInput(input);
    }
}
