package jquant.calibration.allocation;

import jquant.calibration.Calibrator;
import jquant.core.WorkerPool;
import jquant.formats.Checkpoint;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;
import jquant.runtime.Compute;
import jquant.runtime.DenseF32Weights;
import jquant.runtime.InferenceSession;
import jquant.runtime.LinearWeights;
import jquant.runtime.LinearWeightsFactory;
import jquant.runtime.LlamaModel;
import jquant.runtime.Perplexity;
import jquant.runtime.TokenEmbedding;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The mean KL divergence KL(model ‖ model with one linear layer's weights replaced) over a sample of
 * text: how much changing that layer alone moves the output distribution.
 *
 * <p>The text is cut into windows as calibration cuts it (each window from an empty cache, BOS in
 * place of the first token of every window after the first). The float model runs once, layer by
 * layer, keeping every layer's input hidden states and the final logits, so probing a
 * matrix of layer {@code l} reruns only layers {@code l … L−1} and the classifier. Every position of a
 * window is scored, with eval's divergence ({@link Perplexity#divergence}). The forward pass and the per-position sums do not depend on the thread count, so
 * the same text gives the same divergences on any machine.
 */
final class LossProbe {
    /** Tokens per window: long enough for attention to matter, short enough that a small sample has several windows. */
    static final int CONTEXT = 256;

    private final int layers;
    private final int vocab;
    private final List<int[]> windows;
    /** {@code inputs[l][w]}: window w's hidden states entering layer l. */
    private final float[][][] inputs;
    /** {@code finals[w]}: window w's hidden states leaving the last layer, before the final norm. */
    private final float[][] finals;
    private final int dim;
    /** Per window, the unchanged model's logits, {@code [n][vocab]}, and their log-sum-exp per position. */
    private final float[][] baseLogits;
    private final double[][] baseLse;
    private final Map<String, Replaceable> linears = new HashMap<>();
    private final Compute compute;
    private final InferenceSession session;

    /**
     * Runs {@code checkpoint} in float32 over {@code tokens} (token ids, as the tokenizer gives a text).
     *
     * @throws IllegalArgumentException if the checkpoint has no vocabulary, there are fewer than 2 tokens or one is not in the vocabulary
     */
    LossProbe(Checkpoint checkpoint, int[] tokens) {
        // Only the vocabulary's BOS is needed (the tokens come encoded): a tokenizer would parse a BPE vocabulary's merges again.
        Vocabulary vocabulary = checkpoint.vocabulary().orElseThrow(
                () -> new IllegalArgumentException(checkpoint.source() + ": no tokenizer vocabulary, which the loss probe needs (its BOS)"));
        if (tokens.length < 2) throw new IllegalArgumentException("the sensitivity sample has only " + tokens.length + " token(s)");
        this.layers = checkpoint.config().layers();
        this.vocab = checkpoint.config().vocabSize();
        for (int t : tokens) {
            if (t < 0 || t >= vocab) throw new IllegalArgumentException("the sensitivity sample has token id " + t + ", outside the vocabulary of " + vocab);
        }
        int context = Math.min(CONTEXT, checkpoint.config().maxSeqLen());
        int bos = vocabulary.addBos() && vocabulary.bos() >= 0 ? vocabulary.bos() : -1;
        this.windows = Calibrator.windows(tokens, context, bos);
        this.compute = Compute.vector();
        LinearWeightsFactory inPlace = LinearWeightsFactory.inPlace(compute);
        LlamaModel model = LlamaModel.load(checkpoint, compute, (kind, layer, tensor) -> {
            Replaceable r = new Replaceable(inPlace.create(kind, layer, tensor));
            linears.put(kind.canonicalName(layer), r);
            return r;
        });
        this.session = model.newSession(context);
        this.dim = checkpoint.config().dim();
        inputs = new float[layers][windows.size()][];
        finals = new float[windows.size()][];
        baseLogits = new float[windows.size()][];
        baseLse = new double[windows.size()][];
        for (int w = 0; w < windows.size(); w++) {
            int n = windows.get(w).length;
            float[] h = new float[n * dim];
            session.embed(windows.get(w), h);
            for (int l = 0; l < layers; l++) {
                inputs[l][w] = h.clone();
                session.forwardBlock(l, h, n);
            }
            finals[w] = h.clone();
            baseLogits[w] = session.logits(h, n);
            baseLse[w] = new double[n];
            for (int i = 0; i < n; i++) baseLse[w][i] = Perplexity.logSumExp(baseLogits[w], i * vocab, vocab, i);
        }
    }

    /** Tokens the probe scores. */
    int tokens() {
        return windows.stream().mapToInt(w -> w.length).sum();
    }

    /**
     * Mean KL(base ‖ probed) per scored token when the matrix {@code kind} of {@code layer} is
     * {@code weights} (row-major, the original layer's shape) and every other layer is unchanged: a block
     * matrix, the classifier ({@link TensorKind#HEAD}: only the logits are recomputed) or the token
     * embedding ({@link TensorKind#EMBEDDING}: every layer reruns on the rows looked up in {@code weights}).
     */
    double meanKl(TensorKind kind, int layer, float[] weights) {
        if (kind == TensorKind.EMBEDDING) return meanKl(w -> embedded(w, weights), 0);
        Replaceable target = linears.get(kind.canonicalName(layer));
        if (target == null || !(kind.isBlockLinear() || kind == TensorKind.HEAD)) {
            throw new IllegalArgumentException(kind.canonicalName(layer) + " is not a linear layer of the model");
        }
        target.use(new DenseF32Weights(weights, target.outFeatures(), target.inFeatures(), compute));
        try {
            return kind == TensorKind.HEAD ? meanKl(w -> finals[w].clone(), layers) : meanKl(w -> inputs[layer][w].clone(), layer);
        } finally {
            target.restore();
        }
    }

    /** Window w's rows of an embedding table {@code table} ({@code [vocab][dim]}): the first layer's input. */
    private float[] embedded(int w, float[] table) {
        int[] tokens = windows.get(w);
        float[] h = new float[tokens.length * dim];
        TokenEmbedding rows = TokenEmbedding.of(table, dim);
        for (int i = 0; i < tokens.length; i++) rows.lookup(tokens[i], h, i * dim);
        return h;
    }

    /** Mean KL over every window, each window's states {@code entering.apply(w)} run from layer {@code first} on. */
    private double meanKl(java.util.function.IntFunction<float[]> entering, int first) {
        double sum = 0;
        for (int w = 0; w < windows.size(); w++) {
            int n = windows.get(w).length;
            float[] h = entering.apply(w);
            for (int l = first; l < layers; l++) session.forwardBlock(l, h, n);
            float[] logits = session.logits(h, n);
            double[] kl = new double[n];
            float[] base = baseLogits[w];
            double[] lse = baseLse[w];
            WorkerPool.current().forRange(n, 4L * vocab, (worker, start, end) -> {
                for (int i = start; i < end; i++) {
                    kl[i] = Perplexity.divergence(base, lse[i], logits, Perplexity.logSumExp(logits, i * vocab, vocab, i), i * vocab, vocab);
                }
            });
            for (double d : kl) sum += d;
        }
        return sum / tokens();
    }

    /** A model's linear layer whose weights the probe can replace for one run and put back. */
    private static final class Replaceable implements LinearWeights {
        private final LinearWeights original;
        private LinearWeights current;

        Replaceable(LinearWeights original) {
            this.original = original;
            this.current = original;
        }

        void use(LinearWeights replacement) { current = replacement; }

        void restore() { current = original; }

        @Override
        public int inFeatures() { return original.inFeatures(); }

        @Override
        public int outFeatures() { return original.outFeatures(); }

        @Override
        public void matmul(float[] x, int n, float[] out) { current.matmul(x, n, out); }
    }
}
