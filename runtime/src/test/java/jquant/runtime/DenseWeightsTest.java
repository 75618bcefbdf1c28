package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import jquant.formats.DType;
import jquant.runtime.kernels.MatmulKernels;
import org.junit.jupiter.api.Test;

/**
 * Float16 weights in place: decode multiplies activations scaled by 2^112, so a token with an
 * activation too large to scale must take the exact path and give the same bits; and a stored
 * infinity or NaN, which the in-register conversion cannot see, is refused before any product.
 */
class DenseWeightsTest {
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int OUT = 37;

    private static MemorySegment weights(Arena arena, SplittableRandom rnd, int in) {
        MemorySegment w = arena.allocate(2L * OUT * in, 64);
        for (int i = 0; i < OUT * in; i++) w.set(I16, 2L * i, Float.floatToFloat16((float) rnd.nextGaussian() * 0.05f));
        return w;
    }

    /** Each token alone (decode) and the tokens as a batch (prefill). */
    private static float[][] alonesAndBatch(LinearWeights m, float[] x, int n, int in) {
        float[] alone = new float[n * OUT], batch = new float[n * OUT], y = new float[OUT];
        for (int t = 0; t < n; t++) {
            m.matmul(java.util.Arrays.copyOfRange(x, t * in, (t + 1) * in), 1, y);
            System.arraycopy(y, 0, alone, t * OUT, OUT);
        }
        m.matmul(x, n, batch);
        return new float[][] {alone, batch};
    }

    /** 300 columns: whole rows per decode call; 5,000: three calls of up to 2,048, the last with a tail shorter than a vector. */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(ints = {300, 5000})
    void decodeEqualsPrefillBitForBitAlsoWhenAnActivationIsTooLargeToScale(int in) {
        SplittableRandom rnd = new SplittableRandom(5);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment w = weights(arena, rnd, in);
            for (Compute compute : new Compute[] {Compute.vector(), Compute.scalar()}) {
                LinearWeights m = new DenseWeights("blk.0.ffn_down.weight", w, DType.F16, OUT, in, compute);
                int n = 5;
                float[] x = new float[n * in];
                for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian() * 4;
                x[2 * in + 17] = 70_000f;                                   // token 2 cannot be scaled
                x[3 * in + 5] = Math.nextDown(MatmulKernels.F16_INPUT_LIMIT); // token 3 just can
                float[][] r = alonesAndBatch(m, x, n, in);
                for (int i = 0; i < r[0].length; i++) {
                    assertThat(Float.floatToRawIntBits(r[0][i])).as("output %d", i).isEqualTo(Float.floatToRawIntBits(r[1][i]));
                }
                assertThat(r[0][2 * OUT]).isFinite();
            }
        }
    }

    @Test
    void aStoredInfinityIsRefusedByNameBeforeAnyProduct() {
        SplittableRandom rnd = new SplittableRandom(6);
        int in = 300;
        for (int tokens : new int[] {1, 6}) {
            try (Arena arena = Arena.ofShared()) {
                MemorySegment w = weights(arena, rnd, in);
                w.set(I16, 2L * (31 * in + 123), (short) 0xFC00);
                LinearWeights m = new DenseWeights("blk.3.attn_q.weight", w, DType.F16, OUT, in, Compute.vector());
                assertThatThrownBy(() -> m.matmul(new float[tokens * in], tokens, new float[tokens * OUT]))
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessage("blk.3.attn_q.weight: a stored weight is not finite (weight 123 of row 31 is -Infinity)");
            }
        }
    }
}
