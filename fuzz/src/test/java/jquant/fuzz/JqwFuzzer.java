package jquant.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import jquant.formats.CheckpointException;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwModelMetadata;

import java.nio.file.Path;

/** The .jqw reader: header, metadata JSON, layer directory (with and without the layer checksums), model config and vocabulary. */
class JqwFuzzer {

    public static void fuzzerTestOneInput(byte[] input) {
        Path file = FuzzFiles.write("jqw", "model.jqw", input);
        try (JqwFile f = JqwFile.openWithoutLayerChecksums(file)) {
            JqwModelMetadata.config(f);
            JqwModelMetadata.rope(f);
            TokenizerUse.exercise(JqwModelMetadata.vocabulary(f));
        } catch (CheckpointException refused) {
            return;
        }
        try (JqwFile f = JqwFile.open(file)) {
            JqwModelMetadata.config(f);
        } catch (CheckpointException refused) {
            // a layer checksum that does not match
        }
    }

    /** Replays the seeds and regression inputs in {@code JqwFuzzerInputs/jqw} (fuzzes under scripts/fuzz). */
    @FuzzTest
    void jqw(byte[] input) {
        fuzzerTestOneInput(input);
    }
}
