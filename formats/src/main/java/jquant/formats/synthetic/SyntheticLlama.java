package jquant.formats.synthetic;

import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;

import java.util.SplittableRandom;

/**
 * Deterministic Llama-shaped weights with the statistics that make quantization interesting: matrices
 * are Gaussian with the usual {@code 1/sqrt(fan_in)} scale, and a few input channels per block carry
 * outliers (RMSNorm gains of 5-20× on a handful of channels, as trained LLMs show), so per-channel
 * ranges differ the way calibration and bit allocation must cope with.
 *
 * <p>The same seed and config always give the same floats, on any machine (SplittableRandom is
 * specified exactly).
 */
public final class SyntheticLlama {
    /** Fraction of hidden channels that get an outlier norm gain. */
    private static final double OUTLIER_FRACTION = 0.01;
    private static final double OUTLIER_GAIN_MIN = 5;
    private static final double OUTLIER_GAIN_MAX = 20;

    private final ModelConfig config;
    private final long seed;

    public SyntheticLlama(ModelConfig config, long seed) {
        this.config = config;
        this.seed = seed;
    }

    public ModelConfig config() { return config; }

    /** The values of one canonical tensor, row-major {@code [out][in]}; the same on every call. */
    public float[] weights(TensorKind kind, int layer) {
        ModelConfig c = config;
        SplittableRandom rnd = new SplittableRandom(seed * 1_000_003L + kind.ordinal() * 4099L + layer);
        return switch (kind) {
            case ATTN_NORM, FFN_NORM, FINAL_NORM -> normGains(c.dim(), rnd);
            case EMBEDDING, HEAD -> gaussian(c.vocabSize() * c.dim(), 1.0 / Math.sqrt(c.dim()), rnd);
            case WQ -> gaussian(c.qDim() * c.dim(), 1.0 / Math.sqrt(c.dim()), rnd);
            case WO -> gaussian(c.dim() * c.qDim(), 1.0 / Math.sqrt(c.qDim()), rnd);
            case WK, WV -> gaussian(c.kvDim() * c.dim(), 1.0 / Math.sqrt(c.dim()), rnd);
            case W_GATE, W_UP -> gaussian(c.hiddenDim() * c.dim(), 1.0 / Math.sqrt(c.dim()), rnd);
            case W_DOWN -> gaussian(c.dim() * c.hiddenDim(), 1.0 / Math.sqrt(c.hiddenDim()), rnd);
            case Q_BIAS -> gaussian(c.qDim(), 0.1, rnd);
            case K_BIAS, V_BIAS -> gaussian(c.kvDim(), 0.1, rnd);
        };
    }

    private static float[] gaussian(int n, double std, SplittableRandom rnd) {
        float[] w = new float[n];
        for (int i = 0; i < n; i += 2) {
            // Box-Muller: two normals from two uniforms, exactly reproducible.
            double u1 = 1.0 - rnd.nextDouble();
            double u2 = rnd.nextDouble();
            double r = Math.sqrt(-2 * Math.log(u1)) * std;
            w[i] = (float) (r * Math.cos(2 * Math.PI * u2));
            if (i + 1 < n) w[i + 1] = (float) (r * Math.sin(2 * Math.PI * u2));
        }
        return w;
    }

    private static float[] normGains(int n, SplittableRandom rnd) {
        float[] g = new float[n];
        for (int i = 0; i < n; i++) {
            g[i] = (float) (0.8 + 0.4 * rnd.nextDouble());
            if (rnd.nextDouble() < OUTLIER_FRACTION) {
                g[i] *= (float) (OUTLIER_GAIN_MIN + (OUTLIER_GAIN_MAX - OUTLIER_GAIN_MIN) * rnd.nextDouble());
            }
        }
        return g;
    }
}
