package jquant.runtime.ggml;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.stream.Stream;
import jquant.core.WorkerPool;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.runtime.Compute;
import jquant.runtime.nativelib.NativeKernels;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * llama.cpp's block types on integer block dot products: {@link BlockDots} (the definition) against the
 * float64 product of the decoded weights and the dequantized activations, and every kernel — Java's and
 * each instruction set's of the C library this CPU runs — against {@link BlockDots} bit for bit: random
 * blocks with finite scales, row counts that end inside a group of four, rows of whole and partial
 * groups of four blocks, one to seventeen tokens (decode, and prefill's full and partial tiles of columns), one and two threads.
 */
class IntegerBlockWeightsTest {

    static final WorkerPool TWO = new WorkerPool(2), ONE = new WorkerPool(1);
    static final DType[] TYPES = {DType.Q8_0, DType.Q4_0, DType.Q4_K, DType.Q5_K, DType.Q6_K};

    @AfterAll
    static void close() {
        TWO.close();
        ONE.close();
    }

    /** Random blocks of {@code type}, every fp16 scale field set to a small finite value. */
    static Tensor randomTensor(DType type, int rows, int cols, long seed) {
        Random rnd = new Random(seed);
        long bytes = type.byteSize((long) rows * cols, cols);
        MemorySegment data = Arena.ofAuto().allocate(bytes, 64);
        for (long i = 0; i < bytes; i++) data.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        long block = type.byteSize(type.blockSize(), type.blockSize());
        int[] scales = switch (type) {
            case Q8_0, Q4_0 -> new int[] {0};
            case Q4_K, Q5_K -> new int[] {0, 2};
            case Q6_K -> new int[] {208};
            default -> throw new IllegalArgumentException(type.name());
        };
        for (long b = 0; b < bytes; b += block) {
            for (int at : scales) data.set(ValueLayout.JAVA_SHORT_UNALIGNED, b + at, Float.floatToFloat16(0.001f + rnd.nextFloat() * 0.02f));
        }
        return new Tensor("blk.0.ffn_up.weight", new long[] {rows, cols}, type, data);
    }

    static float[] activations(int n, long seed) {
        Random rnd = new Random(seed);
        float[] x = new float[n];
        for (int i = 0; i < x.length; i++) x[i] = (float) (rnd.nextGaussian() * (i % 97 == 0 ? 8 : 1));
        return x;
    }

    static float[] oracle(Tensor t, float[] x, int tokens) {
        Q8Activations a = Q8Activations.quantize(BlockDots.activations(t.dtype()), x, tokens, t.cols(), null);
        float[] y = new float[tokens * t.rows()];
        for (int c = 0; c < tokens; c++) for (int r = 0; r < t.rows(); r++) y[c * t.rows() + r] = BlockDots.row(t.dtype(), t.data(), r, a, c);
        return y;
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = DType.class, names = {"Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K"})
    void theDefinitionIsTheProductOfTheDecodedWeightsAndTheQuantizedActivations(DType type) {
        int rows = 6, cols = 512, tokens = 2;
        Tensor t = randomTensor(type, rows, cols, type.ordinal());
        float[] w = t.toFloats(), x = activations(tokens * cols, 3);
        Q8Activations a = Q8Activations.quantize(BlockDots.activations(type), x, tokens, cols, null);
        float[] y = oracle(t, x, tokens);
        for (int c = 0; c < tokens; c++) {
            for (int r = 0; r < rows; r++) {
                double exact = 0, magnitude = 0, quantized = 0;
                for (int k = 0; k < cols; k++) {
                    double xq = (double) a.q(c, k) * a.scale(c, k / a.kind().block);
                    quantized += w[r * cols + k] * xq;
                    exact += (double) w[r * cols + k] * x[c * cols + k];
                    magnitude += Math.abs((double) w[r * cols + k] * x[c * cols + k]);
                }
                // the weights' decode in float (d · sc first) and the float terms round a little
                assertThat((double) y[c * rows + r]).as("%s row %d column %d", type, r, c).isCloseTo(quantized,
                        org.assertj.core.data.Offset.offset(1e-5 * magnitude + 1e-30));
                assertThat((double) y[c * rows + r]).isCloseTo(exact, org.assertj.core.data.Offset.offset(2e-2 * magnitude));
            }
        }
    }

    static Stream<Arguments> kernels() {
        List<Arguments> all = new ArrayList<>();
        List<Optional<NativeKernels>> sources = new ArrayList<>();
        sources.add(Optional.empty());
        for (NativeKernels k : NativeKernels.supported()) sources.add(Optional.of(k));
        for (Optional<NativeKernels> k : sources) {
            for (DType type : TYPES) {
                for (int rows : new int[] {5, 16}) {
                    for (int tokens : new int[] {1, 2, 5, 17}) all.add(Arguments.of(k.map(Object::toString).orElse("Java"), k, type, rows, tokens));
                }
            }
        }
        return all.stream();
    }

    @ParameterizedTest(name = "{0} {2} {3} rows, {4} tokens")
    @MethodSource("kernels")
    void everyKernelGivesTheDefinitionsFloats(String name, Optional<NativeKernels> kernels, DType type, int rows, int tokens) {
        // 2304 weights: Q8_0, Q4_0 rows of 72 blocks; K-quants 9 superblocks (chunks of four and a tail)
        int cols = type.blockSize() == 32 ? 2336 : 2304;
        Tensor t = randomTensor(type, rows, cols, 31L * rows + tokens + type.ordinal());
        float[] x = activations(tokens * cols, tokens);
        float[] expected = oracle(t, x, tokens);
        Compute compute = Compute.vector().on(tokens == 2 ? TWO : ONE);
        IntegerBlockWeights w = new IntegerBlockWeights(t, compute, kernels);
        float[] y = new float[tokens * rows];
        w.matmul(x, tokens, y);
        assertThat(y).isEqualTo(expected);
        // a token alone gives its outputs in the batch
        float[] one = new float[rows];
        w.matmul(java.util.Arrays.copyOfRange(x, (tokens - 1) * cols, tokens * cols), 1, one);
        assertThat(one).isEqualTo(java.util.Arrays.copyOfRange(expected, (tokens - 1) * rows, tokens * rows));
    }

    @Test
    void q8_0ActivationsRoundAsGgmlCpuDoes() {
        float[] x = new float[32];
        x[0] = 127f;        // amax 127: multiplier 1
        x[1] = 2.5f;        // a tie: to even
        x[2] = -3.5f;
        x[3] = 0.49999997f;
        Q8Activations a = Q8Activations.quantize(Q8Activations.Kind.Q8_0, x, 1, 32, null);
        assertThat(new int[] {a.q(0, 0), a.q(0, 1), a.q(0, 2), a.q(0, 3)}).containsExactly(127, 2, -4, 0);
        assertThat(a.scale(0, 0)).isEqualTo(1f);
        assertThat(a.sum16(0, 0)).isEqualTo(125);
        x = new float[32];
        x[0] = 0.3f;   // scale 0.3 / 127 rounded to fp16
        a = Q8Activations.quantize(Q8Activations.Kind.Q8_0, x, 1, 32, null);
        assertThat(a.scale(0, 0)).isEqualTo(Float.float16ToFloat(Float.floatToFloat16(0.3f / 127f)));
    }

    @Test
    void q8_kActivationsTakeTheFirstLargestValueSigned() {
        float[] x = new float[256];
        x[5] = -2f;
        x[9] = 2f;     // as large, later: the first decides the sign
        x[10] = 1f;
        Q8Activations a = Q8Activations.quantize(Q8Activations.Kind.Q8_K, x, 1, 256, null);
        assertThat(new int[] {a.q(0, 5), a.q(0, 9), a.q(0, 10)}).containsExactly(-127, 127, 64);
        assertThat(a.scale(0, 0)).isEqualTo(1f / (-127f / -2f));
        assertThat(Q8Activations.quantize(Q8Activations.Kind.Q8_K, new float[256], 1, 256, null).scale(0, 0)).isZero();
    }

    /** ggml-cpu's rounding written as the plain loop it is: max |x| (Q8_K: the first value of it, signed), then rint and clamp. */
    private static int[] definitionQ(Q8Activations.Kind kind, float[] x, float[] scales) {
        int[] q = new int[x.length];
        for (int b = 0; b < x.length / kind.block; b++) {
            float amax = 0f, max = 0f;
            for (int j = b * kind.block; j < (b + 1) * kind.block; j++) {
                if (Math.abs(x[j]) > amax) {
                    amax = Math.abs(x[j]);
                    max = x[j];
                }
            }
            float mul = amax == 0f ? 0f : kind == Q8Activations.Kind.Q8_0 ? 127f / amax : -127f / max;
            scales[b] = amax == 0f ? 0f : kind == Q8Activations.Kind.Q8_0 ? Float.float16ToFloat(Float.floatToFloat16(amax / 127f)) : 1f / mul;
            for (int j = b * kind.block; j < (b + 1) * kind.block; j++) q[j] = (int) Math.clamp((long) Math.rint(x[j] * mul), -127, 127);
        }
        return q;
    }

    @Test
    void vectorQuantizationIsThePlainDefinition() {
        java.util.Random rnd = new java.util.Random(47);
        for (Q8Activations.Kind kind : Q8Activations.Kind.values()) {
            int cols = 8 * 256;
            float[] x = new float[cols];
            for (int b = 0; b < cols / kind.block; b++) {
                double magnitude = Math.pow(10, rnd.nextInt(9) - 4);
                for (int j = b * kind.block; j < (b + 1) * kind.block; j++) x[j] = (float) (rnd.nextGaussian() * magnitude);
            }
            for (int j = 0; j < kind.block; j++) x[j] = (j % 5 == 0 ? 0f : j % 2 == 0 ? 1e-39f : -3e-38f);   // a multiplier past float's range
            x[kind.block] = -127f;   // a block of ties: multiplier -1 (Q8_K) or 1
            for (int j = kind.block + 1; j < 2 * kind.block; j++) x[j] = (j - kind.block) % 200 - 99.5f;
            float[] scales = new float[cols / kind.block];
            int[] q = definitionQ(kind, x, scales);
            Q8Activations a = Q8Activations.quantize(kind, x, 1, cols, null);
            for (int j = 0; j < cols; j++) assertThat(a.q(0, j)).as("%s value %d (%s)", kind, j, x[j]).isEqualTo(q[j]);
            for (int b = 0; b < scales.length; b++) assertThat(a.scale(0, b)).as("%s scale %d", kind, b).isEqualTo(scales[b]);
        }
    }

    @Test
    void aReusedColumnIsTheNewColumnOfEachCall() {
        java.util.Random rnd = new java.util.Random(31);
        for (Q8Activations.Kind kind : Q8Activations.Kind.values()) {
            for (int cols : new int[] {512, 256, 512}) {
                float[] x = new float[cols];
                for (int k = 0; k < cols; k++) x[k] = (float) rnd.nextGaussian();
                java.util.Arrays.fill(x, cols - 256, cols, 0f);   // a block that was not zero in the last call of this length
                Q8Activations fresh = Q8Activations.quantize(kind, x, 1, cols, null), reused = Q8Activations.quantizeReused(kind, x, cols);
                assertThat(reused.cols()).isEqualTo(cols);
                for (int k = 0; k < cols; k++) assertThat(reused.q(0, k)).as("%s value %d", kind, k).isEqualTo(fresh.q(0, k));
                for (int b = 0; b < cols / kind.block; b++) assertThat(reused.scale(0, b)).isEqualTo(fresh.scale(0, b));
                for (int g = 0; g < cols / Q8Activations.SUM_GROUP; g++) assertThat(reused.sum16(0, g)).isEqualTo(fresh.sum16(0, g));
                java.util.Arrays.fill(x, 1f);
                Q8Activations.quantizeReused(kind, x, cols);   // dirties this length's column for the next round
            }
        }
    }

    @Test
    void aNonFiniteActivationIsRefused() {
        float[] x = new float[32];
        x[7] = Float.NaN;
        assertThatThrownBy(() -> Q8Activations.quantize(Q8Activations.Kind.Q8_0, x, 1, 32, null)).hasMessageContaining("activation 7 is NaN");
    }
}
