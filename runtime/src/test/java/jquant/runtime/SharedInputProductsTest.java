package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.stream.Stream;
import jquant.core.WorkerPool;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.formats.TernaryCodecs;
import jquant.formats.quant.TernaryTensor;
import jquant.formats.weightlet.PackedTensor;
import jquant.formats.weightlet.WeightletLayout;
import jquant.formats.weightlet.WeightletPacker;
import jquant.runtime.ggml.IntegerBlockWeights;
import jquant.runtime.nativelib.NativeKernels;
import jquant.runtime.nativelib.NativeKernels.RowType;
import jquant.runtime.nativelib.NativeKernels.TernaryLayout;
import jquant.runtime.ternary.NativeTernaryMatrix;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * One decode job for several matrices that read the same input ({@link SharedInputProducts}) against a
 * product of each alone, bit for bit: every native storage form in one group (float16 rows, Q4_0 and
 * Q6_K blocks, T2P and TQ2_0 ternary, weightlets weight-only and in npu mode at two input scales, and a
 * second T2P and Q4_0 matrix, which share their input's converted form with the first); a prefill
 * batch's float16 products in one job on its shared aligned copy; and the SwiGLU job against the two
 * products and the gating after them. One and two threads, on each
 * instruction set whose float lanes are the Java kernels'.
 */
class SharedInputProductsTest {

    /** Rows of every matrix: a multiple of four (T2P stores groups of four rows), several chunks a thread. */
    static final int ROWS = 136, COLS = 512;

    private interface PoolTest {
        void run(NativeKernels kernels, WorkerPool pool) throws Exception;
    }

    /** {@code test} on a pool of {@code threads}, closed after. */
    private static void onPool(NativeKernels kernels, int threads, PoolTest test) throws Exception {
        try (WorkerPool pool = new WorkerPool(threads)) {
            test.run(kernels, pool);
        }
    }

    /** Each instruction set on one and on two threads. */
    static Stream<Arguments> cases() {
        return NativeKernels.supported().stream().flatMap(k -> Stream.of(Arguments.of(k, 1), Arguments.of(k, 2)));
    }

    @ParameterizedTest(name = "{0} on {1} thread(s)", allowZeroInvocations = true)   // none without the library
    @MethodSource("cases")
    void oneJobGivesEachProductsBits(NativeKernels kernels, int threads) throws Exception {
        onPool(kernels, threads, SharedInputProductsTest::oneJob);
    }

    private static void oneJob(NativeKernels kernels, WorkerPool pool) throws Exception {
        Compute compute = Compute.vector().on(pool);
        assumeThat(kernels.isa().bits / Float.SIZE).as("float lanes of float16 rows and weight-only").isEqualTo(compute.matmul().lanes());
        LinearWeights[] ws = forms(kernels, compute, pool);
        float[] x = input(1);
        assertOneJobGivesEachProductsBits(pool, x, 1, ws);   // float16's first product is the Java layer's, which checks the weights
        for (int i = 0; i < ws.length; i++) {
            assertThat(ws[i].prepare(new SharedInput(x, COLS), new float[ROWS])).as("form %d prepares", i).isPresent();
        }
    }

    /** {@link SharedInputProducts#matmul} of the {@code n} tokens of {@code x} against each product made alone first. */
    private static void assertOneJobGivesEachProductsBits(WorkerPool pool, float[] x, int n, LinearWeights[] ws) {
        float[][] expected = new float[ws.length][], got = new float[ws.length][];
        for (int i = 0; i < ws.length; i++) {
            expected[i] = new float[n * ws[i].outFeatures()];
            ws[i].matmul(x, n, expected[i]);
            got[i] = new float[n * ws[i].outFeatures()];
            Arrays.fill(got[i], Float.NaN);
        }
        SharedInputProducts.matmul(pool, x, n, ws, got);
        for (int i = 0; i < ws.length; i++) assertThat(got[i]).as("product %d of %d", i, ws.length).isEqualTo(expected[i]);
    }

    @ParameterizedTest(name = "{0} on {1} thread(s)", allowZeroInvocations = true)
    @MethodSource("cases")
    void aPrefillBatchsJobGivesEachProductsBits(NativeKernels kernels, int threads) throws Exception {
        onPool(kernels, threads, SharedInputProductsTest::batch);
    }

    /**
     * Three float16 matrices (q, k, v) on one batch share its aligned copy in one job; a batch with a
     * block type among them (no batch form) runs product after product; both give each product's bits.
     */
    private static void batch(NativeKernels kernels, WorkerPool pool) throws Exception {
        Compute compute = Compute.vector().on(pool);
        assumeThat(kernels.isa().bits / Float.SIZE).as("float lanes of float16 rows").isEqualTo(compute.matmul().lanes());
        int n = 37;
        float[] x = new float[n * COLS];
        for (int t = 0; t < n; t++) System.arraycopy(input(20 + t), 0, x, t * COLS, COLS);
        LinearWeights[] shared = {float16(kernels, compute, 21), float16(kernels, compute, 22), float16(kernels, compute, 23)};
        LinearWeights[] mixed = {float16(kernels, compute, 24), blocks(DType.Q4_0, kernels, compute, 25)};
        for (LinearWeights[] ws : List.of(shared, mixed)) assertOneJobGivesEachProductsBits(pool, x, n, ws);
        SharedInput input = new SharedInput(x, COLS, n);
        assertThat(shared[0].prepare(input, new float[n * ROWS])).as("float16 has a batch form").isPresent();
        for (LinearWeights w : new LinearWeights[] {mixed[1], ternary(TernaryLayout.T2P, kernels, pool, 26),
                new NativeWeightletWeights(new WeightletWeights("b", weightlets(27), scales(28), compute), kernels)}) {
            assertThat(w.prepare(input, new float[n * ROWS])).as("%s prepares one token only", w.getClass().getSimpleName()).isEmpty();
        }
    }

    @ParameterizedTest(name = "{0} on {1} thread(s)", allowZeroInvocations = true)
    @MethodSource("cases")
    void theSwigluJobGivesTheProductsGatedAfterThem(NativeKernels kernels, int threads) throws Exception {
        onPool(kernels, threads, SharedInputProductsTest::swiglu);
    }

    private static void swiglu(NativeKernels kernels, WorkerPool pool) throws Exception {
        Compute compute = Compute.vector().on(pool);
        LinearWeights gate = ternary(TernaryLayout.T2P, kernels, pool, 5), up = blocks(DType.Q4_0, kernels, compute, 6);
        float[] x = input(2);
        float[] g = new float[ROWS], u = new float[ROWS];
        gate.matmul(x, 1, g);
        up.matmul(x, 1, u);
        compute.kernels().siluMul(g, u, 0, ROWS);
        float[] gotGate = new float[ROWS], gotUp = new float[ROWS];
        assertThat(SharedInputProducts.gated(pool, compute.kernels(), x, gate, up, gotGate, gotUp)).isTrue();
        assertThat(gotGate).isEqualTo(g);
        assertThat(gotUp).isEqualTo(u);
    }

    @ParameterizedTest(name = "{0} on {1} thread(s)", allowZeroInvocations = true)
    @MethodSource("cases")
    void weightletLanesGateAndUpRunApart(NativeKernels kernels, int threads) throws Exception {
        onPool(kernels, threads, SharedInputProductsTest::lanesSwiglu);
    }

    /** Weightlet lanes' row groups are not the output's rows: the SwiGLU job declines them, having written nothing. */
    private static void lanesSwiglu(NativeKernels kernels, WorkerPool pool) throws Exception {
        Compute compute = Compute.vector().on(pool);
        assumeThat(kernels.isa().bits / Float.SIZE).as("float lanes of weight-only").isEqualTo(compute.matmul().lanes());
        assumeThat(kernels.hasWeightletLanes()).as("weightlet lanes").isTrue();
        LinearWeights gate = new NativeWeightletWeights(new WeightletWeights("g", weightlets(16), scales(17), compute), kernels, true);
        LinearWeights up = new NativeWeightletWeights(new WeightletWeights("u", weightlets(18), scales(19), compute), kernels, true);
        float[] g = new float[ROWS], u = new float[ROWS];
        Arrays.fill(g, Float.NaN);
        Arrays.fill(u, Float.NaN);
        assertThat(SharedInputProducts.gated(pool, compute.kernels(), input(3), gate, up, g, u)).isFalse();
        assertThat(g).containsOnly(Float.NaN);
        assertThat(u).containsOnly(Float.NaN);
    }

    static LinearWeights[] forms(NativeKernels kernels, Compute compute, WorkerPool pool) throws Exception {
        return new LinearWeights[] {
            float16(kernels, compute, 1),
            blocks(DType.Q4_0, kernels, compute, 2),
            ternary(TernaryLayout.T2P, kernels, pool, 3),
            blocks(DType.Q6_K, kernels, compute, 4),
            ternary(TernaryLayout.TQ2_0, kernels, pool, 5),
            new NativeWeightletWeights(new NpuInt8Weights("a", weightlets(6), scales(7), 0.05f, compute), kernels),
            new NativeWeightletWeights(new WeightletWeights("b", weightlets(8), scales(9), compute), kernels),
            new NativeWeightletWeights(new NpuInt8Weights("c", weightlets(10), scales(11), 0.02f, compute), kernels),
            ternary(TernaryLayout.T2P, kernels, pool, 12),
            blocks(DType.Q4_0, kernels, compute, 13),
            new NativeWeightletWeights(new WeightletWeights("d", weightlets(14), scales(15), compute), kernels, true),
        };
    }

    static LinearWeights float16(NativeKernels kernels, Compute compute, long seed) {
        Tensor t = NativeRowsWeightsTest.randomTensor(DType.F16, ROWS, COLS, seed);
        return new NativeRowsWeights(t, new DenseWeights(t, compute), RowType.F16, kernels, compute);
    }

    static LinearWeights blocks(DType type, NativeKernels kernels, Compute compute, long seed) {
        return new IntegerBlockWeights(NativeRowsWeightsTest.randomTensor(type, ROWS, COLS, seed), compute, Optional.of(kernels));
    }

    /** Random codes in {−1, 0, +1} with fp16 scales, both 128-halves of a 256-block sharing one (TQ2_0 holds one). */
    static LinearWeights ternary(TernaryLayout layout, NativeKernels kernels, WorkerPool pool, long seed) throws Exception {
        Random rnd = new Random(seed);
        byte[] codes = new byte[ROWS * COLS];
        for (int i = 0; i < codes.length; i++) codes[i] = (byte) (rnd.nextInt(3) - 1);
        float[] scales = new float[ROWS * COLS / TernaryTensor.BLOCK];
        for (int i = 0; i < scales.length; i += 2) scales[i] = scales[i + 1] = Float.float16ToFloat(Float.floatToFloat16(rnd.nextFloat() * 0.02f));
        DType type = layout == TernaryLayout.T2P ? DType.T2P : DType.TQ2_0;
        MemorySegment data = TernaryCodecs.encode(new TernaryTensor("w", ROWS, COLS, scales, codes), new long[] {ROWS, COLS}, type).data();
        return new TernaryLinearWeights(new NativeTernaryMatrix(layout, data, ROWS, COLS, pool, kernels), pool);
    }

    static PackedTensor weightlets(long seed) {
        Random rnd = new Random(seed);
        int[] bits = new int[ROWS];
        byte[] fields = new byte[ROWS * COLS];
        for (int c = 0; c < ROWS; c++) {
            bits[c] = 1 + c % 8;
            for (int k = 0; k < COLS; k++) fields[c * COLS + k] = (byte) rnd.nextInt(WeightletLayout.maxField(bits[c]) + 1);
        }
        return PackedTensor.pack(WeightletPacker.INSTANCE, fields, ROWS, COLS, bits);
    }

    static float[] scales(long seed) {
        Random rnd = new Random(seed);
        float[] s = new float[ROWS];
        for (int c = 0; c < ROWS; c++) s[c] = 0.001f + rnd.nextFloat() * 0.01f;
        return s;
    }

    static float[] input(long seed) {
        Random rnd = new Random(seed);
        float[] x = new float[COLS];
        for (int i = 0; i < COLS; i++) x[i] = (float) rnd.nextGaussian() * (i % 97 == 0 ? 40f : 1f);
        return x;
    }
}
