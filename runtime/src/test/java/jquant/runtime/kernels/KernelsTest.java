package jquant.runtime.kernels;

import jquant.core.WorkerPool;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.Arrays;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

/**
 * The Vector API kernels against their scalar twins on seeded random data. They differ only in the
 * order of float additions, so the bound is the classic one for a reassociated sum of {@code n}
 * products: {@code |error| ≤ n · 2^-24 · Σ|a_k·b_k|} (with a factor 2 of slack).
 */
class KernelsTest {
    private static final double U = Math.ulp(1f) / 2; // unit roundoff 2^-24
    private final VectorKernels vector = new VectorKernels();
    private final ScalarKernels scalar = new ScalarKernels();

    private static float[] random(SplittableRandom rnd, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) a[i] = (float) (rnd.nextDouble() * 2 - 1);
        return a;
    }

    @ParameterizedTest
    @CsvSource({"1", "8", "15", "16", "64", "172", "1001"})
    void vectorOpsMatchScalar(int len) {
        SplittableRandom rnd = new SplittableRandom(len);
        float[] a = random(rnd, len + 3);
        float[] b = random(rnd, len + 5);

        double magnitude = 0;
        for (int k = 0; k < len; k++) magnitude += Math.abs(a[3 + k] * b[5 + k]);
        assertThat((double) vector.dot(a, 3, b, 5, len))
                .isCloseTo(scalar.dot(a, 3, b, 5, len), offset(2 * len * U * magnitude + 1e-30));

        float[] yv = b.clone();
        float[] ys = b.clone();
        vector.axpy(0.37f, a, 3, yv, 5, len);
        scalar.axpy(0.37f, a, 3, ys, 5, len);
        // fused multiply-add rounds once where the scalar loop rounds twice: one rounding apart
        for (int k = 0; k < yv.length; k++) assertThat(yv[k]).isCloseTo(ys[k], offset(2e-7f));

        float[] weight = random(rnd, len);
        float[] nv = new float[len + 2];
        float[] ns = new float[len + 2];
        vector.rmsnorm(a, 3, weight, 1e-5f, nv, 2, len);
        scalar.rmsnorm(a, 3, weight, 1e-5f, ns, 2, len);
        for (int k = 0; k < nv.length; k++) assertThat(nv[k]).isCloseTo(ns[k], offset(1e-5f * (1 + Math.abs(ns[k]))));

        float[] logits = random(rnd, len + 1);
        for (int k = 0; k < logits.length; k++) logits[k] *= 30; // wide range: exercises the max shift
        float[] sv = logits.clone();
        float[] ss = logits.clone();
        vector.softmax(sv, 1, len);
        scalar.softmax(ss, 1, len);
        double total = 0;
        for (int k = 1; k <= len; k++) {
            assertThat(sv[k]).isCloseTo(ss[k], offset(1e-6f + 1e-5f * ss[k]));
            total += sv[k];
        }
        assertThat(total).isCloseTo(1.0, offset(1e-5));
        assertThat(sv[0]).isEqualTo(logits[0]);

        float[] gv = logits.clone();
        float[] gs = logits.clone();
        float[] up = random(rnd, len + 1);
        vector.siluMul(gv, up, 1, len);
        scalar.siluMul(gs, up, 1, len);
        for (int k = 1; k <= len; k++) {
            assertThat(gv[k]).isCloseTo(gs[k], offset(1e-6f * (1 + Math.abs(gs[k]))));
            double g = logits[k];
            assertThat((double) gs[k]).isCloseTo(g / (1 + Math.exp(-g)) * up[k], offset(1e-5 * (1 + Math.abs(g))));
        }
        assertThat(gv[0]).isEqualTo(logits[0]);
        assertThat(gs[0]).isEqualTo(logits[0]);
    }

    @Test
    void softmaxOfHugeLogitsDoesNotOverflow() {
        float[] x = {1e30f, 1e30f, -1e30f};
        vector.softmax(x, 0, 3);
        assertThat(x).containsExactly(0.5f, 0.5f, 0f);
    }

    @Test
    void workerFailuresReachTheCaller() {
        try (WorkerPool pool = new WorkerPool(2)) {
            assertThatThrownBy(() -> pool.forRange(100, 1 << 20, (worker, s, e) -> {
                if (s <= 57 && 57 < e) throw new IllegalStateException("boom at item 57");
            })).isInstanceOf(IllegalStateException.class).hasMessage("boom at item 57");
            int[] runs = new int[1000];
            pool.forRange(runs.length, 1 << 20, (worker, s, e) -> { for (int i = s; i < e; i++) runs[i]++; });
            assertThat(runs).containsOnly(1);   // the pool still works after a failure, each item exactly once
        }
    }

    /**
     * The blocked attention kernels give each query row exactly the bits of the definitions they
     * override (per-dimension axpy onto zeros, one dot per value row, with this class's own axpy and
     * dot): four-row blocks, the rows left over, vector bodies and scalar tails of every length.
     */
    @ParameterizedTest
    @CsvSource({"1, 8, 1", "3, 8, 15", "4, 64, 16", "5, 64, 17", "8, 64, 100", "9, 16, 257", "4, 64, 1024"})
    void attentionBlocksGiveTheBitsOfTheirDefinitions(int rows, int dims, int len) {
        Kernels definition = new Kernels() {
            public float dot(float[] a, int aOff, float[] b, int bOff, int n) { return vector.dot(a, aOff, b, bOff, n); }
            public void axpy(float a, float[] x, int xOff, float[] y, int yOff, int n) { vector.axpy(a, x, xOff, y, yOff, n); }
            public void rmsnorm(float[] x, int xOff, float[] w, float eps, float[] out, int outOff, int n) { throw new AssertionError(); }
            public void softmax(float[] x, int off, int n) { throw new AssertionError(); }
            public void siluMul(float[] gate, float[] up, int off, int n) { throw new AssertionError(); }
        };
        SplittableRandom rnd = new SplittableRandom(31L * rows + len);
        int capacity = len + 7, qStride = dims + 3, sStride = len + 5;
        float[] q = random(rnd, 2 + rows * qStride), keys = random(rnd, 1 + dims * capacity), values = random(rnd, 1 + dims * capacity);
        float[] expected = new float[3 + rows * sStride], actual = expected.clone();
        definition.scores(q, 2, qStride, rows, dims, 0.125f, keys, 1, capacity, len, expected, 3, sStride);
        vector.scores(q, 2, qStride, rows, dims, 0.125f, keys, 1, capacity, len, actual, 3, sStride);
        assertThat(bits(actual)).as("scores").isEqualTo(bits(expected));

        float[] sums = new float[4 + rows * qStride], blocked = sums.clone();
        definition.weightedSums(expected, 3, sStride, rows, values, 1, capacity, dims, len, sums, 4, qStride);
        vector.weightedSums(expected, 3, sStride, rows, values, 1, capacity, dims, len, blocked, 4, qStride);
        assertThat(bits(blocked)).as("weighted sums").isEqualTo(bits(sums));
    }

    private static int[] bits(float[] a) {
        int[] b = new int[a.length];
        for (int i = 0; i < a.length; i++) b[i] = Float.floatToRawIntBits(a[i]);
        return b;
    }

    @Test
    void nestedAndConcurrentJobsRunEveryItemOnce() throws Exception {
        try (WorkerPool pool = new WorkerPool(3)) {
            java.util.concurrent.atomic.AtomicIntegerArray runs = new java.util.concurrent.atomic.AtomicIntegerArray(64 * 64);
            Runnable job = () -> pool.forRange(64, 1 << 20, (worker, s, e) -> {
                for (int i = s; i < e; i++) {
                    int outer = i;
                    pool.forRange(64, 1 << 20, (w2, s2, e2) -> { for (int j = s2; j < e2; j++) runs.incrementAndGet(outer * 64 + j); });
                }
            });
            Thread other = new Thread(job);
            other.start();
            job.run();
            other.join();
            for (int i = 0; i < runs.length(); i++) assertThat(runs.get(i)).as("item %d", i).isEqualTo(2);
        }
    }
}
