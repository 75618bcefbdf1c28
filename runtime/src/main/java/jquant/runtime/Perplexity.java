package jquant.runtime;

import java.io.IOException;
import java.io.Serial;
import java.io.Serializable;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntConsumer;

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
     * Told the figures of every scored position, in scoring order (index 0 … scored − 1), for statistics
     * over tokens that the summaries leave out (a paired comparison of two models on the same tokens).
     */
    @FunctionalInterface
    public interface TokenScores {
        /** {@code baseNll} and {@code kl} are NaN without a base model. */
        void scored(int index, double nll, double baseNll, double kl);
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

    /**
     * How to go through a model one decoder layer at a time over all windows rather than one window at a
     * time through all layers: the same products on the same rows, so the same bits, for a model larger
     * than memory. The embedding of every window first, then every window through block 0, then block 1,
     * …, the classifier last; after each stage {@code release} is told its number ({@link LayerLoader}'s
     * stages) so that its pages can leave memory ({@link LoadedModel#release}). The windows' hidden states
     * stay in memory up to {@code bound} bytes and beyond it in a scratch file in {@code scratch}
     * ({@link HiddenStates}). Progress counts stages, not windows.
     */
    public record Layerwise(IntConsumer release, Path scratch, long bound) {}

    /**
     * A run of consecutive windows of a text, {@code from} inclusive to {@code to} exclusive: the part of an
     * evaluation one worker scores ({@link #evaluatePart}).
     */
    public record Windows(int from, int to) {
        public Windows {
            if (from < 0 || to < from) throw new IllegalArgumentException("windows " + from + " to " + to);
        }

        /** Part {@code index} of {@code parts} near-equal runs that cover {@code windows} windows in order. */
        public static Windows part(int index, int parts, int windows) {
            if (parts < 1 || index < 0 || index >= parts) throw new IllegalArgumentException("part " + index + " of " + parts);
            return new Windows((int) ((long) index * windows / parts), (int) ((long) (index + 1) * windows / parts));
        }
    }

    /**
     * What scoring windows {@code [from, to)} of a text gave, per scored position in scoring order: the model's
     * NLL and, with a base model, the base's NLL, KL(base ‖ model) and whether their most likely tokens agree.
     * Every summary is a sum over these in scoring order, so {@link #combine} of the parts of a text, in
     * window order, gives the same bits as one pass over every window.
     *
     * @param tokens  tokens in the text
     * @param windows windows in the text
     */
    public record WindowScores(int tokens, int windows, int from, int to, double[] nll, double[] baseNll, double[] kl, boolean[] sameTop)
            implements Serializable {
        @Serial
        private static final long serialVersionUID = 1L;

        public boolean hasBase() {
            return kl != null;
        }
    }

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
        return evaluate(model, tokens, bos, progress, null);
    }

    /** As {@link #evaluate(LlamaModel, int[], int, Progress)}, each scored position also told to {@code scores} (may be null). */
    public Result evaluate(LlamaModel model, int[] tokens, int bos, Progress progress, TokenScores scores) {
        return combine(List.of(evaluatePart(model, tokens, bos, all(tokens), progress)), scores);
    }

    /** The scores of {@code part} of the windows of {@code tokens}, for {@link #combine} with the other parts' (may be null). */
    public WindowScores evaluatePart(LlamaModel model, int[] tokens, int bos, Windows part, Progress progress) {
        checkTokens(tokens, model, "model");
        return score(model, byWindow(model), null, tokens, bos, part, progress);
    }

    /** As {@link #evaluate(LlamaModel, int[], int, Progress, TokenScores)}, one layer at a time ({@link Layerwise}). */
    public Result evaluate(LlamaModel model, int[] tokens, int bos, Layerwise by, Progress progress, TokenScores scores) throws IOException {
        checkTokens(tokens, model, "model");
        try (LayerwiseLogits logits = new LayerwiseLogits(model, tokens, bos, by, progress)) {
            return combine(List.of(score(model, logits, null, tokens, bos, all(tokens), null)), scores);
        }
    }

    /** Perplexities of both models on {@code text} and the divergence of {@code model} from {@code base}. */
    public Comparison compare(LlamaModel model, LlamaModel base, Tokenizer tokenizer, String text, Progress progress) {
        return compare(model, base, encode(tokenizer, text), windowBos(tokenizer), progress);
    }

    /** Perplexities of both models on {@code tokens} and the divergence of {@code model} from {@code base}. */
    public Comparison compare(LlamaModel model, LlamaModel base, int[] tokens, int bos, Progress progress) {
        return compare(model, base, tokens, bos, progress, null);
    }

    /** As {@link #compare(LlamaModel, LlamaModel, int[], int, Progress)}, each scored position also told to {@code scores} (may be null). */
    public Comparison compare(LlamaModel model, LlamaModel base, int[] tokens, int bos, Progress progress, TokenScores scores) {
        return combineComparison(List.of(comparePart(model, base, tokens, bos, all(tokens), progress)), scores);
    }

    /** The scores of {@code part} of the windows of {@code tokens} against {@code base}, for {@link #combineComparison} with the other parts'. */
    public WindowScores comparePart(LlamaModel model, LlamaModel base, int[] tokens, int bos, Windows part, Progress progress) {
        checkVocabularies(model, base.config().vocabSize());
        checkContext(base, "base model");
        checkTokens(tokens, model, "model");
        InferenceSession baseSession = base.newSession(context);
        return score(model, byWindow(model), (w, window) -> baseSession.forward(window, 0, context / 2), tokens, bos, part, progress);
    }

    /**
     * A base model's logits at every scored position of one text, computed once so that any number of
     * models can be compared with it for the price of their own passes (what a sweep does): float32,
     * scored positions × vocabulary × 4 bytes (148 MB for 72,263 positions of a 512-token vocabulary).
     * A comparison with it gives the same bits as one that runs the base alongside.
     */
    public static final class Reference {
        private final int context;
        private final int[] tokens;
        private final int bos;
        private final int vocab;
        private final float[][] windows;

        private Reference(int context, int[] tokens, int bos, int vocab, float[][] windows) {
            this.context = context;
            this.tokens = tokens;
            this.bos = bos;
            this.vocab = vocab;
            this.windows = windows;
        }
    }

    /** Runs {@code base} over the windows of {@code tokens} once and keeps its logits at the scored positions. */
    public Reference reference(LlamaModel base, int[] tokens, int bos, Progress progress) {
        checkTokens(tokens, base, "base model");
        InferenceSession session = base.newSession(context);
        float[][] windows = new float[tokens.length / context][];
        for (int w = 0; w < windows.length; w++) {
            windows[w] = session.forward(window(tokens, w, bos), 0, context / 2).clone();
            if (progress != null) progress.update(w + 1, windows.length, Double.NaN);
        }
        return new Reference(context, tokens.clone(), bos, base.config().vocabSize(), windows);
    }

    /** As {@link #reference(LlamaModel, int[], int, Progress)}, one layer at a time ({@link Layerwise}). */
    public Reference reference(LlamaModel base, int[] tokens, int bos, Layerwise by, Progress progress) throws IOException {
        checkTokens(tokens, base, "base model");
        float[][] windows = new float[tokens.length / context][];
        try (LayerwiseLogits logits = new LayerwiseLogits(base, tokens, bos, by, progress)) {
            for (int w = 0; w < windows.length; w++) windows[w] = logits.of(w, null);
        }
        return new Reference(context, tokens.clone(), bos, base.config().vocabSize(), windows);
    }

    /** Perplexity of {@code model} on the reference's text and its divergence from the reference's base model. */
    public Comparison compare(LlamaModel model, Reference base, Progress progress, TokenScores scores) {
        if (base.context != context) throw new IllegalArgumentException("the reference was made with windows of " + base.context + " tokens, not " + context);
        checkVocabularies(model, base.vocab);
        checkTokens(base.tokens, model, "model");
        return combineComparison(List.of(score(model, byWindow(model), (w, window) -> base.windows[w], base.tokens, base.bos, all(base.tokens), progress)),
                scores);
    }

    /** As {@link #compare(LlamaModel, Reference, Progress, TokenScores)}, one layer at a time ({@link Layerwise}). */
    public Comparison compare(LlamaModel model, Reference base, Layerwise by, Progress progress, TokenScores scores) throws IOException {
        if (base.context != context) throw new IllegalArgumentException("the reference was made with windows of " + base.context + " tokens, not " + context);
        checkVocabularies(model, base.vocab);
        checkTokens(base.tokens, model, "model");
        try (LayerwiseLogits logits = new LayerwiseLogits(model, base.tokens, base.bos, by, progress)) {
            return combineComparison(List.of(score(model, logits, (w, window) -> base.windows[w], base.tokens, base.bos, all(base.tokens), null)), scores);
        }
    }

    /** A window's logits at its scored positions, row-major {@code [ctx/2][vocab]}: computed now, or kept. */
    @FunctionalInterface
    private interface WindowLogits {
        float[] of(int w, int[] window);
    }

    /** One window at a time through the whole model: its own session, the cache refilled each window. */
    private WindowLogits byWindow(LlamaModel model) {
        InferenceSession session = model.newSession(context);
        return (w, window) -> session.forward(window, 0, context / 2);
    }

    /** Every window through one layer at a time ({@link Layerwise}); the logits of window w come from its last hidden states. */
    private final class LayerwiseLogits implements WindowLogits, AutoCloseable {
        private final InferenceSession session;
        private final HiddenStates states;
        private final int first = context / 2, dim;
        private final Runnable releaseHead;

        LayerwiseLogits(LlamaModel model, int[] tokens, int bos, Layerwise by, Progress progress) throws IOException {
            int windows = tokens.length / context, layers = model.config().layers();
            this.dim = model.config().dim();
            this.releaseHead = () -> by.release().accept(layers + 1);
            int[] lengths = new int[windows];
            Arrays.fill(lengths, context);
            this.session = model.newSession(context);
            this.states = new HiddenStates(lengths, model.config().dim(), by.bound(), by.scratch());
            try {
                for (int w = 0; w < windows; w++) {
                    float[] h = states.buffer(w);
                    session.embed(window(tokens, w, bos), h);
                    states.put(w, h);
                }
                by.release().accept(0);
                if (progress != null) progress.update(1, layers + 2, Double.NaN);
                for (int layer = 0; layer < layers; layer++) {
                    for (int w = 0; w < windows; w++) {
                        float[] h = states.get(w);
                        session.forwardBlock(layer, h, context);
                        states.put(w, h);
                    }
                    by.release().accept(layer + 1);
                    if (progress != null) progress.update(layer + 2, layers + 2, Double.NaN);
                }
            } catch (RuntimeException e) {
                states.close();
                throw e;
            }
        }

        @Override
        public float[] of(int w, int[] window) {
            float[] h = states.get(w);
            return session.logits(Arrays.copyOfRange(h, first * dim, context * dim), context - first);
        }

        @Override
        public void close() throws IOException {
            states.close();
            releaseHead.run();
        }
    }

    private static void checkVocabularies(LlamaModel model, int baseVocab) {
        if (model.config().vocabSize() != baseVocab) {
            throw new IllegalArgumentException("the models have different vocabularies: " + model.config().vocabSize()
                    + " vs " + baseVocab + " tokens");
        }
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


    /** The base model's logits of window {@code w} (its scored half), whether computed now or kept. */
    @FunctionalInterface
    private interface BaseLogits {
        float[] of(int w, int[] window);
    }

    /**
     * Whether {@code model} can be evaluated on {@code tokens}: the text must not be empty, the model must hold
     * a window ({@link ContextTooLong} otherwise), and the text must fill two windows, in that order. Every
     * evaluation checks this itself; a caller checks it first to refuse before any work is reported.
     *
     * @param which how the error names the model ("model", "base model")
     */
    public void checkTokens(int[] tokens, LlamaModel model, String which) {
        if (tokens.length == 0) throw new IllegalArgumentException("the text to evaluate is empty");
        checkContext(model, which);
        if (tokens.length < 2 * context) {
            throw new IllegalArgumentException("the text is " + tokens.length + " tokens; a context of " + context
                    + " needs at least " + 2 * context + " (two windows, llama-perplexity's minimum)");
        }
    }

    /** Window {@code w} of the text, its first token replaced by {@code bos} (-1: left as is). */
    private int[] window(int[] tokens, int w, int bos) {
        int[] window = Arrays.copyOfRange(tokens, w * context, (w + 1) * context);
        if (bos >= 0) window[0] = bos;
        return window;
    }

    /** All the windows of {@code tokens}. */
    private Windows all(int[] tokens) {
        return new Windows(0, tokens.length / context);
    }

    private WindowScores score(LlamaModel model, WindowLogits modelLogits, BaseLogits base, int[] tokens, int bos, Windows part, Progress progress) {
        int vocab = model.config().vocabSize();
        int windows = tokens.length / context;
        if (part.to() > windows) throw new IllegalArgumentException("windows " + part.from() + " to " + part.to() + " of a text of " + windows);
        int first = context / 2;
        int perWindow = context - first - 1;
        int count = (part.to() - part.from()) * perWindow;
        double[] nll = new double[count];
        double[] baseNll = base == null ? null : new double[count];
        double[] kl = base == null ? null : new double[count];
        boolean[] sameTop = base == null ? null : new boolean[count];
        double nllSum = 0;
        int scored = 0;
        for (int w = part.from(); w < part.to(); w++) {
            int start = w * context;
            int[] window = window(tokens, w, bos);
            float[] logits = modelLogits.of(w, window);
            float[] baseLogits = base == null ? null : base.of(w, window);
            for (int j = 0; j < perWindow; j++) {
                int target = window[first + j + 1];
                int off = j * vocab;
                double lse = logSumExp(logits, off, vocab, start + first + j);
                nll[scored] = lse - logits[off + target];
                nllSum += nll[scored];
                if (base != null) {
                    double baseLse = logSumExp(baseLogits, off, vocab, start + first + j);
                    baseNll[scored] = baseLse - baseLogits[off + target];
                    kl[scored] = divergence(baseLogits, baseLse, logits, lse, off, vocab);
                    sameTop[scored] = argmax(logits, off, vocab) == argmax(baseLogits, off, vocab);
                }
                scored++;
            }
            if (progress != null) progress.update(w - part.from() + 1, part.to() - part.from(), Math.exp(nllSum / scored));
        }
        return new WindowScores(tokens.length, windows, part.from(), part.to(), nll, baseNll, kl, sameTop);
    }

    /**
     * The perplexity of a text from the scores of its parts, which must cover its windows in order; each scored
     * position is also told to {@code scores} (may be null). The sums run over the positions in scoring order,
     * as one pass over the whole text runs them, so the result has the same bits however the windows were split.
     */
    public static Result combine(List<WindowScores> parts, TokenScores scores) {
        return sum(parts, scores).model;
    }

    /** As {@link #combine}, for parts scored against a base model: both perplexities and the divergence. */
    public static Comparison combineComparison(List<WindowScores> parts, TokenScores scores) {
        Sums s = sum(parts, scores);
        if (s.kl == null) throw new IllegalArgumentException("the parts were scored without a base model");
        Arrays.sort(s.kl);
        int count = s.kl.length;
        return new Comparison(s.model, s.base, s.klSum / count, percentile(s.kl, 0.99), s.kl[count - 1], (double) s.sameTop / count);
    }

    /** What the parts add up to; the divergence fields only with a base model. */
    private record Sums(Result model, Result base, float[] kl, double klSum, int sameTop) {}

    private static Sums sum(List<WindowScores> parts, TokenScores scores) {
        if (parts.isEmpty()) throw new IllegalArgumentException("no parts to combine");
        WindowScores head = parts.getFirst();
        int next = 0, count = 0;
        for (WindowScores p : parts) {
            if (p.from() != next || p.tokens() != head.tokens() || p.windows() != head.windows() || p.hasBase() != head.hasBase()) {
                throw new IllegalArgumentException("the parts do not cover one text's windows in order: windows " + p.from() + " to " + p.to()
                        + " of " + p.windows() + " follow window " + next + " of " + head.windows());
            }
            next = p.to();
            count += p.nll().length;
        }
        if (next != head.windows()) throw new IllegalArgumentException("the parts end at window " + next + " of " + head.windows());
        NllSum nll = new NllSum();
        NllSum baseNll = new NllSum();
        float[] kl = head.hasBase() ? new float[count] : null;
        double klSum = 0;
        int sameTop = 0, index = 0;
        for (WindowScores p : parts) {
            for (int i = 0; i < p.nll().length; i++, index++) {
                nll.add(p.nll()[i]);
                if (kl != null) {
                    baseNll.add(p.baseNll()[i]);
                    kl[index] = (float) p.kl()[i];
                    klSum += p.kl()[i];
                    if (p.sameTop()[i]) sameTop++;
                }
                if (scores != null) scores.scored(index, p.nll()[i], kl == null ? Double.NaN : p.baseNll()[i], kl == null ? Double.NaN : p.kl()[i]);
            }
        }
        return new Sums(nll.result(head.tokens(), head.windows(), count), kl == null ? null : baseNll.result(head.tokens(), head.windows(), count),
                kl, klSum, sameTop);
    }

    private void checkContext(LlamaModel m, String which) {
        if (context > m.config().maxSeqLen()) throw new ContextTooLong(context, which, m.config().maxSeqLen());
    }

    /** A window longer than a model's positions: a choice of the caller's (a command's {@code --ctx}), not a fault of the model. */
    public static final class ContextTooLong extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        private final String which;
        private final int maximum;

        ContextTooLong(int context, String which, int maximum) {
            super("context " + context + " exceeds the " + which + "'s maximum of " + maximum + " positions");
            this.which = which;
            this.maximum = maximum;
        }

        /** The model whose positions the window exceeds ("model", "base model"). */
        public String which() {
            return which;
        }

        /** That model's positions. */
        public int maximum() {
            return maximum;
        }
    }

    /**
     * KL(base ‖ model) at one position: the rows of logits at {@code off} of both models and their
     * {@link #logSumExp}s, so each model's log-probabilities are its logits less that.
     */
    public static double divergence(float[] baseLogits, double baseLse, float[] logits, double lse, int off, int vocab) {
        double d = 0;
        for (int t = 0; t < vocab; t++) {
            double logBase = baseLogits[off + t] - baseLse;
            d += Math.exp(logBase) * (logBase - (logits[off + t] - lse));
        }
        return d;
    }

    /**
     * log Σ exp(logits[off … off + vocab)), shifted by the maximum; a non-finite logit is an error naming
     * {@code position} (the row's place in the text), never a NaN result.
     */
    public static double logSumExp(float[] logits, int off, int vocab, int position) {
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
