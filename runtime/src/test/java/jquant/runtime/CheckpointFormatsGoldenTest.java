package jquant.runtime;

import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.RopeConvention;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import jquant.testsupport.Stories260K;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

/**
 * The same models in every checkpoint format jquant reads give run.c's golden logits and tokens:
 * llama2.c (both versions), Hugging Face safetensors (rotate-half RoPE, permuted q/k rows used as
 * stored) and GGUF (float, and TQ2_0 whose dequantized weights are bit-identical to float).
 */
@Slow
class CheckpointFormatsGoldenTest {

    @ParameterizedTest
    @ValueSource(strings = {"stories260K.bin", "stories260K-v1.bin", "stories260K-hf", "stories260K-f32.gguf"})
    void stories260kLogitsMatchRunC(String name) throws IOException {
        float[] golden = Stories260K.floats(SharedFiles.model("golden_logits_pos0-3.f32"));
        try (Checkpoint c = Checkpoints.open(SharedFiles.model(name), tokenizerFor(name))) {
            assertThat(c.rope()).isEqualTo(name.endsWith("-hf") ? RopeConvention.ROTATE_HALF : RopeConvention.ADJACENT_PAIRS);
            float[] logits = LlamaModel.load(c).newSession().forward(new int[] {1, 403, 407, 261}, 0);
            for (int i = 0; i < golden.length; i++) {
                assertThat(logits[i]).as("%s logit %d at position %d", name, i % 512, i / 512)
                        .isCloseTo(golden[i], offset(1e-4f * Math.max(1f, Math.abs(golden[i]))));
            }
        }
    }

    @ParameterizedTest
    @CsvSource({
            "golden_generation.txt, stories260K.bin",
            "golden_generation.txt, stories260K-v1.bin",
            "golden_generation.txt, stories260K-hf",
            "golden_generation.txt, stories260K-f32.gguf",
            "tinystories-6M/golden_generation.txt, tinystories-6M/tinystories-6M.bin",
            "tinystories-6M/golden_generation.txt, tinystories-6M/tinystories-6M-hf",
            "tinystories-6M/golden_generation.txt, tinystories-6M/tinystories-6M-f32.gguf",
            "tinystories-6M-ternary/golden_generation.txt, tinystories-6M-ternary/tinystories-6M-ternary.bin",
            "tinystories-6M-ternary/golden_generation.txt, tinystories-6M-ternary/tinystories-6M-ternary-hf",
            "tinystories-6M-ternary/golden_generation.txt, tinystories-6M-ternary/tinystories-6M-ternary-f32.gguf",
            "tinystories-6M-ternary/golden_generation.txt, tinystories-6M-ternary/tinystories-6M-ternary-TQ2_0.gguf"})
    void greedyGenerationIsGolden(String golden, String name) throws IOException {
        try (Checkpoint c = Checkpoints.open(SharedFiles.model(name), tokenizerFor(name))) {
            Tokenizer tokenizer = Tokenizer.of(c.vocabulary().orElseThrow());
            int[] prompt = tokenizer.encode("Once upon a time");
            assertThat(prompt).as("prompt ids from %s's own vocabulary", name).containsExactly(1, 403, 407, 261, 378);
            int[] continuation = Generation.generate(LlamaModel.load(c), prompt, 200 - (prompt.length - 1), Sampler.greedy(), -1, t -> {});
            int[] positions1to200 = IntStream.concat(Arrays.stream(prompt, 1, prompt.length), Arrays.stream(continuation)).toArray();
            assertThat(positions1to200).containsExactly(Stories260K.goldenIds(SharedFiles.model(golden)));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"stories260K-hf", "stories260K-f32.gguf"})
    void everyVocabularySourceTokenizesTheEvaluationTextAlike(String name) throws IOException {
        String text = Files.readString(SharedFiles.data("tinystories-valid-sample.txt"));
        try (Checkpoint c = Checkpoints.open(SharedFiles.model(name));
             Checkpoint reference = Checkpoints.open(SharedFiles.model("stories260K.bin"))) {
            int[] ids = Tokenizer.of(c.vocabulary().orElseThrow()).encode(text);
            assertThat(ids).hasSize(145_758).containsExactly(Tokenizer.of(reference.vocabulary().orElseThrow()).encode(text));
        }
    }

    /** llama2.c checkpoints without a tokenizer beside them use the shared tok512.bin. */
    private static Path tokenizerFor(String name) {
        return name.endsWith(".bin") && name.contains("/") ? SharedFiles.model("tok512.bin") : null;
    }
}
