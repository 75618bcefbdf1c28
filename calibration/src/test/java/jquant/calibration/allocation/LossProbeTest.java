package jquant.calibration.allocation;

import jquant.calibration.StoriesFixture;
import jquant.formats.Checkpoint;
import jquant.formats.TensorKind;
import jquant.quantize.SymmetricChannelQuantizer;
import jquant.runtime.Compute;
import jquant.runtime.DenseF32Weights;
import jquant.runtime.LinearWeightsFactory;
import jquant.runtime.LlamaModel;
import jquant.runtime.Tokenizer;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

@Slow
class LossProbeTest {

    /** The probe's layer-sequential rerun from the cached inputs gives the divergence a whole forward pass of the changed model gives. */
    @Test
    void rerunFromTheLayerMatchesAWholeForwardPass() throws Exception {
        try (Checkpoint c = StoriesFixture.stories260K()) {
            LossProbe probe = new LossProbe(c, BitAllocation.Sensitivity.ofText(StoriesFixture.text(), 300).tokenIds(c));
            assertThat(probe.tokens()).isEqualTo(300);
            float[] original = c.tensor(TensorKind.W_UP, 2).toFloats();
            assertThat(probe.meanKl(TensorKind.W_UP, 2, original.clone())).isLessThan(1e-6);
            float[] rounded = rounded(original, c.tensor(TensorKind.W_UP, 2).rows(), 3);
            double kl = probe.meanKl(TensorKind.W_UP, 2, rounded.clone());

            Compute compute = Compute.vector();
            LinearWeightsFactory inPlace = LinearWeightsFactory.inPlace(compute);
            LlamaModel base = LlamaModel.load(c, compute, inPlace);
            LlamaModel changed = LlamaModel.load(c, compute, (kind, layer, tensor) -> kind == TensorKind.W_UP && layer == 2
                    ? new DenseF32Weights(rounded, tensor.rows(), tensor.cols(), compute) : inPlace.create(kind, layer, tensor));
            Tokenizer tokenizer = Tokenizer.of(c.vocabulary().orElseThrow());
            int[] tokens = Arrays.copyOf(tokenizer.encode(StoriesFixture.text()), 300);
            int[] second = Arrays.copyOfRange(tokens, 256, 300);
            second[0] = tokenizer.bos();
            double sum = divergence(base, changed, Arrays.copyOf(tokens, 256)) + divergence(base, changed, second);
            assertThat(kl).isGreaterThan(1e-4).isCloseTo(sum / 300, within(1e-6 * kl));
        }
    }

    /**
     * The premise of the sensitivity ΔKL / E: the divergence grows with the square of the weight error
     * (quadratic around the float model), so twice the error in one matrix gives about four times the divergence.
     */
    @Test
    void divergenceIsQuadraticInTheWeightError() throws Exception {
        try (Checkpoint c = StoriesFixture.stories260K()) {
            LossProbe probe = new LossProbe(c, BitAllocation.Sensitivity.ofText(StoriesFixture.text(), 256).tokenIds(c));
            for (TensorKind kind : new TensorKind[] {TensorKind.WV, TensorKind.W_DOWN}) {
                float[] w = c.tensor(kind, 1).toFloats();
                float[] error = new float[w.length];
                Random random = new Random(5);
                double energy = 0;
                for (float x : w) energy += (double) x * x;
                float sigma = (float) (0.02 * Math.sqrt(energy / w.length));
                for (int i = 0; i < error.length; i++) error[i] = (float) random.nextGaussian() * sigma;
                double once = probe.meanKl(kind, 1, plus(w, error, 1));
                double twice = probe.meanKl(kind, 1, plus(w, error, 2));
                assertThat(twice / once).as(kind.name()).isBetween(3.6, 4.4);
            }
        }
    }

    /** A matrix rounded coarser moves the output more, and the unchanged model is restored after each probe. */
    @Test
    void coarserRoundingDivergesMore() throws Exception {
        try (Checkpoint c = StoriesFixture.stories260K()) {
            LossProbe probe = new LossProbe(c, BitAllocation.Sensitivity.ofText(StoriesFixture.text(), 256).tokenIds(c));
            float[] w = c.tensor(TensorKind.WQ, 0).toFloats();
            int rows = c.tensor(TensorKind.WQ, 0).rows();
            double two = probe.meanKl(TensorKind.WQ, 0, rounded(w, rows, 2));
            double four = probe.meanKl(TensorKind.WQ, 0, rounded(w, rows, 4));
            assertThat(two).isGreaterThan(4 * four);
            assertThat(four).isGreaterThan(0);
            assertThat(probe.meanKl(TensorKind.WK, 3, c.tensor(TensorKind.WK, 3).toFloats())).isLessThan(1e-6);
        }
    }

    private static float[] rounded(float[] w, int rows, int bits) {
        byte[] widths = new byte[rows];
        Arrays.fill(widths, (byte) bits);
        return SymmetricChannelQuantizer.quantize(w, rows, w.length / rows, widths).dequantize();
    }

    private static float[] plus(float[] w, float[] error, int times) {
        float[] out = w.clone();
        for (int i = 0; i < out.length; i++) out[i] += times * error[i];
        return out;
    }

    /** Σ over the window's positions of KL(base ‖ changed). */
    private static double divergence(LlamaModel base, LlamaModel changed, int[] window) {
        float[] p = base.newSession(window.length).forward(window, 0);
        float[] q = changed.newSession(window.length).forward(window, 0);
        int vocab = base.config().vocabSize();
        double sum = 0;
        for (int i = 0; i < window.length; i++) {
            double lp = logSumExp(p, i * vocab, vocab), lq = logSumExp(q, i * vocab, vocab);
            for (int t = 0; t < vocab; t++) {
                double a = p[i * vocab + t] - lp;
                sum += Math.exp(a) * (a - (q[i * vocab + t] - lq));
            }
        }
        return sum;
    }

    private static double logSumExp(float[] x, int off, int n) {
        double max = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) max = Math.max(max, x[off + i]);
        double z = 0;
        for (int i = 0; i < n; i++) z += Math.exp(x[off + i] - max);
        return max + Math.log(z);
    }
}
