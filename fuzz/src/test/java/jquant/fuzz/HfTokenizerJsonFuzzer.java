package jquant.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import jquant.formats.CheckpointException;
import jquant.formats.Vocabulary;
import jquant.formats.tokenizer.HfTokenizerJson;

/** The Hugging Face tokenizer.json reader (byte-level and SentencePiece-style BPE), and its tokenizer. */
class HfTokenizerJsonFuzzer {

    public static void fuzzerTestOneInput(byte[] input) {
        Vocabulary v;
        try {
            v = HfTokenizerJson.read(FuzzFiles.write("tokenizer-json", "tokenizer.json", input));
        } catch (CheckpointException refused) {
            return;
        }
        TokenizerUse.exercise(v);
    }

    /** Replays the seeds and regression inputs in {@code HfTokenizerJsonFuzzerInputs/tokenizerJson} (fuzzes under scripts/fuzz). */
    @FuzzTest
    void tokenizerJson(byte[] input) {
        fuzzerTestOneInput(input);
    }
}
