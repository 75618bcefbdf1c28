package jquant.quantize;

import jquant.quantize.SymmetricChannelQuantizer.QuantizedMatrix;
import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;

import static org.assertj.core.api.Assertions.assertThat;

class ErrorCompensatedRoundingTest {

    /** E[x·xᵀ] of {@code samples} inputs whose channels are strongly correlated, as a layer's inputs are. */
    static float[] correlatedMoment(SplittableRandom random, int n, int samples) {
        double[] h = InverseCholeskyTest.secondMoment(random, n, samples, 0);
        float[] f = new float[h.length];
        for (int i = 0; i < f.length; i++) f[i] = (float) h[i];
        return f;
    }

    static byte[] widths(SplittableRandom random, int rows) {
        byte[] bits = new byte[rows];
        for (int r = 0; r < rows; r++) bits[r] = (byte) random.nextInt(1, 9);
        return bits;
    }

    /** (w − ŵ)ᵀ·H·(w − ŵ) summed over rows: the layer's squared output error on the inputs H came from. */
    static double outputError(float[] w, QuantizedMatrix q, float[] h) {
        int n = q.cols();
        float[] wq = q.dequantize();
        double total = 0;
        for (int r = 0; r < q.rows(); r++) {
            for (int i = 0; i < n; i++) {
                double di = w[r * n + i] - wq[r * n + i];
                for (int j = 0; j < n; j++) total += di * h[i * n + j] * (w[r * n + j] - wq[r * n + j]);
            }
        }
        return total;
    }

    @Test
    void simdKernelScalarTwinAndThreadCountGiveTheSameBits() throws Exception {
        SplittableRandom random = new SplittableRandom(21);
        for (int[] shape : new int[][] {{1, 5}, {9, 33}, {40, 130}}) {
            int rows = shape[0], cols = shape[1];
            float[] w = GreedyBitAllocatorTest.randomMatrix(random, rows, cols);
            byte[] bits = widths(random, rows);
            var hessian = ErrorCompensatedRounding.Hessian.of(correlatedMoment(random, cols, 2 * cols), cols);
            QuantizedMatrix simd = ErrorCompensatedRounding.quantize(w, rows, cols, bits, hessian, FusedAxpy.VECTOR);
            QuantizedMatrix scalar = ErrorCompensatedRounding.quantize(w, rows, cols, bits, hessian, FusedAxpy.SCALAR);
            assertThat(simd.values()).isEqualTo(scalar.values());
            assertThat(simd.scales()).isEqualTo(scalar.scales());
            ForkJoinPool single = new ForkJoinPool(1);
            try {
                QuantizedMatrix oneThread = single.submit(() -> ErrorCompensatedRounding.quantize(w, rows, cols, bits, hessian)).get();
                assertThat(oneThread.values()).isEqualTo(simd.values());
                assertThat(oneThread.scales()).isEqualTo(simd.scales());
            } finally {
                single.shutdown();
            }
        }
    }

    /** Uncorrelated inputs of equal power (H = I) leave nothing to compensate: GPTQ is round-to-nearest, codes and scales. */
    @Test
    void withUncorrelatedInputsItIsRoundToNearest() {
        SplittableRandom random = new SplittableRandom(22);
        int rows = 24, cols = 96;
        float[] w = GreedyBitAllocatorTest.randomMatrix(random, rows, cols);
        byte[] bits = widths(random, rows);
        float[] identity = new float[cols * cols];
        for (int i = 0; i < cols; i++) identity[i * cols + i] = 1;
        QuantizedMatrix gptq = ErrorCompensatedRounding.quantize(w, rows, cols, bits, ErrorCompensatedRounding.Hessian.of(identity, cols));
        QuantizedMatrix nearest = SymmetricChannelQuantizer.quantize(w, rows, cols, bits);
        assertThat(gptq.values()).isEqualTo(nearest.values());
        assertThat(gptq.scales()).isEqualTo(nearest.scales());
    }

    /** The point of it: on correlated inputs the layer's output error is smaller than round-to-nearest's, at every width. */
    @Test
    void correlatedInputsGetASmallerOutputErrorThanRoundToNearest() {
        SplittableRandom random = new SplittableRandom(23);
        int rows = 32, cols = 128;
        float[] w = GreedyBitAllocatorTest.randomMatrix(random, rows, cols);
        float[] h = correlatedMoment(random, cols, 4 * cols);
        var hessian = ErrorCompensatedRounding.Hessian.of(h, cols);
        for (int b = 2; b <= 8; b++) {
            byte[] bits = new byte[rows];
            java.util.Arrays.fill(bits, (byte) b);
            double gptq = outputError(w, ErrorCompensatedRounding.quantize(w, rows, cols, bits, hessian), h);
            double nearest = outputError(w, SymmetricChannelQuantizer.quantize(w, rows, cols, bits), h);
            assertThat(gptq).as("%d bits", b).isLessThan(0.9 * nearest);
        }
    }
}
