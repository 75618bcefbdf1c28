package jquant.formats.gguf;

import com.code_intelligence.jazzer.junit.FuzzTest;
import jquant.formats.CheckpointException;
import jquant.formats.Vocabulary;
import jquant.runtime.Tokenizer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The GGUF vocabulary reader ({@code tokenizer.ggml.*}) on its own, without the model checks that come
 * first in a checkpoint, and the tokenizer built on it. In this package because the reader is
 * package-private; see {@code jquant.fuzz} for the other targets.
 */
class GgufVocabularyFuzzer {
    private static final String TEXT = "Once upon a time, a caf\u00e9 \u2014 \u732b and 42 <s> emoji \uD83D\uDE00\n\tend.";

    public static void fuzzerTestOneInput(byte[] input) {
        Path file = write(input);
        Optional<Vocabulary> vocabulary;
        try (GgufFile gguf = GgufFile.open(file)) {
            vocabulary = GgufVocabulary.read(file, gguf.metadata());
        } catch (CheckpointException refused) {
            return;
        }
        if (vocabulary.isEmpty()) return;
        Tokenizer tokenizer;
        try {
            tokenizer = Tokenizer.of(vocabulary.get());
        } catch (IllegalArgumentException refused) {
            return;
        }
        tokenizer.decode(tokenizer.encode(TEXT));
    }

    private static Path write(byte[] input) {
        try {
            Path dir = Path.of(System.getProperty("java.io.tmpdir"), "jquant-fuzz-" + ProcessHandle.current().pid(), "gguf-vocabulary");
            Files.createDirectories(dir);
            return Files.write(dir.resolve("vocab.gguf"), input);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the fuzz input file", e);
        }
    }

    /** Replays the seeds and regression inputs in {@code GgufVocabularyFuzzerInputs/ggufVocabulary}. */
    @FuzzTest
    void ggufVocabulary(byte[] input) {
        fuzzerTestOneInput(input);
    }
}
