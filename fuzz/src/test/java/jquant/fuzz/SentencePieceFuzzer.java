package jquant.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import jquant.formats.Vocabulary;
import jquant.formats.tokenizer.SentencePieceModel;

/** The SentencePiece ModelProto reader ({@code parse} refuses with IllegalArgumentException, documented), and its tokenizer. */
class SentencePieceFuzzer {

    public static void fuzzerTestOneInput(byte[] input) {
        Vocabulary v;
        try {
            v = SentencePieceModel.parse(input);
        } catch (IllegalArgumentException refused) {
            return;
        }
        TokenizerUse.exercise(v);
    }

    /** Replays the seeds and regression inputs in {@code SentencePieceFuzzerInputs/sentencePiece} (fuzzes under scripts/fuzz). */
    @FuzzTest
    void sentencePiece(byte[] input) {
        fuzzerTestOneInput(input);
    }
}
