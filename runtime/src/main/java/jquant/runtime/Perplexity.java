package jquant.runtime;

import java.util.Arrays;

/**
 * Perplexity of a model on a text, and its divergence from a base model, by llama.cpp's
 * {@code llama-perplexity} protocol so the figures are comparable with llama.cpp's:
 *
 * <ul>
 *   <li>the whole text is tokenized in one go, with one BOS at the start (if the vocabulary adds
 *       one);</li>
 *   <li>it is cut into {@code tokens / ctx} non-overlapping windows of {@code ctx} tokens (the rest
 *       is dropped); each window runs from an empty cache with its first token replaced by BOS;</li>
 *   <li>only the second half is scored, so every prediction has at least {@code ctx/2} tokens of
 *       context: positions {@code first = ctx/2 … ctx-2} predict the next token, which gives
 *       {@code ctx - first - 1} scored tokens per window;</li>
 *   <li>PPL = exp(mean NLL); its error is {@code PPL · sqrt(var(NLL)/(count-1))}, llama.cpp's
 *       estimate; at least {@code 2·ctx} tokens are required, as llama.cpp requires.</li>
 * </ul>
 *
 * With a base model, each scored position also gives KL(base ‖ model) = Σ p_base·(log p_base −
 * log p_model) over the vocabulary and whether both models' most likely tokens agree. These are
 * computed exactly in double precision (llama.cpp stores the base's log-probabilities as 16-bit
 * codes and skips p_base &lt; e^-16, so its KL can differ in the last digits).
 */
public final class Perplexity {
    /** The shortest window: half of it is scored, and the scored half needs two positions. */
    public static final int MIN_CONTEXT = 4;

    /** Told after each window; the CLI draws its progress bar from it. */
    @FunctionalInterface
    public interface Progress {
        void update(int windowsDone, int windows, double perplexitySoFar);
    }

    /**
     * @param perplexity exp(mean negative log-likelihood)
     * @param stderr     standard error of the perplexity
     * @param meanNll    mean negative log-likelihood, nats per token
     * @param tokens     tokens in the text (BOS included)
     * @param windows    windows of {@code ctx} tokens evaluated
     * @param scored     predictions scored
     */
    public record Result(double perplexity, double stderr, double meanNll, int tokens, int windows, int scored) {}

    /**
     * @param model         this model's perplexity
     * @param base          the base model's perplexity on the same windows
     * @param meanKl        mean KL(base ‖ model), nats
     * @param klP99         99th percentile of the per-token KL (linear interpolation, as llama.cpp)
     * @param maxKl         largest per-token KL
     * @param top1Agreement fraction of scored positions where both models' argmax tokens agree
     */
    public record Comparison(Result model, Result base, double meanKl, double klP99, double maxKl, double top1Agreement) {}

    private final int context;

    /** Evaluation with windows of {@code context} tokens (llama-perplexity's {@code -c}). */
    public Perplexity(int context) {
        if (context < MIN_CONTEXT) throw new IllegalArgumentException("context must be at least " + MIN_CONTEXT + " tokens, got " + context);
        this.context = context;
    }

    /** Perplexity of {@code model} on {@code text}, tokenized with {@code tokenizer} (BOS as the vocabulary says). */
    public Result evaluate(LlamaModel model, Tokenizer tokenizer, String text, Progress progress) {
        return evaluate(model, encode(tokenizer, text), windowBos(tokenizer), progress);
    }

    /** Perplexity of {@code model} on {@code tokens}; each window starts with {@code bos} (-1: left as is). */
    public Result evaluate(LlamaModel model, int[] tokens, int bos, Progress progress) {
        return run(model, null, tokens, bos, progress).model;
    }

    /** Perplexities of both models on {@code text} and the divergence of {@code model} from {@code base}. */
    public Comparison compare(LlamaModel model, LlamaModel base, Tokenizer tokenizer, String text, Progress progress) {
        return compare(model, base, encode(tokenizer, text), windowBos(tokenizer), progress);
    }

    /** Perplexities of both models on {@code tokens} and the divergence of {@code model} from {@code base}. */
    public Comparison compare(LlamaModel model, LlamaModel base, int[] tokens, int bos, Progress progress) {
        if (model.config().vocabSize() != base.config().vocabSize()) {
            throw new IllegalArgumentException("the models have different vocabularies: " + model.config().vocabSize()
                    + " vs " + base.config().vocabSize() + " tokens");
        }
        Scores s = run(model, base, tokens, bos, progress);
        Arrays.sort(s.kl);
        int count = s.kl.length;
        return new Comparison(s.model, s.base, s.klSum / count, percentile(s.kl, 0.99), s.kl[count - 1], (double) s.sameTop / count);
    }

    /** llama.cpp puts BOS at the start of each window only when the vocabulary adds BOS to a text. */
    private static int windowBos(Tokenizer tokenizer) {
        return tokenizer.addsBos() ? tokenizer.bos() : -1;
    }

    private static int[] encode(Tokenizer tokenizer, String text) {
        if (text.isEmpty()) throw new IllegalArgumentException("the text to evaluate is empty");
        return tokenizer.encode(text);
    }

    /** Sums of one model's negative log-likelihoods. */
    private static final class NllSum {
        double sum;
        double sumSquares;

        void add(double nll) {
            sum += nll;
            sumSquares += nll * nll;
        }

        Result result(int tokens, int windows, int count) {
            double mean = sum / count;
            double variance = sumSquares / count - mean * mean;
            double ppl = Math.exp(mean);
            double stderr = variance > 0 ? ppl * Math.sqrt(variance / (count - 1)) : 0;
            return new Result(ppl, stderr, mean, tokens, windows, count);
        }
    }

    /** What one pass over the windows gathered; the divergence fields only with a base model. */
    private record Scores(Result model, Result base, float[] kl, double klSum, int sameTop) {}

    private Scores run(LlamaModel model, LlamaModel base, int[] tokens, int bos, Progress progress) {
        if (tokens.length == 0) throw new IllegalArgumentException("the text to evaluate is empty");
        checkContext(model, "model");
        if (base != null) checkContext(base, "base model");
        if (tokens.length < 2 * context) {
            throw new IllegalArgumentException("the text is " + tokens.length + " tokens; a context of " + context
                    + " needs at least " + 2 * context + " (two windows, llama-perplexity's minimum)");
        }
        int vocab = model.config().vocabSize();
        int windows = tokens.length / context;
        int first = context / 2;
        int perWindow = context - first - 1;
        int count = windows * perWindow;
        NllSum nll = new NllSum();
        NllSum baseNll = new NllSum();
        float[] kl = base == null ? null : new float[count];
        double klSum = 0;
        int sameTop = 0;
        InferenceSession session = model.newSession(context);
        InferenceSession baseSession = base == null ? null : base.newSession(context);
        int scored = 0;
        for (int w = 0; w < windows; w++) {
            int start = w * context;
            int[] window = Arrays.copyOfRange(tokens, start, start + context);
            if (bos >= 0) window[0] = bos;
            float[] logits = session.forward(window, 0, first);
            float[] baseLogits = base == null ? null : baseSession.forward(window, 0, first);
            for (int j = 0; j < perWindow; j++) {
                int target = window[first + j + 1];
                int off = j * vocab;
                double lse = logSumExp(logits, off, vocab, start + first + j);
                nll.add(lse - logits[off + target]);
                if (base != null) {
                    double baseLse = logSumExp(baseLogits, off, vocab, start + first + j);
                    baseNll.add(baseLse - baseLogits[off + target]);
                    double d = 0;
                    for (int t = 0; t < vocab; t++) {
                        double logBase = baseLogits[off + t] - baseLse;
                        d += Math.exp(logBase) * (logBase - (logits[off + t] - lse));
                    }
                    kl[scored] = (float) d;
                    klSum += d;
                    if (argmax(logits, off, vocab) == argmax(baseLogits, off, vocab)) sameTop++;
                }
                scored++;
            }
            if (progress != null) progress.update(w + 1, windows, Math.exp(nll.sum / scored));
        }
        return new Scores(nll.result(tokens.length, windows, count),
                base == null ? null : baseNll.result(tokens.length, windows, count), kl, klSum, sameTop);
    }

    private void checkContext(LlamaModel m, String which) {
        if (context > m.config().maxSeqLen()) {
            throw new IllegalArgumentException("context " + context + " exceeds the " + which + "'s maximum of "
                    + m.config().maxSeqLen() + " positions");
        }
    }

    /** log Σ exp(logits), shifted by the maximum; a non-finite logit is an error, never a NaN result. */
    private static double logSumExp(float[] logits, int off, int vocab, int position) {
        float max = Float.NEGATIVE_INFINITY;
        for (int t = 0; t < vocab; t++) {
            float v = logits[off + t];
            if (!Float.isFinite(v)) {
                throw new IllegalStateException("the model produced logit " + v + " for token " + t + " at text position " + position);
            }
            max = Math.max(max, v);
        }
        double sum = 0;
        for (int t = 0; t < vocab; t++) sum += Math.exp(logits[off + t] - max);
        return max + Math.log(sum);
    }

    private static int argmax(float[] logits, int off, int vocab) {
        int best = 0;
        for (int t = 1; t < vocab; t++) if (logits[off + t] > logits[off + best]) best = t;
        return best;
    }

    /** llama.cpp's percentile of sorted values: linear interpolation between neighbouring ranks. */
    static double percentile(float[] sorted, double fraction) {
        double p = fraction * (sorted.length - 1);
        int i = (int) p;
        double frac = p - i;
        return (1 - frac) * sorted[i] + frac * sorted[Math.min(i + 1, sorted.length - 1)];
    }
}
