package jquant.runtime;

import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The same input gives the same logits to the last bit however far the JIT has compiled the kernels:
 * the first passes run interpreted or in C1, later ones in C2. Ternary models quantize activations to
 * int8, where a last-bit float difference becomes a different code, so this is what makes stock vs T2P
 * perplexities comparable to every printed digit.
 */
@Slow
class ReproducibilityTest {
    private static final int REPEATS = 40;

    private static int[] tokens(int n, int vocab) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) t[i] = 1 + (i * 7919) % (vocab - 1);
        return t;
    }

    private static void assertRepeatable(LlamaModel model) {
        int[] input = tokens(64, model.config().vocabSize());
        float[] first = model.newSession(64).forward(input, 0, 0);
        for (int r = 1; r < REPEATS; r++) {
            float[] again = model.newSession(64).forward(input, 0, 0);
            assertThat(Arrays.equals(again, first)).as("pass %d of %d gives the first pass's logits bit for bit", r, REPEATS).isTrue();
        }
    }

    @Test
    void denseForwardIsBitReproducibleAcrossJitTiers() throws Exception {
        try (Checkpoint c = Checkpoints.open(SharedFiles.model("stories260K.bin"))) {
            assertRepeatable(LlamaModel.load(c, Compute.vector(), LinearWeightsFactory.dense(Compute.vector())));
        }
    }

    @Test
    void ternaryForwardIsBitReproducibleAcrossJitTiers() throws Exception {
        try (Checkpoint c = Checkpoints.open(SharedFiles.model("tinystories-6M-ternary/tinystories-6M-ternary-TQ2_0.gguf"))) {
            Compute compute = Compute.vector();
            assertRepeatable(LlamaModel.load(c, compute, new TernaryWeightsFactory(compute, TernaryWeightsFactory.Layout.T2P, true)));
        }
    }
}
