package jquant.runtime;

import jquant.formats.Architecture;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.DType;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.formats.TensorKind;
import jquant.formats.gguf.GgufConverter;
import jquant.formats.synthetic.SyntheticHfFolder;
import jquant.formats.synthetic.SyntheticLlama;
import jquant.testsupport.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Llama 3.x and Qwen2 checked on generated Hugging Face folders of hand-derivable size against a plain
 * double-precision forward pass written here from Hugging Face transformers' modeling code
 * (LlamaForCausalLM / Qwen2ForCausalLM: RMSNorm, q/k/v projections with Qwen2's biases, rotate-half RoPE
 * with {@code _compute_llama3_parameters}'s frequencies, causal grouped-query attention, SwiGLU), then the
 * same folders converted to GGUF (q/k rows permuted back for Llama, kept for Qwen2) and run again.
 */
class ModelFamiliesTest {
    private static final int[] TOKENS = {1, 5, 300, 42, 7, 99, 250, 3, 17, 400, 12, 64, 11, 500, 2, 33};
    private static final long SEED = 7;
    /** float32 runtime against the double reference. */
    private static final double TOLERANCE = 2e-4;

    /** Llama 3.x: head dim 8 ≠ 16 / 4, tied head, rope_scaling llama3 whose three branches all occur (λ = 6.3, 63 | 628 | 6283 vs 256, 1024). */
    static final ModelConfig LLAMA3 = new ModelConfig(Architecture.LLAMA, 16, 40, 2, 4, 2, 8, 512, 64, 10000f, null, 1e-5f, true);
    static final SyntheticHfFolder.Llama3Scaling SCALING = new SyntheticHfFolder.Llama3Scaling(8, 1, 4, 1024);
    /** Qwen2: q/k/v biases, theta 10^6, tied head. */
    static final ModelConfig QWEN2 = new ModelConfig(Architecture.QWEN2, 16, 40, 2, 4, 2, 4, 512, 64, 1000000f, null, 1e-6f, true);

    @TempDir
    Path dir;

    @Test
    void llama3MatchesTheReferenceAsHfFolderAndAsConvertedGguf() throws Exception {
        checkFamily(LLAMA3, SCALING, RopeConvention.ADJACENT_PAIRS);
    }

    @Test
    void qwen2MatchesTheReferenceAsHfFolderAndAsConvertedGguf() throws Exception {
        checkFamily(QWEN2, null, RopeConvention.ROTATE_HALF);
    }

    private void checkFamily(ModelConfig config, SyntheticHfFolder.Llama3Scaling scaling, RopeConvention ggufRope) throws Exception {
        Path hf = dir.resolve("hf");
        SyntheticHfFolder.write(hf, config, scaling, SEED, DType.F32, SharedFiles.model("stories260K-hf"), 1, 2);
        double[][] expected = Reference.logits(new SyntheticLlama(config, SEED), scaling, TOKENS, true);
        float[] fromHf;
        try (Checkpoint c = Checkpoints.open(hf)) {
            assertThat(c.config().architecture()).isEqualTo(config.architecture());
            assertThat(c.config().headDim()).isEqualTo(config.headDim());
            assertThat(c.config().ropeScaling() != null).isEqualTo(scaling != null);
            fromHf = LlamaModel.load(c).newSession().forward(TOKENS, 0);
        }
        assertClose(fromHf, expected, "HF folder");
        // the reference is sensitive to what is checked: without the scaling (Llama) or the biases (Qwen2) it differs
        double[][] without = scaling != null ? Reference.logits(new SyntheticLlama(config, SEED), null, TOKENS, true)
                : Reference.logits(new SyntheticLlama(config, SEED), null, TOKENS, false);
        assertThat(maxDiff(fromHf, without)).as("distance to the reference without " + (scaling != null ? "scaling" : "biases")).isGreaterThan(1e-2);

        Path gguf = dir.resolve("model.gguf");
        try (Checkpoint c = Checkpoints.open(hf)) {
            GgufConverter.convert(c, GgufConverter.Target.f32, gguf, (name, shape, from, to) -> {});
        }
        try (Checkpoint c = Checkpoints.open(gguf)) {
            assertThat(c.rope()).isEqualTo(ggufRope);
            try (Checkpoint source = Checkpoints.open(hf)) {
                assertThat(c.config()).isEqualTo(source.config());
            }
            float[] fromGguf = LlamaModel.load(c).newSession().forward(TOKENS, 0);
            assertClose(fromGguf, expected, "converted GGUF");
            // the same weights, the same pairs rotated: the same logits to float rounding
            assertThat(maxDiff(fromGguf, toDouble(fromHf, config.vocabSize()))).isLessThan(1e-5);
        }
    }

    @Test
    void refusesOtherArchitecturesByName() throws Exception {
        Path hf = dir.resolve("hf");
        SyntheticHfFolder.write(hf, QWEN2, null, SEED, DType.F32, SharedFiles.model("stories260K-hf"), 1, 2);
        String config = java.nio.file.Files.readString(hf.resolve("config.json"));
        java.nio.file.Files.writeString(hf.resolve("config.json"), config.replace("Qwen2ForCausalLM", "MistralForCausalLM").replace("\"qwen2\"", "\"mistral\""));
        assertThatThrownBy(() -> Checkpoints.open(hf)).hasMessageContaining("architecture MistralForCausalLM is not supported");
    }

    private static void assertClose(float[] actual, double[][] expected, String what) {
        double diff = maxDiff(actual, expected);
        assertThat(diff).as(what + ": max |logit - reference|").isLessThan(TOLERANCE);
    }

    private static double maxDiff(float[] actual, double[][] expected) {
        int vocab = expected[0].length;
        double max = 0;
        for (int t = 0; t < expected.length; t++) {
            for (int i = 0; i < vocab; i++) max = Math.max(max, Math.abs(actual[t * vocab + i] - expected[t][i]));
        }
        return max;
    }

    private static double[][] toDouble(float[] logits, int vocab) {
        double[][] out = new double[logits.length / vocab][vocab];
        for (int i = 0; i < logits.length; i++) out[i / vocab][i % vocab] = logits[i];
        return out;
    }

    /** transformers' forward pass in doubles, on the generated weights read as HF rows. */
    static final class Reference {
        static double[][] logits(SyntheticLlama m, SyntheticHfFolder.Llama3Scaling scaling, int[] tokens, boolean biases) {
            ModelConfig c = m.config();
            int dim = c.dim(), hd = c.headDim(), heads = c.heads(), kvHeads = c.kvHeads(), n = tokens.length, vocab = c.vocabSize();
            double[] invFreq = invFreq(c, scaling);
            float[] emb = m.weights(TensorKind.EMBEDDING, 0);
            double[][] x = new double[n][dim];
            for (int t = 0; t < n; t++) for (int i = 0; i < dim; i++) x[t][i] = emb[tokens[t] * dim + i];
            for (int l = 0; l < c.layers(); l++) {
                double[][] h = norm(x, m.weights(TensorKind.ATTN_NORM, l), c.rmsEps());
                double[][] q = matmul(h, m.weights(TensorKind.WQ, l), heads * hd);
                double[][] k = matmul(h, m.weights(TensorKind.WK, l), kvHeads * hd);
                double[][] v = matmul(h, m.weights(TensorKind.WV, l), kvHeads * hd);
                if (biases && c.architecture().qkvBias()) {
                    add(q, m.weights(TensorKind.Q_BIAS, l));
                    add(k, m.weights(TensorKind.K_BIAS, l));
                    add(v, m.weights(TensorKind.V_BIAS, l));
                }
                for (int t = 0; t < n; t++) {
                    rotateHalf(q[t], heads, hd, invFreq, t);
                    rotateHalf(k[t], kvHeads, hd, invFreq, t);
                }
                double[][] att = new double[n][heads * hd];
                for (int t = 0; t < n; t++) {
                    for (int hh = 0; hh < heads; hh++) {
                        int kv = hh / (heads / kvHeads);
                        double[] s = new double[t + 1];
                        double max = Double.NEGATIVE_INFINITY;
                        for (int p = 0; p <= t; p++) {
                            double dot = 0;
                            for (int d = 0; d < hd; d++) dot += q[t][hh * hd + d] * k[p][kv * hd + d];
                            s[p] = dot / Math.sqrt(hd);
                            max = Math.max(max, s[p]);
                        }
                        double sum = 0;
                        for (int p = 0; p <= t; p++) sum += s[p] = Math.exp(s[p] - max);
                        for (int p = 0; p <= t; p++) for (int d = 0; d < hd; d++) att[t][hh * hd + d] += s[p] / sum * v[p][kv * hd + d];
                    }
                }
                addInPlace(x, matmul(att, m.weights(TensorKind.WO, l), dim));
                double[][] h2 = norm(x, m.weights(TensorKind.FFN_NORM, l), c.rmsEps());
                double[][] gate = matmul(h2, m.weights(TensorKind.W_GATE, l), c.hiddenDim());
                double[][] up = matmul(h2, m.weights(TensorKind.W_UP, l), c.hiddenDim());
                for (int t = 0; t < n; t++) {
                    for (int i = 0; i < c.hiddenDim(); i++) gate[t][i] = gate[t][i] / (1 + Math.exp(-gate[t][i])) * up[t][i];
                }
                addInPlace(x, matmul(gate, m.weights(TensorKind.W_DOWN, l), dim));
            }
            double[][] out = norm(x, m.weights(TensorKind.FINAL_NORM, 0), c.rmsEps());
            return matmul(out, m.weights(c.tiedEmbeddings() ? TensorKind.EMBEDDING : TensorKind.HEAD, 0), vocab);
        }

        /** transformers' default inv_freq, then _compute_llama3_parameters. */
        static double[] invFreq(ModelConfig c, SyntheticHfFolder.Llama3Scaling s) {
            int hd = c.headDim();
            double[] inv = new double[hd / 2];
            for (int i = 0; i < inv.length; i++) {
                inv[i] = 1.0 / Math.pow(c.ropeTheta(), 2.0 * i / hd);
                if (s == null) continue;
                double lowWavelen = s.originalMaxPositionEmbeddings() / s.lowFreqFactor();
                double highWavelen = s.originalMaxPositionEmbeddings() / s.highFreqFactor();
                double wavelen = 2 * Math.PI / inv[i];
                double scaled = wavelen > lowWavelen ? inv[i] / s.factor() : inv[i];
                if (!(wavelen < highWavelen) && !(wavelen > lowWavelen)) {
                    double smooth = (s.originalMaxPositionEmbeddings() / wavelen - s.lowFreqFactor()) / (s.highFreqFactor() - s.lowFreqFactor());
                    scaled = (1 - smooth) * scaled / s.factor() + smooth * scaled;
                }
                inv[i] = scaled;
            }
            return inv;
        }

        /** rotate_half: x·cos + rotate_half(x)·sin with rotate_half(x) = (−x2, x1). */
        static void rotateHalf(double[] v, int heads, int hd, double[] invFreq, int pos) {
            int half = hd / 2;
            for (int h = 0; h < heads; h++) {
                for (int i = 0; i < half; i++) {
                    double a = v[h * hd + i], b = v[h * hd + i + half];
                    double cos = Math.cos(pos * invFreq[i]), sin = Math.sin(pos * invFreq[i]);
                    v[h * hd + i] = a * cos - b * sin;
                    v[h * hd + i + half] = b * cos + a * sin;
                }
            }
        }

        static double[][] norm(double[][] x, float[] w, double eps) {
            double[][] out = new double[x.length][x[0].length];
            for (int t = 0; t < x.length; t++) {
                double ms = 0;
                for (double v : x[t]) ms += v * v;
                double r = 1 / Math.sqrt(ms / x[t].length + eps);
                for (int i = 0; i < x[t].length; i++) out[t][i] = x[t][i] * r * w[i];
            }
            return out;
        }

        /** {@code x · Wᵀ} with W row-major {@code [out][in]}. */
        static double[][] matmul(double[][] x, float[] w, int outDim) {
            int in = x[0].length;
            double[][] out = new double[x.length][outDim];
            for (int t = 0; t < x.length; t++) {
                for (int o = 0; o < outDim; o++) {
                    double s = 0;
                    for (int i = 0; i < in; i++) s += x[t][i] * w[o * in + i];
                    out[t][o] = s;
                }
            }
            return out;
        }

        static void add(double[][] x, float[] b) {
            for (double[] row : x) for (int i = 0; i < b.length; i++) row[i] += b[i];
        }

        static void addInPlace(double[][] x, double[][] y) {
            for (int t = 0; t < x.length; t++) for (int i = 0; i < x[t].length; i++) x[t][i] += y[t][i];
        }
    }
}
