package jquant.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import jquant.formats.CheckpointException;
import jquant.formats.Vocabulary;
import jquant.formats.llama2c.Llama2cTokenizerReader;

/** The llama2.c tokenizer.bin reader, and the tokenizer built on what it read. */
class Llama2cTokenizerFuzzer {

    public static void fuzzerTestOneInput(byte[] input) {
        Vocabulary v;
        try {
            v = Llama2cTokenizerReader.read(FuzzFiles.write("llama2c-tokenizer", "tokenizer.bin", input));
        } catch (CheckpointException refused) {
            return;
        }
        TokenizerUse.exercise(v);
    }

    /** Replays the seeds and regression inputs in {@code Llama2cTokenizerFuzzerInputs/llama2cTokenizer} (fuzzes under scripts/fuzz). */
    @FuzzTest
    void llama2cTokenizer(byte[] input) {
        fuzzerTestOneInput(input);
    }
}
