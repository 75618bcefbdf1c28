package jquant.formats.quant;

import jquant.formats.DType;
import jquant.formats.Dequantizer;
import jquant.formats.TernaryCodecs;
import jquant.formats.Tensor;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every entry of the {@link DType} table, in one loop (ggml's {@code test-quantize-fns}): the table's
 * block geometry is its codec class's, and at odd block counts and an odd output offset a decode of the
 * whole run, from exactly the table's bytes, equals the decodes of its blocks one by one (a codec
 * striding by other than the table's bytes reads past them or decodes other bytes); a ternary type also
 * round-trips codes and scales through its codec, and its float decoder gives exactly the codes times
 * the scales. (Encoders of float32: FloatEncoderTest.)
 */
class BlockFormatsTest {
    private static final int OFFSET = 3;

    static Stream<DType> decodableTypes() {
        return Arrays.stream(DType.values()).filter(DType::isDecodable);
    }

    /** Elements of one stored unit: a block, or for T2P a row group of 4 rows of one block. */
    private static int unit(DType type) {
        return type.blockSize() * type.rowGroup();
    }

    private static float[] decode(DType type, byte[] bytes, int elements) {
        float[] out = new float[OFFSET + elements];
        Dequantizer.of(type, type.blockSize()).dequantize(MemorySegment.ofArray(bytes), out, OFFSET, elements);
        return Arrays.copyOfRange(out, OFFSET, out.length);
    }

    /** Weights and bytes of each codec class's stored unit (for T2P four rows of a block), as its named constants say. */
    private static final Map<DType, int[]> CODEC_UNITS = Map.ofEntries(
            Map.entry(DType.Q4_0, new int[] {Q4_0Block.WEIGHTS, Q4_0Block.BYTES}),
            Map.entry(DType.Q4_1, new int[] {Q4_1Block.WEIGHTS, Q4_1Block.BYTES}),
            Map.entry(DType.Q5_0, new int[] {Q5_0Block.WEIGHTS, Q5_0Block.BYTES}),
            Map.entry(DType.Q5_1, new int[] {Q5_1Block.WEIGHTS, Q5_1Block.BYTES}),
            Map.entry(DType.Q8_0, new int[] {Q8_0Block.WEIGHTS, Q8_0Block.BYTES}),
            Map.entry(DType.Q2_K, new int[] {Q2_KBlock.WEIGHTS, Q2_KBlock.BYTES}),
            Map.entry(DType.Q3_K, new int[] {Q3_KBlock.WEIGHTS, Q3_KBlock.BYTES}),
            Map.entry(DType.Q4_K, new int[] {Q4_KBlock.WEIGHTS, Q4_KBlock.BYTES}),
            Map.entry(DType.Q5_K, new int[] {Q5_KBlock.WEIGHTS, Q5_KBlock.BYTES}),
            Map.entry(DType.Q6_K, new int[] {Q6_KBlock.WEIGHTS, Q6_KBlock.BYTES}),
            Map.entry(DType.Q8_K, new int[] {Q8_KBlock.WEIGHTS, Q8_KBlock.BYTES}),
            Map.entry(DType.TQ1_0, new int[] {Tq1Block.WEIGHTS, Tq1Block.BYTES}),
            Map.entry(DType.TQ2_0, new int[] {Tq2Block.WEIGHTS, Tq2Block.BYTES}),
            Map.entry(DType.PQ2_0, new int[] {Pq2Block.WEIGHTS, Pq2Block.BYTES}),
            Map.entry(DType.PTQ1_0, new int[] {Ptq1Block.WEIGHTS, Ptq1Block.BYTES}),
            Map.entry(DType.T2P, new int[] {T2pBlock.ROWS * T2pBlock.WEIGHTS, T2pBlock.BYTES}));

    @Test
    void everyDecodableBlockTypeHasItsCodecClassesGeometry() {
        assertThat(CODEC_UNITS.keySet()).as("the decodable block types")
                .containsExactlyInAnyOrderElementsOf(decodableTypes().filter(DType::isQuantized).toList());
        CODEC_UNITS.forEach((type, unit) -> {
            assertThat(unit[0]).as(type + " weights per stored unit").isEqualTo(unit(type));
            assertThat((long) unit[1]).as(type + " bytes per stored unit").isEqualTo(type.byteSize(unit(type), type.blockSize()));
        });
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("decodableTypes")
    void everyTypeDecodesAnyRunOfWholeBlocksAsItsBlocksAndTernaryTypesRoundTrip(DType type) throws T2pShapeException {
        Random random = new Random(type.ordinal());
        int unitBytes = (int) type.byteSize(unit(type), type.blockSize());
        for (int units : new int[] {1, 3, 7}) {
            byte[] bytes = new byte[units * unitBytes];
            random.nextBytes(bytes);
            float[] whole = decode(type, bytes, units * unit(type));
            for (int u = 0; u < units; u++) {
                float[] one = decode(type, Arrays.copyOfRange(bytes, u * unitBytes, (u + 1) * unitBytes), unit(type));
                assertThat(Arrays.copyOfRange(whole, u * unit(type), (u + 1) * unit(type))).as("%s unit %d of %d", type, u, units).isEqualTo(one);
            }
        }
        if (!type.isTernary()) return;
        int rows = type.rowGroup() == 1 ? 3 : type.rowGroup(), cols = 3 * type.blockSize();
        TernaryTensor t = randomTernary(random, rows, cols, type.blockSize() / TernaryTensor.BLOCK);
        Tensor stored = TernaryCodecs.encode(t, new long[] {rows, cols}, type);
        assertThat(stored.byteSize()).isEqualTo(type.byteSize((long) rows * cols, cols));
        TernaryTensor back = TernaryCodecs.decode(stored);
        assertThat(back.codes()).isEqualTo(t.codes());
        assertThat(back.scales()).isEqualTo(t.scales());
        float[] floats = new float[rows * cols];
        Dequantizer.of(type, cols).dequantize(stored.data(), floats, 0, floats.length);
        assertThat(floats).isEqualTo(t.toFloats());
    }

    /** Codes in {-1, 0, +1} (every ternary type holds them) and fp16 scales shared by {@code tied} 128-blocks in a row. */
    private static TernaryTensor randomTernary(Random random, int rows, int cols, int tied) {
        byte[] codes = new byte[rows * cols];
        for (int i = 0; i < codes.length; i++) codes[i] = (byte) (random.nextInt(3) - 1);
        float[] scales = new float[rows * cols / TernaryTensor.BLOCK];
        for (int i = 0; i < scales.length; i += tied) {
            Arrays.fill(scales, i, i + tied, Float.float16ToFloat(Float.floatToFloat16(random.nextFloat() * 0.1f)));
        }
        return new TernaryTensor("w", rows, cols, scales, codes);
    }
}
