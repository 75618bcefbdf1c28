package jquant.runtime.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import jquant.runtime.nativelib.NativeKernels;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The attention oracle for the C library's kernels: {@link NativeAttentionKernels}' scores, weighted
 * sums and softmax against {@link VectorKernels}' bit for bit (every float of the arrays, the untouched ones too), for
 * each instruction set this CPU runs that has them and whose float lanes are the vector kernels' (AVX-512's
 * 16; AVX2's 8 when {@code ./run-tests} runs the kernels' tests again at 256 bits; none at 128): one to nine
 * query rows, head widths that end inside a vector, lengths on both sides of the blocked kernels' threshold
 * and of each whole vector, with signed zeros, subnormals and wide magnitudes among the values.
 */
class NativeAttentionKernelsTest {

    static Stream<Arguments> cases() {
        List<Arguments> all = new ArrayList<>();
        for (NativeKernels k : NativeKernels.supported()) {
            if (k.isa().bits / Float.SIZE != VectorWidth.FLOATS.length()) continue;
            for (int rows : new int[] {1, 2, 3, 4, 5, 9})
                for (int dims : new int[] {1, 5, 16, 20, 64, 128})
                    for (int len : new int[] {1, 7, 8, 9, 15, 16, 17, 24, 32, 33, 63, 64, 65, 100, 129, 300}) all.add(Arguments.of(k, rows, dims, len));
        }
        return all.stream();
    }

    @ParameterizedTest(name = "{0} rows {1}, dims {2}, len {3}", allowZeroInvocations = true)   // none without the library
    @MethodSource("cases")
    void nativeAttentionEqualsTheVectorKernels(NativeKernels lib, int rows, int dims, int len) {
        SplittableRandom rnd = new SplittableRandom(31L * rows + 7L * dims + len);
        Kernels c = new NativeAttentionKernels(lib), java = new VectorKernels();
        int qOff = 3, qStride = dims + 2, kOff = 5, kStride = len + 11, sOff = 1, sStride = len + 6, outOff = 4, outStride = dims + 3;
        float[] q = values(rnd, qOff + rows * qStride), k = values(rnd, kOff + dims * kStride), v = values(rnd, kOff + dims * kStride);
        float scale = (float) (1 / Math.sqrt(dims));

        float[] sc = values(rnd, sOff + rows * sStride), sj = sc.clone();
        c.scores(q, qOff, qStride, rows, dims, scale, k, kOff, kStride, len, sc, sOff, sStride);
        java.scores(q, qOff, qStride, rows, dims, scale, k, kOff, kStride, len, sj, sOff, sStride);
        assertThat(bits(sc)).as("scores").isEqualTo(bits(sj));

        for (int r = 0; r < rows; r++) java.softmax(sj, sOff + r * sStride, len);
        float[] oc = values(rnd, outOff + rows * outStride), oj = oc.clone();
        c.weightedSums(sj, sOff, sStride, rows, v, kOff, kStride, dims, len, oc, outOff, outStride);
        java.weightedSums(sj, sOff, sStride, rows, v, kOff, kStride, dims, len, oj, outOff, outStride);
        assertThat(bits(oc)).as("weighted sums of softmax weights").isEqualTo(bits(oj));

        float[] raw = values(rnd, sOff + rows * sStride);   // any weights, signed zeros and subnormals included
        c.weightedSums(raw, sOff, sStride, rows, v, kOff, kStride, dims, len, oc, outOff, outStride);
        java.weightedSums(raw, sOff, sStride, rows, v, kOff, kStride, dims, len, oj, outOff, outStride);
        assertThat(bits(oc)).as("weighted sums of raw weights").isEqualTo(bits(oj));
    }

    static Stream<Arguments> softmaxCases() {
        List<Arguments> all = new ArrayList<>();
        for (NativeKernels k : NativeKernels.supported()) {
            if (k.isa().bits / Float.SIZE != VectorWidth.FLOATS.length()) continue;
            for (int rows : new int[] {1, 3, 4, 33})
                for (int len : new int[] {1, 7, 8, 9, 15, 16, 17, 33, 64, 100, 513}) all.add(Arguments.of(k, rows, len));
        }
        return all.stream();
    }

    /**
     * The softmax rows against the vector kernels' softmax of each row, every float of the array compared: rows of
     * ordinary scores, of spreads past exp's float range (lanes for Math.exp), of values whose exponentials lie near
     * a rounding midpoint (FloatExp's guard), and rows with a NaN, an infinity or nothing but −∞ (left to Java whole).
     */
    @ParameterizedTest(name = "{0} rows {1}, len {2}", allowZeroInvocations = true)
    @MethodSource("softmaxCases")
    void nativeSoftmaxEqualsTheVectorKernels(NativeKernels lib, int rows, int len) {
        SplittableRandom rnd = new SplittableRandom(17L * rows + len);
        Kernels c = new NativeAttentionKernels(lib), java = new VectorKernels();
        float[] guarded = guardedExponents();
        int off = 2, stride = len + 3;
        float[] x = values(rnd, off + rows * stride + 1);
        for (int r = 0; r < rows; r++) {
            int at = off + r * stride;
            for (int k = 0; k < len; k++) {
                x[at + k] = switch (r % 6) {
                    case 0 -> (float) (rnd.nextGaussian() * 3);
                    case 1 -> (float) (rnd.nextDouble() * -200);                  // exps below the float range, and zeros
                    case 2 -> k == 0 ? 0f : guarded[rnd.nextInt(guarded.length)]; // max 0: x − max is the guarded value
                    case 3 -> k == len / 2 ? Float.NaN : (float) rnd.nextGaussian();
                    case 4 -> k == len - 1 ? (r % 12 == 4 ? Float.POSITIVE_INFINITY : Float.NEGATIVE_INFINITY) : (float) rnd.nextGaussian();
                    default -> Float.NEGATIVE_INFINITY;
                };
            }
        }
        float[] xc = x.clone(), xj = x.clone();
        c.softmaxRows(xc, off, stride, rows, len);
        for (int r = 0; r < rows; r++) java.softmax(xj, off + r * stride, len);
        assertThat(bits(xc)).isEqualTo(bits(xj));
    }

    /** In-range floats whose exponentials FloatExp sends to Math.exp (near a midpoint between two floats), all negative. */
    private static float[] guardedExponents() {
        List<Float> found = new ArrayList<>();
        for (int bits = Float.floatToRawIntBits(-1e-3f); found.size() < 64 && Float.intBitsToFloat(bits) > -80f; bits += 997) {
            float[] v = new float[FloatExp.LANES];
            java.util.Arrays.fill(v, Float.intBitsToFloat(bits));
            jdk.incubator.vector.DoubleVector d = FloatExp.widen(jdk.incubator.vector.FloatVector.fromArray(FloatExp.H, v, 0));
            if (FloatExp.uncertain(d, FloatExp.exp(d)).anyTrue()) found.add(v[0]);
        }
        assertThat(found).as("guarded exponents").isNotEmpty();
        float[] a = new float[found.size()];
        for (int i = 0; i < a.length; i++) a[i] = found.get(i);
        return a;
    }

    @ParameterizedTest(name = "{0}", allowZeroInvocations = true)
    @MethodSource("libraries")
    void outOfBoundsIsRefusedBeforeTheLibraryRuns(NativeKernels lib) {
        Kernels c = new NativeAttentionKernels(lib);
        float[] q = new float[64], k = new float[64 * 40], s = new float[40];
        assertThatThrownBy(() -> c.scores(q, 0, 64, 1, 64, 1f, k, 0, 40, 41, s, 0, 41)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> c.weightedSums(s, 0, 40, 1, k, 0, 40, 64, 40, q, 1, 64)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> c.softmaxRows(k, 0, 40, 64, 41)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    static Stream<Arguments> libraries() {
        return NativeKernels.supported().stream().map(Arguments::of);
    }

    /** Mostly ±1-ish values, with every 13th a signed zero, a subnormal, or a value far larger or smaller. */
    private static float[] values(SplittableRandom rnd, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            float x = (float) (rnd.nextDouble() * 2 - 1);
            a[i] = switch (rnd.nextInt(13)) {
                case 0 -> -0f;
                case 1 -> 0f;
                case 2 -> x * 1e-40f;
                case 3 -> x * 3e4f;
                case 4 -> x * 1e-6f;
                default -> x;
            };
        }
        return a;
    }

    private static int[] bits(float[] a) {
        int[] b = new int[a.length];
        for (int i = 0; i < a.length; i++) b[i] = Float.floatToRawIntBits(a[i]);
        return b;
    }
}
