package jquant.formats.quant;

import jquant.formats.DType;
import jquant.formats.Dequantizer;
import jquant.formats.TernaryCodecs;
import jquant.formats.Tensor;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Random;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every decodable type through the {@link DType} registry, in one loop (ggml's
 * {@code test-quantize-fns}): at odd block counts and an odd output offset, a decode of the whole run
 * equals the decodes of its blocks one by one; a ternary type also round-trips codes and scales through
 * its encoder, and its float decoder gives exactly the codes times the scales.
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
        if (!TernaryCodecs.isTernary(type)) return;
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
