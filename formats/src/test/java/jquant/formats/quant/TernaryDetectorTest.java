package jquant.formats.quant;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Random;
import jquant.formats.quant.TernaryDetector.Granularity;
import jquant.formats.quant.TernaryDetector.NotTernaryException;
import org.junit.jupiter.api.Test;

class TernaryDetectorTest {

    /** Random ternary codes and fp16-exact scales, seeded. */
    private static TernaryTensor randomTernary(long seed, int rows, int cols) {
        Random rnd = new Random(seed);
        byte[] codes = new byte[rows * cols];
        for (int i = 0; i < codes.length; i++) codes[i] = (byte) (rnd.nextInt(3) - 1);
        float[] scales = new float[rows * cols / TernaryTensor.BLOCK];
        for (int i = 0; i < scales.length; i++) scales[i] = Float.float16ToFloat(Float.floatToFloat16(rnd.nextFloat() * 0.1f));
        return new TernaryTensor("w", rows, cols, scales, codes);
    }

    @Test
    void recoversPerBlockTernaryExactly() {
        TernaryTensor t = randomTernary(1, 4, 256);
        TernaryTensor found = TernaryDetector.detect("w", t.toFloats(), 4, 256, Granularity.PER_BLOCK);
        assertThat(found.codes()).isEqualTo(t.codes());
        for (int i = 0; i < t.scales().length; i++) {
            // a block with no non-zero code has no scale to find
            boolean any = false;
            for (int k = 0; k < 128; k++) any |= t.codes()[i * 128 + k] != 0;
            if (any) assertThat(found.scales()[i]).isEqualTo(Math.abs(t.scales()[i]));
        }
        assertThat(found.toFloats()).isEqualTo(t.toFloats());
    }

    @Test
    void perTensorNeedsOneScale() {
        float[] w = new float[2 * 128];
        w[3] = 0.25f;
        w[200] = -0.25f;
        assertThat(TernaryDetector.detect("w", w, 2, 128, Granularity.PER_TENSOR).toFloats()).isEqualTo(w);
        w[201] = 0.5f; // a second magnitude: fine per block? no — same row-block as -0.25
        assertThatThrownBy(() -> TernaryDetector.detect("w", w, 2, 128, Granularity.PER_BLOCK))
                .isInstanceOf(NotTernaryException.class).hasMessageContaining("row 1 col 72");
        w[200] = 0f;
        assertThat(TernaryDetector.detect("w", w, 2, 128, Granularity.PER_BLOCK).toFloats()).isEqualTo(w);
        assertThatThrownBy(() -> TernaryDetector.detect("w", w, 2, 128, Granularity.PER_TENSOR))
                .hasMessageContaining("row 0 col 3").hasMessageContaining("0.25");
    }

    @Test
    void nearlyTernaryIsNotRounded() {
        float[] w = new float[128];
        w[0] = 1f;
        w[9] = Math.nextDown(1f);
        assertThatThrownBy(() -> TernaryDetector.detect("blk.3.attn_q", w, 1, 128, Granularity.PER_BLOCK))
                .hasMessageContaining("blk.3.attn_q").hasMessageContaining("row 0 col 9");
        w[9] = Float.NaN;
        assertThatThrownBy(() -> TernaryDetector.detect("w", w, 1, 128, Granularity.PER_BLOCK)).hasMessageContaining("NaN");
    }
}
