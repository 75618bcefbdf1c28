package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.core.WorkerPool;
import jquant.runtime.nativelib.KernelSource;
import jquant.runtime.nativelib.NativeKernels;
import jquant.runtime.nativelib.NativeKernels.RowType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Float16 and llama.cpp's block types on the C library's kernels against {@link DenseWeights} and
 * {@link DecodedRowsWeights} (jquant's reference decoders, then the Java row kernel), bit for bit:
 * random finite halves, random blocks with finite fp16 scales,
 * row counts that end inside a group of four (float16 also more rows than one of its prefill tiles' row
 * blocks), one to three tokens, one and two threads, on each
 * instruction set whose float lanes are the Java kernels' ({@code ./run-tests} runs this class again
 * at 256 and 128 bits).
 */
class NativeRowsWeightsTest {

    static final WorkerPool TWO = new WorkerPool(2), ONE = new WorkerPool(1);

    @AfterAll
    static void close() {
        TWO.close();
        ONE.close();
    }

    static Stream<Arguments> cases() {
        List<Arguments> all = new ArrayList<>();
        for (NativeKernels k : NativeKernels.supported())
            for (RowType t : RowType.values())
                for (int rows : t == RowType.F16 ? new int[] {5, 16, 1100} : new int[] {5, 16})
                    for (int tokens : t == RowType.F16 ? new int[] {1, 2, 3, 4, 7, 9} : new int[] {1, 2, 3})
                        // float16: rows of whole vectors (summed a tile at a time) and a row that ends inside a vector
                        for (int cols : t == RowType.F16 ? new int[] {512, 520} : new int[] {512}) all.add(Arguments.of(k, t, rows, tokens, cols));
        return all.stream();
    }

    /** Random blocks of {@code type}, every fp16 scale field set to a finite value. */
    static Tensor randomTensor(DType type, int rows, int cols, long seed) {
        Random rnd = new Random(seed);
        long bytes = type.byteSize((long) rows * cols, cols);
        MemorySegment data = Arena.ofAuto().allocate(bytes, 64);
        for (long i = 0; i < bytes; i++) data.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        if (type == DType.F16) {   // finite halves, subnormals among them
            for (long i = 0; i < bytes; i += 2) data.set(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) (rnd.nextInt() & 0xBFFF));
            return new Tensor("blk.0.ffn_up.weight", new long[] {rows, cols}, type, data);
        }
        long block = type.byteSize(type.blockSize(), type.blockSize());
        int[] scales = switch (type) {
            case Q8_0, Q4_0 -> new int[] {0};
            case Q4_K, Q5_K -> new int[] {0, 2};
            case Q6_K -> new int[] {208};
            case F16 -> new int[] {};
            default -> throw new IllegalArgumentException(type.name());
        };
        for (long b = 0; b < bytes; b += block) {
            for (int at : scales) data.set(ValueLayout.JAVA_SHORT_UNALIGNED, b + at, Float.floatToFloat16(0.001f + rnd.nextFloat() * 0.02f));
        }
        return new Tensor("blk.0.ffn_up.weight", new long[] {rows, cols}, type, data);
    }

    @ParameterizedTest(name = "{0} {1} {2} rows, {3} tokens, {4} columns", allowZeroInvocations = true)   // none without the library
    @MethodSource("cases")
    void nativeProductEqualsTheJavaLayers(NativeKernels kernels, RowType type, int rows, int tokens, int cols) {
        Compute compute = Compute.vector().on(tokens == 2 ? TWO : ONE);
        assumeThat(kernels.isa().bits / Float.SIZE).as("float lanes").isEqualTo(compute.matmul().lanes());
        Tensor t = randomTensor(DType.valueOf(type.name()), rows, cols, 17L * rows + tokens + type.ordinal());
        LinearWeights reference = type == RowType.F16 ? new DenseWeights(t, compute) : new DecodedRowsWeights(t, compute);
        LinearWeights c = new NativeRowsWeights(t, reference, type, kernels, compute);
        Random rnd = new Random(tokens);
        float[] x = new float[tokens * cols];
        for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian();
        float[] expected = new float[tokens * rows], got = new float[tokens * rows];
        reference.matmul(x, tokens, expected);
        c.matmul(x, tokens, got);   // the first product is the Java layer's (it checks float16 weights finite)
        assertThat(got).isEqualTo(expected);
        Arrays.fill(got, Float.NaN);
        c.matmul(x, tokens, got);   // decode rows, or from 4 tokens on the float16 prefill tiles
        assertThat(got).isEqualTo(expected);
        for (int i = 0; i < tokens; i++) {   // a token's outputs are the same alone as in the batch
            float[] alone = new float[rows];
            c.matmul(Arrays.copyOfRange(x, i * cols, (i + 1) * cols), 1, alone);
            assertThat(alone).isEqualTo(Arrays.copyOfRange(expected, i * rows, (i + 1) * rows));
        }
    }

    @Test
    void anInfiniteFloat16WeightIsRefusedAsTheJavaLayerRefusesIt() {
        assumeThat(KernelSource.kernelsWithFloatLanes(Compute.vector().matmul().lanes())).isPresent();
        Tensor t = randomTensor(DType.F16, 8, 512, 5);
        t.data().set(ValueLayout.JAVA_SHORT_UNALIGNED, 2L * (3 * 512 + 100), (short) 0x7C00);
        LinearWeights w = NativeRowsWeights.dense(t, Compute.vector());
        assertThat(w).isInstanceOf(NativeRowsWeights.class);
        assertThatThrownBy(() -> w.matmul(new float[512], 1, new float[8])).hasMessageContaining("not finite");
    }

    @Test
    void typesWithoutANativeDecoderStayOnTheJavaOne() {
        Tensor q5 = new Tensor("w", new long[] {4, 64}, DType.Q5_0, Arena.ofAuto().allocate(DType.Q5_0.byteSize(256, 64), 64));
        assertThat(NativeRowsWeights.decoded(q5, Compute.vector())).isInstanceOf(DecodedRowsWeights.class);
    }
}
