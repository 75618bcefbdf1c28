package jquant.quantize;

import jquant.core.WorkerPool;
import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class InverseCholeskyTest {

    /** X·Xᵀ/m + ridge·I for m Gaussian samples with a few correlated channels: symmetric positive definite. */
    static double[] secondMoment(SplittableRandom random, int n, int samples, double ridge) {
        double[] h = new double[n * n];
        double[] x = new double[n];
        for (int t = 0; t < samples; t++) {
            double common = random.nextGaussian();
            for (int i = 0; i < n; i++) x[i] = random.nextGaussian() * (1 + i % 5) + (i % 3 == 0 ? 2 * common : 0);
            for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) h[i * n + j] += x[i] * x[j] / samples;
        }
        for (int i = 0; i < n; i++) h[i * n + i] += ridge;
        return h;
    }

    /**
     * GPTQ's own route, written the textbook way: lower Cholesky L of H (H = L·Lᵀ), H⁻¹ = L⁻ᵀ·L⁻¹, then the
     * upper Cholesky factor of H⁻¹. The reversed-order route must land on the same unique factor.
     */
    static double[] gptqRoute(double[] h, int n) {
        double[] l = new double[n * n];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j <= i; j++) {
                double s = h[i * n + j];
                for (int k = 0; k < j; k++) s -= l[i * n + k] * l[j * n + k];
                l[i * n + j] = i == j ? Math.sqrt(s) : s / l[j * n + j];
            }
        }
        double[] li = new double[n * n];
        for (int c = 0; c < n; c++) {
            for (int i = c; i < n; i++) {
                double s = i == c ? 1 : 0;
                for (int k = c; k < i; k++) s -= l[i * n + k] * li[k * n + c];
                li[i * n + c] = s / l[i * n + i];
            }
        }
        double[] inv = new double[n * n];
        for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = Math.max(i, j); k < n; k++) s += li[k * n + i] * li[k * n + j];
            inv[i * n + j] = s;
        }
        double[] u = new double[n * n];
        for (int i = 0; i < n; i++) {
            double s = inv[i * n + i];
            for (int k = 0; k < i; k++) s -= u[k * n + i] * u[k * n + i];
            u[i * n + i] = Math.sqrt(s);
            for (int j = i + 1; j < n; j++) {
                double t = inv[i * n + j];
                for (int k = 0; k < i; k++) t -= u[k * n + i] * u[k * n + j];
                u[i * n + j] = t / u[i * n + i];
            }
        }
        return u;
    }

    static float[] floats(double[] h) {
        float[] f = new float[h.length];
        for (int i = 0; i < f.length; i++) f[i] = (float) h[i];
        return f;
    }

    static float[] factor(float[] h, int n, FusedAxpy axpy) {
        float[] u = h.clone();
        InverseCholesky.upperFactorOfInverseInPlace(u, n, axpy);
        return u;
    }

    @Test
    void givesGptqsFactorOfTheInverse() {
        SplittableRandom random = new SplittableRandom(11);
        for (int n : new int[] {1, 2, 7, 33, 130}) {
            float[] h = floats(secondMoment(random, n, 3 * n, 0.05));
            double[] exact = new double[h.length];
            for (int i = 0; i < h.length; i++) exact[i] = h[i];
            float[] u = factor(h, n, FusedAxpy.VECTOR);
            double[] expected = gptqRoute(exact, n);
            double largest = 0;
            for (double v : expected) largest = Math.max(largest, Math.abs(v));
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < n; j++) {
                    if (j < i) assertThat(u[i * n + j]).as("below the diagonal").isZero();
                    else assertThat((double) u[i * n + j]).as("n %d, U[%d][%d]", n, i, j).isCloseTo(expected[i * n + j], org.assertj.core.data.Offset.offset(2e-5 * largest));
                }
            }
            // UᵀU·H = I: the definition, checked directly as well.
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < n; j++) {
                    double s = 0;
                    for (int k = 0; k < n; k++) {
                        double inv = 0;
                        for (int m = 0; m <= Math.min(i, k); m++) inv += (double) u[m * n + i] * u[m * n + k];
                        s += inv * h[k * n + j];
                    }
                    assertThat(s).as("n %d, (UᵀU·H)[%d][%d]", n, i, j).isCloseTo(i == j ? 1 : 0, org.assertj.core.data.Offset.offset(1e-3));
                }
            }
        }
    }

    /** The blocked Cholesky gives every element the updates of the textbook loop in the same order: the same bits. */
    @Test
    void blockedCholeskyIsTheTextbookLoopBitForBit() {
        SplittableRandom random = new SplittableRandom(13);
        for (int n : new int[] {1, 5, 64, 65, 200, 333}) {
            float[] a = floats(secondMoment(random, n, 2 * n, 0.01));
            float[] expected = a.clone();
            for (int k = 0; k < n; k++) {
                float root = (float) Math.sqrt(expected[k * n + k]);
                expected[k * n + k] = root;
                for (int j = k + 1; j < n; j++) expected[k * n + j] /= root;
                for (int i = k + 1; i < n; i++) {
                    for (int j = i; j < n; j++) expected[i * n + j] = Math.fma(-expected[k * n + i], expected[k * n + j], expected[i * n + j]);
                }
            }
            for (int i = 1; i < n; i++) java.util.Arrays.fill(expected, i * n, i * n + i, 0f);
            InverseCholesky.choleskyUpper(a, n, FusedAxpy.VECTOR);
            assertThat(a).as("n %d", n).isEqualTo(expected);
        }
    }

    @Test
    void simdKernelScalarTwinAndThreadCountGiveTheSameBits() {
        SplittableRandom random = new SplittableRandom(12);
        for (int n : new int[] {3, 17, 64, 129, 200, 300}) {
            float[] h = floats(secondMoment(random, n, 2 * n, 0.01));
            float[] simd = factor(h, n, FusedAxpy.VECTOR);
            assertThat(simd).as("n %d", n).isEqualTo(factor(h, n, FusedAxpy.SCALAR));
            try (WorkerPool one = new WorkerPool(1)) {
                assertThat(one.call(() -> factor(h, n, FusedAxpy.VECTOR))).as("n %d, one thread", n).isEqualTo(simd);
            }
        }
    }

    @Test
    void refusesMatricesThatAreNotPositiveDefinite() {
        float[] singular = {1, 1, 1, 1};
        assertThatThrownBy(() -> InverseCholesky.upperFactorOfInverseInPlace(singular, 2)).hasMessageContaining("not positive definite");
        assertThatThrownBy(() -> InverseCholesky.upperFactorOfInverseInPlace(new float[5], 2)).hasMessageContaining("not a 2×2 matrix");
    }
}
