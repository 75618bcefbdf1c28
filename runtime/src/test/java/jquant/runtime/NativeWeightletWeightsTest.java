package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import jquant.formats.weightlet.PackedTensor;
import jquant.formats.weightlet.WeightletLayout;
import jquant.formats.weightlet.WeightletPacker;
import jquant.core.WorkerPool;
import jquant.runtime.nativelib.NativeKernels;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The weightlet oracle for the C library's kernels: native decode against the Java layer, npu
 * ({@link NpuInt8Weights}: every instruction set) and weight-only ({@link WeightletWeights}: the
 * instruction set whose float lanes are the Java kernels', as stored and on {@link WeightletLanes} where the instruction set
 * has them), bit for bit, on mixed bit widths 1..8, lengths that end inside a group,
 * one to three tokens, one and two threads, for each instruction set this CPU runs ({@code ./run-tests}
 * runs this class again with the JVM at 256 and 128 bits).
 */
class NativeWeightletWeightsTest {

    static final WorkerPool TWO = new WorkerPool(2), ONE = new WorkerPool(1);

    @AfterAll
    static void close() {
        TWO.close();
        ONE.close();
    }

    static Stream<Arguments> cases() {
        List<Arguments> all = new ArrayList<>();
        for (NativeKernels k : NativeKernels.supported())
            for (int length : new int[] {64, 128, 172, 200, 384, 1000, 2048, 2056})
                for (int tokens = 1; tokens <= 3; tokens++) all.add(Arguments.of(k, length, tokens));
        return all.stream();
    }

    @ParameterizedTest(name = "{0} length {1}, {2} tokens", allowZeroInvocations = true)   // none without the library
    @MethodSource("cases")
    void nativeDecodeEqualsTheJavaLayer(NativeKernels kernels, int length, int tokens) {
        Compute compute = Compute.vector().on(tokens == 2 ? TWO : ONE);
        Case c = new Case(length, tokens);
        NpuInt8Weights npu = new NpuInt8Weights("w", c.packed, c.scales, 0.05f, compute);
        assertThat(c.product(new NativeWeightletWeights(npu, kernels))).isEqualTo(c.product(npu));
        if (kernels.isa().bits / Float.SIZE == compute.matmul().lanes()) {
            WeightletWeights weightOnly = new WeightletWeights("w", c.packed, c.scales, compute);
            assertThat(c.product(new NativeWeightletWeights(weightOnly, kernels))).isEqualTo(c.product(weightOnly));
            assertThat(c.product(new NativeWeightletWeights(weightOnly, kernels, true))).as("on weightlet lanes").isEqualTo(c.product(weightOnly));
        }
    }

    /** 37 channels at widths 1..8 in turn, random fields and scales, and {@code tokens} activation rows with outliers. */
    private static final class Case {
        final PackedTensor packed;
        final float[] scales, x;
        final int tokens, channels = 37;

        Case(int length, int tokens) {
            this.tokens = tokens;
            Random rnd = new Random(31L * length + tokens);
            int[] bits = new int[channels];
            byte[] fields = new byte[channels * length];
            for (int c = 0; c < channels; c++) {
                bits[c] = 1 + c % 8;
                for (int k = 0; k < length; k++) fields[c * length + k] = (byte) rnd.nextInt(WeightletLayout.maxField(bits[c]) + 1);
            }
            packed = PackedTensor.pack(WeightletPacker.INSTANCE, fields, channels, length, bits);
            scales = new float[channels];
            for (int c = 0; c < channels; c++) scales[c] = 0.001f + rnd.nextFloat() * 0.01f;
            x = new float[tokens * length];
            for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian() * (i % 97 == 0 ? 40f : 1f);
        }

        float[] product(LinearWeights w) {
            float[] y = new float[tokens * channels];
            w.matmul(x, tokens, y);
            return y;
        }
    }
}
