package jquant.formats.quant;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TernaryCodecTest {

    /** Random codes (optionally including +2) and random fp16-exact scales, seeded. */
    static TernaryTensor random(long seed, int rows, int cols, boolean withPlusTwo) {
        Random rnd = new Random(seed);
        byte[] codes = new byte[rows * cols];
        for (int i = 0; i < codes.length; i++) codes[i] = (byte) (rnd.nextInt(withPlusTwo ? 4 : 3) - 1);
        float[] scales = new float[rows * cols / 128];
        for (int i = 0; i < scales.length; i++) scales[i] = Float.float16ToFloat(Float.floatToFloat16(rnd.nextFloat() * 0.1f));
        return new TernaryTensor("w", rows, cols, scales, codes);
    }

    static void assertSame(TernaryTensor a, TernaryTensor b) {
        assertThat(b.rows()).isEqualTo(a.rows());
        assertThat(b.cols()).isEqualTo(a.cols());
        assertThat(b.codes()).isEqualTo(a.codes());
        assertThat(b.scales()).isEqualTo(a.scales());
    }

    @ParameterizedTest
    @ValueSource(ints = {128, 384, 1024})
    void pq2RoundTripsIncludingCodeThreeAsPlusTwo(int cols) {
        TernaryTensor t = random(cols, 5, cols, true);
        byte[] bytes = Pq2Block.encode(t);
        assertThat(bytes).hasSize(5 * cols / 128 * 34);
        assertSame(t, Pq2Block.decode("w", bytes, 5, cols));
    }

    @Test
    void pq2PlacesWeightJAtBits2JMod4OfByteJDiv4() {
        byte[] codes = new byte[128];
        codes[6] = 1;    // u = 2 at byte 1, bits 4..5
        codes[127] = -1; // u = 0 at byte 31, bits 6..7
        float[] scales = {0.5f};
        byte[] b = Pq2Block.encode(new TernaryTensor("w", 1, 128, scales, codes));
        assertThat(Float.float16ToFloat(Pq2Block.scaleBits(b, 0))).isEqualTo(0.5f);
        assertThat(b[2 + 1] & 0xFF).isEqualTo(0b0110_0101);      // weights 4,5,6,7 = u 1,1,2,1
        assertThat(b[2 + 31] & 0xFF).isEqualTo(0b0001_0101);     // weights 124..127 = u 1,1,1,0
    }

    @Test
    void tq2MatchesGgmlLoopOrder() {
        TernaryTensor t = random(7, 3, 512, false);
        // twin scales per 256 so TQ2_0 can hold them
        float[] s = t.scales().clone();
        for (int i = 0; i < s.length; i += 2) s[i + 1] = s[i];
        t = new TernaryTensor("w", 3, 512, s, t.codes());
        byte[] bytes = Tq2Block.encode(t);
        // ggml quantize_row_tq2_0_ref: for j in {0, 32}: for m < 32: q = sum_n (x[m + 32n] + 1) << 2n; x += 128
        byte[] ref = new byte[bytes.length];
        for (int blk = 0; blk < 3 * 2; blk++) {
            int x = blk * 256;
            for (int j = 0; j < 64; j += 32) {
                for (int m = 0; m < 32; m++) {
                    int q = 0;
                    for (int n = 0; n < 4; n++) q += (t.codes()[x + m + n * 32] + 1) << (2 * n);
                    ref[blk * 66 + j + m] = (byte) q;
                }
                x += 128;
            }
            short d = Float.floatToFloat16(t.scales()[blk * 2]);
            ref[blk * 66 + 64] = (byte) d;
            ref[blk * 66 + 65] = (byte) (d >> 8);
        }
        assertThat(bytes).isEqualTo(ref);
        assertSame(t, Tq2Block.decode("w", bytes, 3, 512));
    }

    @Test
    void tq2RejectsTwoScalesUnderOneBlock() {
        TernaryTensor t = random(8, 1, 256, false);
        assertThatThrownBy(() -> Tq2Block.encode(t)).hasMessageContaining("one scale per 256");
    }

    @Test
    void ptq1MatchesGgmlTq1LoopOrderAtBlock128() {
        TernaryTensor t = random(9, 4, 256, false);
        byte[] bytes = Ptq1Block.encode(t);
        assertThat(bytes).hasSize(4 * 2 * 28);
        // ggml quantize_row_tq1_0_ref shape with qs[24], qh[2]: stage 16 (x += 80), stage 8 (x += 40), qh (4 trits, *3)
        byte[] ref = new byte[bytes.length];
        for (int blk = 0; blk < 8; blk++) {
            int x = blk * 128, o = blk * 28;
            for (int c : new int[] {16, 8}) {
                for (int m = 0; m < c; m++) {
                    int q = 0;
                    for (int n = 0; n < 5; n++) q = q * 3 + t.codes()[x + m + n * c] + 1;
                    ref[o + m] = (byte) ((q * 256 + 242) / 243);
                }
                o += c;
                x += 5 * c;
            }
            for (int j = 0; j < 2; j++) {
                int q = 0;
                for (int m = 0; m < 4; m++) q = q * 3 + t.codes()[x + j + m * 2] + 1;
                q *= 3;
                ref[blk * 28 + 24 + j] = (byte) ((q * 256 + 242) / 243);
            }
            short d = Float.floatToFloat16(t.scales()[blk]);
            ref[blk * 28 + 26] = (byte) d;
            ref[blk * 28 + 27] = (byte) (d >> 8);
        }
        assertThat(bytes).isEqualTo(ref);
        assertSame(t, Ptq1Block.decode("w", bytes, 4, 256));
    }

    @Test
    void ptq1DigitFormulaEqualsTwoThresholds() {
        for (int b = 0; b < 256; b++) {
            for (int n = 0; n < 5; n++) {
                int v = b * new int[] {1, 3, 9, 27, 81}[n] & 0xFF;
                int thresholds = (v >= 86 ? 1 : 0) + (v >= 171 ? 1 : 0);
                assertThat(Ptq1Block.digit((byte) b, n)).as("byte %d digit %d", b, n).isEqualTo(thresholds);
            }
        }
    }

    @Test
    void ptq1RejectsPlusTwo() {
        TernaryTensor t = random(10, 1, 128, true);
        assertThatThrownBy(() -> Ptq1Block.encode(t)).hasMessageContaining("not ternary");
    }

    @Test
    void encodersRefuseScalesFp16CannotHold() {
        TernaryTensor t = new TernaryTensor("w", 1, 128, new float[] {0.1f}, new byte[128]);
        assertThatThrownBy(() -> Pq2Block.encode(t)).hasMessageContaining("not an fp16 value");
        assertThat(Pq2Block.decode("w", Pq2Block.encode(t.withFp16Scales()), 1, 128).scales()[0])
                .isEqualTo(Float.float16ToFloat(Float.floatToFloat16(0.1f)));
    }

    @Test
    void t2pRoundTripsAndFollowsTheWriteUpsPacker() throws T2pShapeException {
        TernaryTensor t = random(11, 8, 384, true);
        byte[] bytes = T2pBlock.encode(t);
        assertThat(bytes).hasSize(8 / 4 * 3 * 136);
        assertSame(t, T2pBlock.decode("w", bytes, 8, 384));
        // the T2P write-up's ciot_t2p_pack, transcribed for row group 1, block 2
        int off = (1 * 3 + 2) * 136;
        for (int p = 0; p < 2; p++) {
            for (int wd = 0; wd < 4; wd++) {
                for (int j = 0; j < 16; j++) {
                    int row = 4 + 2 * p + (j >= 8 ? 1 : 0), b = 0;
                    for (int s = 0; s < 4; s++) b |= (t.code(row, 256 + 8 * (4 * wd + s) + (j & 7)) + 1) << (2 * s);
                    assertThat(bytes[off + 8 + 64 * p + 16 * wd + j]).isEqualTo((byte) b);
                }
            }
        }
        for (int r = 0; r < 4; r++) {
            assertThat(Float.float16ToFloat(Pq2Block.scaleBits(bytes, off + 2 * r))).isEqualTo(t.scale(4 + r, 2));
        }
    }

    @Test
    void repackOfPq2EqualsDirectT2pEncoding() throws T2pShapeException {
        TernaryTensor t = random(12, 12, 1024, true);
        assertThat(T2pRepacker.repack("w", Pq2Block.encode(t), 12, 1024)).isEqualTo(T2pBlock.encode(t));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 5, 6, 7})
    void repackRejectsRowsNotMultipleOfFour(int rows) {
        TernaryTensor t = random(rows, rows, 128, false);
        assertThatThrownBy(() -> T2pRepacker.repack("blk.0.ffn_up", Pq2Block.encode(t), rows, 128))
                .isInstanceOf(T2pShapeException.class).hasMessageContaining("blk.0.ffn_up").hasMessageContaining("stock");
    }

    @Test
    void t2pRejectsColsNotMultipleOf128() {
        assertThatThrownBy(() -> T2pRepacker.repack("w", new byte[0], 4, 200)).isInstanceOf(T2pShapeException.class);
        assertThatThrownBy(() -> T2pBlock.decode("w", new byte[0], 4, 64)).isInstanceOf(T2pShapeException.class);
    }
}
