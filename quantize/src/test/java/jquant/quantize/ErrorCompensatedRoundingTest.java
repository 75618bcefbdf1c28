package jquant.quantize;

import jquant.core.WorkerPool;
import jquant.quantize.SymmetricChannelQuantizer.QuantizedMatrix;
import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

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

    /**
     * GPTQ written the plain way, one row and one column at a time, each error spread at once over every
     * later column, and H·v summed row of H by row: the blocked, tiled code must give the same bits.
     */
    static QuantizedMatrix columnAtATime(float[] matrix, int rows, int cols, byte[] bits, ErrorCompensatedRounding.Hessian hessian) {
        float[] u = hessian.inverseFactor(), h = hessian.moment();
        byte[] values = new byte[matrix.length];
        float[] scales = new float[rows];
        for (int r = 0; r < rows; r++) {
            int offset = r * cols;
            SymmetricChannelQuantizer.QuantizedRow nearest = SymmetricChannelQuantizer.quantizeRow(matrix, offset, cols, bits[r], r);
            if (nearest.scale() == 0) {
                System.arraycopy(nearest.values(), 0, values, offset, cols);
                continue;
            }
            GridKernel.Shape shape = GridKernel.Shape.of(bits[r]);
            float spacing = SymmetricChannelQuantizer.chooseGrid(matrix, offset, cols, bits[r], SymmetricChannelQuantizer.maxAbs(matrix, offset, cols, r),
                    SymmetricChannelQuantizer.energy(matrix, offset, cols)).inverseSpacing();
            float[] w = java.util.Arrays.copyOfRange(matrix, offset, offset + cols);
            for (int j = 0; j < cols; j++) {
                int v = GridKernel.code(shape, w[j], spacing);
                values[offset + j] = (byte) v;
                float e = (w[j] - nearest.scale() * v) / u[j * cols + j];
                for (int k = j + 1; k < cols; k++) w[k] = Math.fma(-e, u[j * cols + k], w[k]);
            }
            double wHv = 0, vHv = 0;
            for (int k = 0; k < cols; k++) {
                float hv = 0;
                for (int j = 0; j < cols; j++) hv = Math.fma((float) values[offset + j], h[j * cols + k], hv);
                wHv += matrix[offset + k] * (double) hv;
                vHv += values[offset + k] * (double) hv;
            }
            float scale = vHv > 0 ? (float) (wHv / vHv) : 0;
            scales[r] = scale > 0 && Float.isFinite(scale) ? scale : nearest.scale();
        }
        return new QuantizedMatrix(rows, cols, bits, values, scales);
    }

    @Test
    void blockedRoundingIsTheColumnLoopBitForBitOnEveryKernelAndThreadCount() {
        SplittableRandom random = new SplittableRandom(21);
        for (int[] shape : new int[][] {{1, 5}, {9, 33}, {40, 130}, {70, 300}}) {
            int rows = shape[0], cols = shape[1];
            float[] w = GreedyBitAllocatorTest.randomMatrix(random, rows, cols);
            byte[] bits = widths(random, rows);
            var hessian = ErrorCompensatedRounding.Hessian.of(correlatedMoment(random, cols, 2 * cols), cols);
            QuantizedMatrix expected = columnAtATime(w, rows, cols, bits, hessian);
            QuantizedMatrix simd = ErrorCompensatedRounding.quantize(w, rows, cols, bits, hessian, FusedAxpy.VECTOR);
            QuantizedMatrix scalar = ErrorCompensatedRounding.quantize(w, rows, cols, bits, hessian, FusedAxpy.SCALAR);
            assertThat(simd.values()).as("%d×%d", rows, cols).isEqualTo(expected.values());
            assertThat(simd.scales()).as("%d×%d", rows, cols).isEqualTo(expected.scales());
            assertThat(scalar.values()).isEqualTo(expected.values());
            assertThat(scalar.scales()).isEqualTo(expected.scales());
            try (WorkerPool one = new WorkerPool(1)) {
                QuantizedMatrix oneThread = one.call(() -> ErrorCompensatedRounding.quantize(w, rows, cols, bits, hessian));
                assertThat(oneThread.values()).isEqualTo(expected.values());
                assertThat(oneThread.scales()).isEqualTo(expected.scales());
            }
        }
    }

    /**
     * Act-order is the column-order rounding of the problem with its columns sorted by decreasing H[j][j]
     * (ties in column order), its codes put back: built here by hand, with H and W permuted outside the
     * code under test. The input matrix is left as it was.
     */
    @Test
    void activationOrderIsTheColumnLoopOnTheColumnsSortedByTheirPower() {
        SplittableRandom random = new SplittableRandom(24);
        for (int[] shape : new int[][] {{1, 5}, {9, 33}, {40, 130}, {70, 300}}) {
            int rows = shape[0], cols = shape[1];
            float[] w = GreedyBitAllocatorTest.randomMatrix(random, rows, cols), original = w.clone();
            byte[] bits = widths(random, rows);
            float[] h = correlatedMoment(random, cols, 2 * cols);
            h[0] = h[cols + 1] = Math.max(h[0], h[cols + 1]);   // a tie (a larger diagonal keeps H positive definite): columns 0 and 1 keep their order
            Integer[] sorted = new Integer[cols];
            for (int j = 0; j < cols; j++) sorted[j] = j;
            java.util.Arrays.sort(sorted, (a, b) -> Float.compare(h[b * cols + b], h[a * cols + a]));
            float[] ph = new float[cols * cols], pw = new float[rows * cols];
            for (int i = 0; i < cols; i++) for (int j = 0; j < cols; j++) ph[i * cols + j] = h[sorted[i] * cols + sorted[j]];
            for (int r = 0; r < rows; r++) for (int k = 0; k < cols; k++) pw[r * cols + k] = w[r * cols + sorted[k]];
            QuantizedMatrix permuted = columnAtATime(pw, rows, cols, bits, ErrorCompensatedRounding.Hessian.of(ph, cols));
            byte[] expected = new byte[rows * cols];
            for (int r = 0; r < rows; r++) for (int k = 0; k < cols; k++) expected[r * cols + sorted[k]] = permuted.values()[r * cols + k];

            var hessian = ErrorCompensatedRounding.Hessian.activationOrder(h.clone(), cols);
            assertThat(hessian.order()).containsExactly(java.util.Arrays.stream(sorted).mapToInt(Integer::intValue).toArray());
            QuantizedMatrix act = ErrorCompensatedRounding.quantize(w, rows, cols, bits, hessian);
            assertThat(act.values()).as("%d×%d", rows, cols).isEqualTo(expected);
            assertThat(act.scales()).as("%d×%d", rows, cols).isEqualTo(permuted.scales());
            assertThat(w).isEqualTo(original);
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
