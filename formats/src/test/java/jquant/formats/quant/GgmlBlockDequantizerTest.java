package jquant.formats.quant;

import static jquant.formats.quant.BlockDequantizerTest.decode;
import static jquant.formats.quant.BlockDequantizerTest.putHalf;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Random;
import jquant.formats.DType;
import org.junit.jupiter.api.Test;

/**
 * ggml's Q4_1, Q5_0, Q5_1 and K-quant formats against their definition: each block is packed here the
 * way ggml's reference quantizers ({@code quantize_row_*_ref} in {@code ggml/src/ggml-quants.c}) lay
 * out their codes and scales, from random codes, and the decoded floats must equal the formula
 * evaluated in ggml's float order, exactly.
 */
class GgmlBlockDequantizerTest {
    private static final int BLOCKS = 3;
    private final Random random = new Random(20261201);

    private short randomHalf() {
        return Float.floatToFloat16((random.nextFloat() - 0.5f) * 0.25f);
    }

    private static float f(short half) {
        return Float.float16ToFloat(half);
    }

    @Test
    void q4_1IsCodeTimesScalePlusMin() {
        byte[] bytes = new byte[BLOCKS * 20];
        float[] expected = new float[BLOCKS * 32];
        for (int b = 0; b < BLOCKS; b++) {
            short d = randomHalf(), m = randomHalf();
            putHalf(bytes, b * 20, d);
            putHalf(bytes, b * 20 + 2, m);
            int[] q = random.ints(32, 0, 16).toArray();
            for (int j = 0; j < 16; j++) bytes[b * 20 + 4 + j] = (byte) (q[j] | q[j + 16] << 4);
            for (int i = 0; i < 32; i++) expected[b * 32 + i] = q[i] * f(d) + f(m);
        }
        assertThat(decode(DType.Q4_1, bytes, BLOCKS * 32)).containsExactly(expected);
    }

    /** quantize_row_q5_0_ref / q5_1_ref: nibbles as Q4_0, fifth bits gathered into a little-endian u32. */
    private static void packQ5(byte[] bytes, int qhAt, int[] q) {
        int qh = 0;
        for (int j = 0; j < 16; j++) {
            bytes[qhAt + 4 + j] = (byte) ((q[j] & 0x0F) | (q[j + 16] & 0x0F) << 4);
            qh |= ((q[j] & 0x10) >> 4) << j;
            qh |= ((q[j + 16] & 0x10) >> 4) << (j + 16);
        }
        for (int k = 0; k < 4; k++) bytes[qhAt + k] = (byte) (qh >>> (8 * k));
    }

    @Test
    void q5_0FifthBitsComeFromTheMask() {
        byte[] bytes = new byte[BLOCKS * 22];
        float[] expected = new float[BLOCKS * 32];
        for (int b = 0; b < BLOCKS; b++) {
            short d = randomHalf();
            putHalf(bytes, b * 22, d);
            int[] q = random.ints(32, 0, 32).toArray();
            packQ5(bytes, b * 22 + 2, q);
            for (int i = 0; i < 32; i++) expected[b * 32 + i] = (q[i] - 16) * f(d);
        }
        assertThat(decode(DType.Q5_0, bytes, BLOCKS * 32)).containsExactly(expected);
    }

    @Test
    void q5_1FifthBitsComeFromTheMaskPlusMin() {
        byte[] bytes = new byte[BLOCKS * 24];
        float[] expected = new float[BLOCKS * 32];
        for (int b = 0; b < BLOCKS; b++) {
            short d = randomHalf(), m = randomHalf();
            putHalf(bytes, b * 24, d);
            putHalf(bytes, b * 24 + 2, m);
            int[] q = random.ints(32, 0, 32).toArray();
            packQ5(bytes, b * 24 + 4, q);
            for (int i = 0; i < 32; i++) expected[b * 32 + i] = q[i] * f(d) + f(m);
        }
        assertThat(decode(DType.Q5_1, bytes, BLOCKS * 32)).containsExactly(expected);
    }

    /** The 2-bit packing of quantize_row_q2_K_ref / q3_K_ref: per 128 weights, 32 bytes of four 2-bit planes. */
    private static void pack2BitPlanes(byte[] bytes, int qsAt, int[] low2) {
        for (int j = 0; j < 256; j += 128) {
            for (int l = 0; l < 32; l++) {
                bytes[qsAt + j / 4 + l] = (byte) (low2[j + l] | low2[j + l + 32] << 2 | low2[j + l + 64] << 4 | low2[j + l + 96] << 6);
            }
        }
    }

    @Test
    void q2_KSubBlockScalesAndMinsOfSixteen() {
        byte[] bytes = new byte[BLOCKS * 84];
        float[] expected = new float[BLOCKS * 256];
        for (int b = 0; b < BLOCKS; b++) {
            int at = b * 84;
            short d = randomHalf(), dmin = randomHalf();
            putHalf(bytes, at + 80, d);
            putHalf(bytes, at + 82, dmin);
            int[] sc = random.ints(16, 0, 16).toArray();
            int[] m = random.ints(16, 0, 16).toArray();
            for (int j = 0; j < 16; j++) bytes[at + j] = (byte) (sc[j] | m[j] << 4);
            int[] q = random.ints(256, 0, 4).toArray();
            pack2BitPlanes(bytes, at + 16, q);
            for (int i = 0; i < 256; i++) {
                float dl = f(d) * sc[i / 16];
                float ml = f(dmin) * m[i / 16];
                expected[b * 256 + i] = dl * q[i] - ml;
            }
        }
        assertThat(decode(DType.Q2_K, bytes, BLOCKS * 256)).containsExactly(expected);
    }

    @Test
    void q3_KHighBitMaskSignedSixBitScales() {
        byte[] bytes = new byte[BLOCKS * 110];
        float[] expected = new float[BLOCKS * 256];
        for (int b = 0; b < BLOCKS; b++) {
            int at = b * 110;
            short d = randomHalf();
            putHalf(bytes, at + 108, d);
            int[] stored = random.ints(16, 0, 64).toArray(); // scale + 32
            stored[0] = 0;
            stored[15] = 63;
            for (int j = 0; j < 16; j++) { // quantize_row_q3_K_ref's scale packing
                int l = stored[j];
                if (j < 8) bytes[at + 96 + j] |= (byte) (l & 0xF);
                else bytes[at + 96 + j - 8] |= (byte) ((l & 0xF) << 4);
                bytes[at + 96 + 8 + j % 4] |= (byte) ((l >> 4) << (2 * (j / 4)));
            }
            int[] L = random.ints(256, 0, 8).toArray(); // code + 4
            int[] low2 = new int[256];
            int m = 0, hm = 1;
            for (int j = 0; j < 256; j++) { // high bit of the first 32 codes into bit 0, the next 32 into bit 1, …
                low2[j] = L[j];
                if (L[j] > 3) {
                    bytes[at + m] |= (byte) hm;
                    low2[j] -= 4;
                }
                if (++m == 32) {
                    m = 0;
                    hm <<= 1;
                }
            }
            pack2BitPlanes(bytes, at + 32, low2);
            for (int i = 0; i < 256; i++) {
                float dl = f(d) * (stored[i / 16] - 32);
                expected[b * 256 + i] = dl * (L[i] - 4);
            }
        }
        assertThat(decode(DType.Q3_K, bytes, BLOCKS * 256)).containsExactly(expected);
    }

    /** quantize_row_q4_K_ref's packing of eight 6-bit scales and mins into 12 bytes at {@code at}. */
    private static void packKScales(byte[] bytes, int at, int[] ls, int[] lm) {
        for (int j = 0; j < 8; j++) {
            if (j < 4) {
                bytes[at + j] = (byte) ls[j];
                bytes[at + j + 4] = (byte) lm[j];
            } else {
                bytes[at + j + 4] = (byte) ((ls[j] & 0xF) | (lm[j] & 0xF) << 4);
                bytes[at + j - 4] |= (byte) ((ls[j] >> 4) << 6);
                bytes[at + j] |= (byte) ((lm[j] >> 4) << 6);
            }
        }
    }

    private void checkQ4OrQ5_K(DType type, int blockBytes, boolean fifthBit) {
        int qsAt = fifthBit ? 48 : 16;
        byte[] bytes = new byte[BLOCKS * blockBytes];
        float[] expected = new float[BLOCKS * 256];
        for (int b = 0; b < BLOCKS; b++) {
            int at = b * blockBytes;
            short d = randomHalf(), dmin = randomHalf();
            putHalf(bytes, at, d);
            putHalf(bytes, at + 2, dmin);
            int[] ls = random.ints(8, 0, 64).toArray();
            int[] lm = random.ints(8, 0, 64).toArray();
            ls[7] = 63;
            lm[6] = 63;
            packKScales(bytes, at + 4, ls, lm);
            int[] L = random.ints(256, 0, fifthBit ? 32 : 16).toArray();
            int m1 = 1, m2 = 2;
            for (int n = 0, q = at + qsAt; n < 256; n += 64, q += 32) {
                for (int l = 0; l < 32; l++) {
                    bytes[q + l] = (byte) ((L[n + l] & 0xF) | (L[n + l + 32] & 0xF) << 4);
                    if (fifthBit && L[n + l] > 15) bytes[at + 16 + l] |= (byte) m1;
                    if (fifthBit && L[n + l + 32] > 15) bytes[at + 16 + l] |= (byte) m2;
                }
                m1 <<= 2;
                m2 <<= 2;
            }
            for (int i = 0; i < 256; i++) {
                float dl = f(d) * ls[i / 32];
                float ml = f(dmin) * lm[i / 32];
                expected[b * 256 + i] = dl * L[i] - ml;
            }
        }
        assertThat(decode(type, bytes, BLOCKS * 256)).containsExactly(expected);
    }

    @Test
    void q4_KSixBitScalesAndMinsOfThirtyTwo() {
        checkQ4OrQ5_K(DType.Q4_K, 144, false);
    }

    @Test
    void q5_KAddsTheFifthBitPlane() {
        checkQ4OrQ5_K(DType.Q5_K, 176, true);
    }

    @Test
    void q6_KLowNibblesHighPairsSignedByteScales() {
        byte[] bytes = new byte[BLOCKS * 210];
        float[] expected = new float[BLOCKS * 256];
        for (int b = 0; b < BLOCKS; b++) {
            int at = b * 210;
            short d = randomHalf();
            putHalf(bytes, at + 208, d);
            byte[] sc = new byte[16];
            random.nextBytes(sc);
            sc[3] = Byte.MIN_VALUE;
            System.arraycopy(sc, 0, bytes, at + 192, 16);
            int[] L = random.ints(256, 0, 64).toArray(); // code + 32
            for (int j = 0, ql = at, qh = at + 128; j < 256; j += 128, ql += 64, qh += 32) { // quantize_row_q6_K_ref
                for (int l = 0; l < 32; l++) {
                    bytes[ql + l] = (byte) ((L[j + l] & 0xF) | (L[j + l + 64] & 0xF) << 4);
                    bytes[ql + l + 32] = (byte) ((L[j + l + 32] & 0xF) | (L[j + l + 96] & 0xF) << 4);
                    bytes[qh + l] = (byte) ((L[j + l] >> 4) | (L[j + l + 32] >> 4) << 2 | (L[j + l + 64] >> 4) << 4 | (L[j + l + 96] >> 4) << 6);
                }
            }
            for (int i = 0; i < 256; i++) expected[b * 256 + i] = f(d) * sc[i / 16] * (L[i] - 32);
        }
        assertThat(decode(DType.Q6_K, bytes, BLOCKS * 256)).containsExactly(expected);
    }

    @Test
    void q8_KFloat32ScaleTimesSignedBytesIgnoringBlockSums() {
        byte[] bytes = new byte[BLOCKS * 292];
        float[] expected = new float[BLOCKS * 256];
        java.nio.ByteBuffer buf = java.nio.ByteBuffer.wrap(bytes).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (int b = 0; b < BLOCKS; b++) {
            int at = b * 292;
            float d = (random.nextFloat() - 0.5f) * 1e-3f; // fp32: more precision than any fp16 could hold
            buf.putFloat(at, d);
            for (int i = 0; i < 256; i++) {
                byte q = (byte) random.nextInt(256);
                bytes[at + 4 + i] = q;
                expected[b * 256 + i] = d * q;
            }
            for (int g = 0; g < 16; g++) {
                short sum = 0;
                for (int i = 0; i < 16; i++) sum += bytes[at + 4 + 16 * g + i];
                buf.putShort(at + 260 + 2 * g, sum);
            }
        }
        assertThat(decode(DType.Q8_K, bytes, BLOCKS * 256)).containsExactly(expected);
    }

    @Test
    void layoutConstantsMatchTheDTypeTable() {
        assertThat(Q4_1Block.BYTES).isEqualTo(DType.Q4_1.blockBytes());
        assertThat(Q5_0Block.BYTES).isEqualTo(DType.Q5_0.blockBytes());
        assertThat(Q5_1Block.BYTES).isEqualTo(DType.Q5_1.blockBytes());
        assertThat(Q2_KBlock.BYTES).isEqualTo(DType.Q2_K.blockBytes());
        assertThat(Q3_KBlock.BYTES).isEqualTo(DType.Q3_K.blockBytes());
        assertThat(Q4_KBlock.BYTES).isEqualTo(DType.Q4_K.blockBytes());
        assertThat(Q5_KBlock.BYTES).isEqualTo(DType.Q5_K.blockBytes());
        assertThat(Q6_KBlock.BYTES).isEqualTo(DType.Q6_K.blockBytes());
        assertThat(Q8_KBlock.BYTES).isEqualTo(DType.Q8_K.blockBytes());
    }
}
