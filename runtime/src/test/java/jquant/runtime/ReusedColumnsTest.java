package jquant.runtime;

import jquant.runtime.ggml.Q8Activations;
import jquant.runtime.ggml.Q8Activations.Kind;
import jquant.runtime.ternary.ActivationBlocks;
import org.junit.jupiter.api.Test;

import java.util.Random;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The decode paths' reused input columns ({@link jquant.core.PerThreadRing}): a thread gets its one
 * column per shape back, refilled with the values a new column would hold; another thread gets its own;
 * a fifth shape takes the oldest slot.
 */
class ReusedColumnsTest {

    private static float[] random(int n, long seed) {
        Random rnd = new Random(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) rnd.nextGaussian();
        return x;
    }

    @Test
    void ternaryColumnsAreOnePerLengthAndThreadWithTheValuesOfANewOne() throws Exception {
        float[] a = random(512, 1), b = random(512, 2);
        ActivationBlocks first = ActivationBlocks.quantizeReused(a, 0, 512);
        ActivationBlocks again = ActivationBlocks.quantizeReused(b, 0, 512);
        assertThat(again).isSameAs(first);
        ActivationBlocks fresh = ActivationBlocks.quantize(b, 0, 512);
        for (int i = 0; i < 512; i++) assertThat(again.q(i)).isEqualTo(fresh.q(i));
        for (int k = 0; k < fresh.blocks(); k++) {
            assertThat(again.scale(k)).isEqualTo(fresh.scale(k));
            assertThat(again.sum(k)).isEqualTo(fresh.sum(k));
        }
        assertThat(ActivationBlocks.quantizeReused(random(256, 3), 0, 256)).isNotSameAs(first);
        assertThat(ActivationBlocks.quantizeReused(a, 0, 512)).isSameAs(first);
        ActivationBlocks other = CompletableFuture.supplyAsync(() -> ActivationBlocks.quantizeReused(a, 0, 512)).get();
        assertThat(other).isNotSameAs(first);
        for (int i = 0; i < 4; i++) {   // lengths no other test asks for: each takes a slot
            int cols = ActivationBlocks.BLOCK * (101 + i);
            ActivationBlocks.quantizeReused(random(cols, i), 0, cols);
        }
        assertThat(ActivationBlocks.quantizeReused(a, 0, 512)).as("four newer lengths took every slot").isNotSameAs(first);
    }

    @Test
    void q8ColumnsAreOnePerKindLengthAndThreadWithTheValuesOfANewOne() throws Exception {
        float[] a = random(512, 4), b = random(512, 5);
        Q8Activations first = Q8Activations.quantizeReused(Kind.Q8_K, a, 512);
        Q8Activations again = Q8Activations.quantizeReused(Kind.Q8_K, b, 512);
        assertThat(again).isSameAs(first);
        Q8Activations fresh = Q8Activations.quantize(Kind.Q8_K, b, 1, 512, null);
        for (int k = 0; k < 512; k++) assertThat(again.q(0, k)).isEqualTo(fresh.q(0, k));
        for (int g = 0; g < 512 / Kind.Q8_K.block; g++) assertThat(again.scale(0, g)).isEqualTo(fresh.scale(0, g));
        for (int g = 0; g < 512 / Q8Activations.SUM_GROUP; g++) assertThat(again.sum16(0, g)).isEqualTo(fresh.sum16(0, g));
        assertThat(Q8Activations.quantizeReused(Kind.Q8_0, a, 512)).isNotSameAs(first);
        assertThat(Q8Activations.quantizeReused(Kind.Q8_K, a, 512)).isSameAs(first);
        assertThat(CompletableFuture.supplyAsync(() -> Q8Activations.quantizeReused(Kind.Q8_K, a, 512)).get()).isNotSameAs(first);
    }
}
