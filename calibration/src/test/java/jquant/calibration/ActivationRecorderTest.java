package jquant.calibration;

import jquant.runtime.Compute;
import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

class ActivationRecorderTest {

    /**
     * E[x·xᵀ] as tiles of a rank-n update per batch is the textbook sum, one fused multiply-add per token in
     * token order and one division per entry, to the bit: widths that are and are not multiples of the tiles,
     * batches of several sizes.
     */
    @Test
    void secondMomentIsTheTokenOrderSumBitForBit() {
        SplittableRandom random = new SplittableRandom(5);
        for (int d : new int[] {3, 64, 100, 333}) {
            ActivationRecorder.InputStats in = new ActivationRecorder.InputStats(d, 4, 1, true, Compute.vector());
            float[] expected = new float[d * d];
            int tokens = 0;
            for (int n : new int[] {1, 7, 37}) {
                float[] x = new float[n * d];
                for (int k = 0; k < x.length; k++) x[k] = (float) (random.nextGaussian() * (1 + k % 3));
                in.add(x, n);
                for (int t = 0; t < n; t++) {
                    for (int i = 0; i < d; i++) {
                        for (int j = i; j < d; j++) expected[i * d + j] = Math.fma(x[t * d + i], x[t * d + j], expected[i * d + j]);
                    }
                }
                tokens += n;
            }
            float[] triangle = ((SecondMoment.Held) in.meanSecondMoment()).triangle();
            for (int i = 0; i < d; i++) {
                for (int j = i; j < d; j++) {
                    assertThat(triangle[(int) SecondMoment.rowStart(d, i) + j - i]).as("d %d, (%d, %d)", d, i, j)
                            .isEqualTo((float) (expected[i * d + j] / (double) tokens));
                }
            }
        }
    }
}
