package jquant.formats.gguf;

import com.code_intelligence.jazzer.junit.FuzzTest;
import jquant.formats.CheckpointException;
import jquant.formats.Vocabulary;
import jquant.fuzz.TokenizerUse;

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
    public static void fuzzerTestOneInput(byte[] input) {
        Path file = write(input);
        Optional<Vocabulary> vocabulary;
        try (GgufFile gguf = GgufFile.open(file)) {
            vocabulary = GgufVocabulary.read(file, gguf.metadata());
        } catch (CheckpointException refused) {
            return;
        }
        vocabulary.ifPresent(TokenizerUse::exercise);
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
