package jquant.pack.ternary;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Random;
import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.TernaryDetector;
import jquant.formats.quant.TernaryDetector.Granularity;
import jquant.formats.quant.TernaryTensor;
import org.junit.jupiter.api.Test;

class TernarizerTest {

    @Test
    void absmeanTernarizerFollowsBitNet() {
        Random rnd = new Random(3);
        float[] w = new float[4 * 128];
        for (int i = 0; i < w.length; i++) w[i] = (float) rnd.nextGaussian();
        TernaryTensor t = Ternarizer.absmean("w", w, 4, 128);
        double mean = 0;
        for (float v : w) mean += Math.abs(v);
        float s = (float) (mean / w.length);
        for (int i = 0; i < w.length; i++) {
            float ratio = w[i] / s;
            int expected = ratio >= 1.5f ? 1 : ratio <= -1.5f ? -1 : (int) Math.rint(ratio);
            assertThat(t.codes()[i]).isEqualTo((byte) Math.max(-1, Math.min(1, expected)));
        }
        assertThat(t.scales()[0]).isEqualTo(Float.float16ToFloat(Float.floatToFloat16(s)));
        // the result is exactly ternary per tensor, and encodable
        assertThat(TernaryDetector.detect("w", t.toFloats(), 4, 128, Granularity.PER_TENSOR).codes())
                .isEqualTo(t.codes());
        assertThat(Pq2Block.decode("w", Pq2Block.encode(t), 4, 128).toFloats()).isEqualTo(t.toFloats());
    }
}
