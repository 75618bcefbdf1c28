package jquant.bench;

import java.nio.file.Path;
import java.util.Arrays;
import jquant.runtime.KernelChoice;
import jquant.runtime.LlamaModel;
import jquant.runtime.LoadedModel;
import jquant.runtime.PackedModelLoader;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two copies of this build, each in its own class loader, decode the shipped stories260K side by side:
 * each decodes the tokens an independent greedy generation gives (the whole sequence run again through
 * the prefill path for every token, in this test's own loader), and both are timed.
 */
class SideBySideTest {
    /** The prompt {@code SideBySide.Steps} feeds at depth 8. */
    private static final int[] PROMPT = {1, 2, 3, 4, 5, 6, 7, 8};

    @Test
    void twoLoadersOfTheSameBuildDecodeWhatAGreedyGenerationGives() throws Exception {
        Path model = Path.of("..", "models", "stories260K", "stories260K.bin");
        assertThat(model).exists();
        String classPath = System.getProperty("java.class.path");
        SideBySide.Result r = SideBySide.compare(classPath, classPath, model.toString(), 1, 4, 3, "weight-only", PROMPT.length);

        int[] expected = greedy(model, r.baselineTokens().length);
        assertThat(r.baselineTokens()).hasSize(3 * 4 + 3 * 4).containsExactly(expected);   // three warm-up calls, three rounds
        assertThat(r.candidateTokens()).containsExactly(expected);
        assertThat(r.firstDifference()).isEqualTo(-1);
        for (int i = 0; i < 3; i++) {
            assertThat(r.baselineMs()[i]).isPositive().isFinite();
            assertThat(r.candidateMs()[i]).isPositive().isFinite();
        }
    }

    /**
     * The {@code n} tokens after the first one greedy decoding gives after {@link #PROMPT} (what
     * {@code SideBySide.Steps} records), each the argmax of the last logits of a forward pass over the
     * whole sequence so far.
     */
    private static int[] greedy(Path model, int n) throws Exception {
        try (LoadedModel loaded = LoadedModel.open(model, null, PackedModelLoader.Mode.WEIGHT_ONLY, KernelChoice.AUTO)) {
            LlamaModel m = loaded.model();
            int vocab = m.config().vocabSize();
            int[] sequence = Arrays.copyOf(PROMPT, PROMPT.length + n + 1);
            for (int length = PROMPT.length; length < sequence.length; length++) {
                float[] logits = m.newSession(length).forward(Arrays.copyOf(sequence, length), 0);
                int best = 0, last = (length - 1) * vocab;
                for (int t = 1; t < vocab; t++) if (logits[last + t] > logits[last + best]) best = t;
                sequence[length] = best;
            }
            return Arrays.copyOfRange(sequence, PROMPT.length + 1, sequence.length);
        }
    }
}
