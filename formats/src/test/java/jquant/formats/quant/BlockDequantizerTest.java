package jquant.formats.quant;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.util.Random;
import jquant.formats.DType;
import jquant.formats.Dequantizer;
import org.junit.jupiter.api.Test;

/**
 * Each block format against its definition: blocks are packed here from the layout as the spec words
 * it (not by inverting the decoder), then decoded and compared element by element, exactly.
 */
class BlockDequantizerTest {
    private static final int BLOCKS = 3;
    private static final int DST_OFFSET = 5;
    private final Random random = new Random(20261130);

    private short randomScale() {
        return Float.floatToFloat16((random.nextFloat() - 0.5f) * 0.25f);
    }

    static void putHalf(byte[] b, int at, short h) {
        b[at] = (byte) h;
        b[at + 1] = (byte) (h >> 8);
    }

    static float[] decode(DType type, byte[] bytes, int elements) {
        float[] out = new float[elements + DST_OFFSET];
        Dequantizer.of(type).dequantize(MemorySegment.ofArray(bytes), out, DST_OFFSET, elements);
        for (int i = 0; i < DST_OFFSET; i++) assertThat(out[i]).isZero();
        float[] decoded = new float[elements];
        System.arraycopy(out, DST_OFFSET, decoded, 0, elements);
        return decoded;
    }

    @Test
    void q8_0IsSignedByteTimesScale() {
        byte[] bytes = new byte[BLOCKS * 34];
        float[] expected = new float[BLOCKS * 32];
        for (int b = 0; b < BLOCKS; b++) {
            short d = randomScale();
            putHalf(bytes, b * 34, d);
            for (int i = 0; i < 32; i++) {
                byte q = (byte) (random.nextInt(256) - 128);
                bytes[b * 34 + 2 + i] = q;
                expected[b * 32 + i] = q * Float.float16ToFloat(d);
            }
        }
        bytes[2] = Byte.MIN_VALUE;
        expected[0] = -128 * Float.float16ToFloat((short) ((bytes[0] & 0xFF) | bytes[1] << 8));
        assertThat(decode(DType.Q8_0, bytes, BLOCKS * 32)).containsExactly(expected);
    }

    @Test
    void q4_0LowNibblesAreTheFirstHalf() {
        byte[] bytes = new byte[BLOCKS * 18];
        float[] expected = new float[BLOCKS * 32];
        for (int b = 0; b < BLOCKS; b++) {
            short d = randomScale();
            putHalf(bytes, b * 18, d);
            int[] codes = random.ints(32, 0, 16).toArray();
            for (int j = 0; j < 16; j++) bytes[b * 18 + 2 + j] = (byte) (codes[j] | codes[j + 16] << 4);
            for (int i = 0; i < 32; i++) expected[b * 32 + i] = (codes[i] - 8) * Float.float16ToFloat(d);
        }
        assertThat(decode(DType.Q4_0, bytes, BLOCKS * 32)).containsExactly(expected);
    }

    @Test
    void tq2_0TwoBitCodesStrideThirtyTwoInEachHalf() {
        byte[] bytes = new byte[BLOCKS * 66];
        float[] expected = new float[BLOCKS * 256];
        for (int b = 0; b < BLOCKS; b++) {
            short d = randomScale();
            putHalf(bytes, b * 66 + 64, d);
            int[] codes = random.ints(256, 0, 4).toArray(); // includes the never-written code 3
            for (int half = 0; half < 2; half++) {
                for (int n = 0; n < 4; n++) {
                    for (int m = 0; m < 32; m++) {
                        bytes[b * 66 + 32 * half + m] |= (byte) (codes[128 * half + 32 * n + m] << (2 * n));
                    }
                }
            }
            for (int i = 0; i < 256; i++) expected[b * 256 + i] = (codes[i] - 1) * Float.float16ToFloat(d);
        }
        assertThat(decode(DType.TQ2_0, bytes, BLOCKS * 256)).containsExactly(expected);
    }

    @Test
    void pq2_0FourConsecutiveWeightsPerByteLowBitsFirstAndCode3IsPlusTwo() {
        byte[] bytes = new byte[BLOCKS * 34];
        float[] expected = new float[BLOCKS * 128];
        for (int b = 0; b < BLOCKS; b++) {
            short d = randomScale();
            putHalf(bytes, b * 34, d);
            int[] codes = random.ints(128, 0, 4).toArray();
            for (int j = 0; j < 128; j++) bytes[b * 34 + 2 + j / 4] |= (byte) (codes[j] << (2 * (j % 4)));
            for (int j = 0; j < 128; j++) expected[b * 128 + j] = (codes[j] - 1) * Float.float16ToFloat(d);
        }
        float[] decoded = decode(DType.PQ2_0, bytes, BLOCKS * 128);
        assertThat(decoded).containsExactly(expected);

        byte[] allThrees = new byte[34];
        putHalf(allThrees, 0, Float.floatToFloat16(0.5f));
        java.util.Arrays.fill(allThrees, 2, 34, (byte) 0xFF);
        assertThat(decode(DType.PQ2_0, allThrees, 128)).containsOnly(1.0f);
    }

    /** The stored byte for five trits, most significant first: ceil(q · 256 / 243). */
    static byte encodeTrits(int... trits) {
        int q = 0;
        for (int n = 0; n < 5; n++) q = q * 3 + (n < trits.length ? trits[n] : 0);
        return (byte) ((q * 256 + 242) / 243);
    }

    @Test
    void everyFiveTritByteDecodesToItsDigits() {
        for (int q = 0; q < 243; q++) {
            int[] digits = {q / 81, q / 27 % 3, q / 9 % 3, q / 3 % 3, q % 3};
            int stored = encodeTrits(digits) & 0xFF;
            for (int n = 0; n < 5; n++) assertThat(Trits.digit(stored, n)).as("q=%d digit %d", q, n).isEqualTo(digits[n]);
        }
    }

    /** Packs trits of one staged base-3 block as ggml's layout describes it. */
    private static void packStaged(byte[] bytes, int base, int[] trits, int[] stages, int qhOffset, int qhBytes) {
        int at = base;
        int element = 0;
        for (int c : stages) {
            for (int m = 0; m < c; m++) {
                int[] t = new int[5];
                for (int n = 0; n < 5; n++) t[n] = trits[element + n * c + m];
                bytes[at + m] = encodeTrits(t);
            }
            at += c;
            element += 5 * c;
        }
        for (int h = 0; h < qhBytes; h++) {
            int[] t = new int[4];
            for (int n = 0; n < 4; n++) t[n] = trits[element + n * qhBytes + h];
            bytes[base + qhOffset + h] = encodeTrits(t);
        }
    }

    private void checkStaged(DType type, int blockWeights, int blockBytes, int[] stages, int qhOffset, int qhBytes, int scaleOffset) {
        byte[] bytes = new byte[BLOCKS * blockBytes];
        float[] expected = new float[BLOCKS * blockWeights];
        for (int b = 0; b < BLOCKS; b++) {
            short d = randomScale();
            putHalf(bytes, b * blockBytes + scaleOffset, d);
            int[] trits = random.ints(blockWeights, 0, 3).toArray();
            packStaged(bytes, b * blockBytes, trits, stages, qhOffset, qhBytes);
            for (int i = 0; i < blockWeights; i++) expected[b * blockWeights + i] = (trits[i] - 1) * Float.float16ToFloat(d);
        }
        assertThat(decode(type, bytes, BLOCKS * blockWeights)).containsExactly(expected);
    }

    @Test
    void tq1_0StagesOf32Then16ThenQh() {
        checkStaged(DType.TQ1_0, 256, 54, new int[] {32, 16}, 48, 4, 52);
    }

    @Test
    void ptq1_0StagesOf16Then8ThenQhScaleLast() {
        checkStaged(DType.PTQ1_0, 128, 28, new int[] {16, 8}, 24, 2, 26);
    }

    @Test
    void exactlyTheDecodableTypesHaveADecoder() {
        for (DType t : DType.values()) {
            if (t.isDecodable()) {
                assertThat(Dequantizer.of(t, t.blockSize())).as(t.name()).isNotNull();
            } else {
                assertThatThrownBy(() -> Dequantizer.of(t)).as(t.name()).isInstanceOf(UnsupportedOperationException.class)
                        .hasMessageContainingAll(t.name(), "id " + t.ggmlId());
            }
        }
    }

    @Test
    void partialBlocksAreRefused() {
        for (DType t : DType.values()) {
            if (!t.isQuantized() || !t.isDecodable()) continue;
            byte[] bytes = new byte[t.blockBytes() * 2];
            assertThatThrownBy(() -> Dequantizer.of(t, t.blockSize()).dequantize(MemorySegment.ofArray(bytes), new float[t.blockSize() * 2], 0, t.blockSize() + 1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("whole blocks");
        }
    }
}
