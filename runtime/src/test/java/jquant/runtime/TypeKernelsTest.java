package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import jquant.formats.DType;
import jquant.formats.Dequantizer;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.runtime.ternary.TernaryKernels;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every decodable entry of the {@link DType} table, in one loop, through the kernels the runtime
 * chooses for it on a mapped-like (off-heap) tensor: the float path ({@link LinearWeightsFactory#inPlace}:
 * fused rows or rows decoded by the table's decoder) gives the products of a float32 copy of the table's
 * reference decode, up to float rounding; a type the ternary kernels serve gets them in both layouts,
 * within the rounding of its int8 activations.
 */
class TypeKernelsTest {
    private static final int ROWS = 8, COLUMNS = 3;

    static Stream<DType> decodableTypes() {
        return Arrays.stream(DType.values()).filter(DType::isDecodable);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("decodableTypes")
    void everyDecodableTypeMultipliesInPlaceAsItsDecodedFloats(DType type) {
        int cols = 2 * Math.max(type.blockSize(), 128);
        try (Arena arena = Arena.ofConfined()) {
            Tensor tensor = randomTensor(type, cols, arena);
            float[] w = tensor.toFloats();
            float[] x = new float[COLUMNS * cols];
            SplittableRandom random = new SplittableRandom(type.ordinal());
            for (int i = 0; i < x.length; i++) x[i] = (float) random.nextGaussian();
            Compute compute = Compute.vector();

            LinearWeights inPlace = LinearWeightsFactory.inPlace(compute).create(TensorKind.W_UP, 0, tensor);
            assertThat(inPlace).as(type.name()).isInstanceOfAny(DenseWeights.class, DecodedRowsWeights.class, NativeRowsWeights.class);
            assertClose(type + " on the float path", multiply(inPlace, x), w, x, cols, 1e-5);

            for (TernaryWeightsFactory.Layout layout : TernaryWeightsFactory.Layout.values()) {
                LinearWeights chosen = new TernaryWeightsFactory(compute, layout, true).create(TensorKind.W_UP, 0, tensor);
                assertThat(chosen instanceof TernaryLinearWeights).as("%s in layout %s on ternary kernels", type, layout)
                        .isEqualTo(TernaryKernels.serves(type));
                assertClose(type + " in layout " + layout, multiply(chosen, x), w, x, cols, 2e-2);
            }
        }
    }

    /**
     * {@link #ROWS} × {@code cols} random stored bytes off the heap, each stored unit (a block; for T2P
     * four rows of one) drawn again until it decodes finite and moderate: random fp16 and fp32 bits can
     * be infinities, NaNs or huge.
     */
    private static Tensor randomTensor(DType type, int cols, Arena arena) {
        SplittableRandom random = new SplittableRandom(31L * type.ordinal());
        MemorySegment data = arena.allocate(type.byteSize((long) ROWS * cols, cols), 64);
        int unit = type.blockSize() * type.rowGroup();
        int unitBytes = (int) type.byteSize(unit, type.blockSize());
        Dequantizer decoder = Dequantizer.of(type, type.blockSize());
        byte[] bytes = new byte[unitBytes];
        float[] values = new float[unit];
        for (long at = 0; at < data.byteSize(); at += unitBytes) {
            boolean moderate;
            do {
                for (int i = 0; i < unitBytes; i++) bytes[i] = (byte) random.nextInt();
                decoder.dequantize(MemorySegment.ofArray(bytes), values, 0, unit);
                moderate = true;
                for (float v : values) moderate &= Math.abs(v) < 1e4f;
            } while (!moderate);
            MemorySegment.copy(bytes, 0, data, ValueLayout.JAVA_BYTE, at, unitBytes);
        }
        return new Tensor("blk.0.ffn_up.weight", new long[] {ROWS, cols}, type, data);
    }

    private static float[] multiply(LinearWeights w, float[] x) {
        float[] y = new float[COLUMNS * w.outFeatures()];
        w.matmul(x, COLUMNS, y);
        return y;
    }

    /** {@code y} against the float64 products of {@code w} and {@code x}, within {@code relative} of Σ|w·x| per output. */
    private static void assertClose(String what, float[] y, float[] w, float[] x, int cols, double relative) {
        for (int c = 0; c < COLUMNS; c++) {
            for (int r = 0; r < ROWS; r++) {
                double exact = 0, magnitude = 0;
                for (int k = 0; k < cols; k++) {
                    exact += (double) w[r * cols + k] * x[c * cols + k];
                    magnitude += Math.abs((double) w[r * cols + k] * x[c * cols + k]);
                }
                assertThat((double) y[c * ROWS + r]).as("%s, column %d row %d", what, c, r).isCloseTo(exact,
                        org.assertj.core.data.Offset.offset(relative * magnitude + 1e-30));
            }
        }
    }
}
