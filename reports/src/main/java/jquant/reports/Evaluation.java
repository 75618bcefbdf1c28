package jquant.reports;

import jquant.core.Memory;
import jquant.core.ProgressListener;
import jquant.formats.CheckpointException;
import jquant.formats.InputFiles;
import jquant.formats.ModelConfig;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.QuantizationMetadata;
import jquant.runtime.Compute;
import jquant.runtime.KernelChoice;
import jquant.runtime.LayerLoader;
import jquant.runtime.LoadedModel;
import jquant.runtime.PackedModelLoader;
import jquant.runtime.Perplexity;

import java.io.IOException;
import java.io.Serial;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;

/**
 * {@code jquant eval} as a library call: perplexity on a text by llama.cpp's {@code llama-perplexity}
 * protocol (see {@link Perplexity}: the text tokenized once with BOS, cut into windows of {@code ctx}
 * tokens, each starting with BOS, only the second half of each window scored), and with a base model
 * the KL divergence from it and top-1 agreement, as an {@link EvalResult}.
 */
public final class Evaluation {
    private Evaluation() {}

    /**
     * What to evaluate and how; made with {@link #of(Path, Path)} and the methods named after the other components.
     *
     * @param model     any checkpoint jquant reads, or a .jqw
     * @param data      a UTF-8 text file
     * @param ctx       window length in tokens
     * @param base      reference model for KL divergence and top-1 agreement (same vocabulary), or null
     * @param tokenizer a llama2.c tokenizer.bin for .bin checkpoints, or null (a base without one reads the model's)
     * @param mode      how a packed model's weights run
     * @param kernels   how a checkpoint's linear layers multiply
     * @param layerwise whether to go through each model one decoder layer at a time over all windows, holding one
     *                  layer of its file in memory ({@link Perplexity.Layerwise}: the same figures), the base first and
     *                  alone; otherwise window by window through the whole model, both models side by side
     */
    public record Request(Path model, Path data, int ctx, Path base, Path tokenizer, PackedModelLoader.Mode mode, KernelChoice kernels, String series,
                          boolean layerwise) {
        /** {@code jquant eval}'s window length. */
        public static final int DEFAULT_CTX = 256;

        /**
         * {@code model} on {@code data} with {@code jquant eval}'s defaults: {@value #DEFAULT_CTX}-token windows, no base,
         * the model's own tokenizer, weight-only, the automatic kernels, no series name, window by window; change one with
         * the methods named after it, as in {@code Request.of(model, data).ctx(512).base(base)}.
         */
        public static Request of(Path model, Path data) {
            return new Request(model, data, DEFAULT_CTX, null, null, PackedModelLoader.Mode.WEIGHT_ONLY, KernelChoice.AUTO, "", false);
        }

        public Request ctx(int ctx) { return new Request(model, data, ctx, base, tokenizer, mode, kernels, series, layerwise); }

        public Request base(Path base) { return new Request(model, data, ctx, base, tokenizer, mode, kernels, series, layerwise); }

        public Request tokenizer(Path tokenizer) { return new Request(model, data, ctx, base, tokenizer, mode, kernels, series, layerwise); }

        public Request mode(PackedModelLoader.Mode mode) { return new Request(model, data, ctx, base, tokenizer, mode, kernels, series, layerwise); }

        public Request kernels(KernelChoice kernels) { return new Request(model, data, ctx, base, tokenizer, mode, kernels, series, layerwise); }

        public Request series(String series) { return new Request(model, data, ctx, base, tokenizer, mode, kernels, series, layerwise); }

        public Request layerwise(boolean layerwise) { return new Request(model, data, ctx, base, tokenizer, mode, kernels, series, layerwise); }
    }

    /**
     * Evaluates {@code request}; loading and tokenizing count towards its seconds. {@code progress} is told 0 done once
     * the models are loaded and the text tokenized, then after each window (after each stage of each model when
     * {@link Request#layerwise}: the units are then stages).
     */
    public static EvalResult run(Request request, ProgressListener progress) throws IOException {
        if (request.layerwise()) return layerwise(request, progress);
        long start = System.nanoTime();
        Part whole = part(request, 0, 1, progress);
        return combine(request, List.of(whole), seconds(start));
    }

    /**
     * Part {@code index} of {@code parts} of an evaluation: the scores of that run of the text's windows
     * ({@link Perplexity.Windows#part}), with the base model run alongside on the same windows; what a worker of a
     * sharded evaluation computes. {@link #combine} of every part, in order, is {@link #run}'s result bit for bit.
     *
     * @param dataSha256 SHA-256 of the text the part was scored on, so that parts of different texts are never combined
     * @param weights    weights of the base model (of the model without one)
     * @param threads    kernel threads the part ran on
     */
    public record Part(int index, int parts, String dataSha256, long weights, int threads, Perplexity.WindowScores scores) implements Serializable {
        @Serial
        private static final long serialVersionUID = 1L;
    }

    /**
     * Computes part {@code index} of {@code parts} of {@code request} (not {@link Request#layerwise}, which goes
     * through every window at once). {@code progress} is told 0 done once the models are loaded and the text
     * tokenized, then after each of the part's windows.
     */
    public static Part part(Request request, int index, int parts, ProgressListener progress) throws IOException {
        if (request.layerwise()) throw new IllegalArgumentException("a layerwise evaluation goes through every window at once: it has no parts");
        String text = readText(request.data());
        String dataSha256 = sha256(InputFiles.readAllBytes(request.data()));
        Perplexity ppl = new Perplexity(request.ctx());
        Path model = request.model(), base = request.base();
        try (LoadedModel m = LoadedModel.open(model, request.tokenizer(), request.mode(), request.kernels())) {
            int[] tokens = m.tokenizer().encode(text);
            int bos = m.tokenizer().addsBos() ? m.tokenizer().bos() : -1;
            ppl.checkTokens(tokens, m.model(), "model");
            Perplexity.Windows windows = Perplexity.Windows.part(index, parts, tokens.length / request.ctx());
            Perplexity.Progress told = (done, total, p) -> progress.update(done, total, "");
            if (base == null) {
                progress.update(0, windows.to() - windows.from(), "");
                return new Part(index, parts, dataSha256, weights(m.model().config()), threads(m), ppl.evaluatePart(m.model(), tokens, bos, windows, told));
            }
            try (LoadedModel b = LoadedModel.open(base, request.tokenizer(), m.vocabulary(), request.mode(), request.kernels(), Compute.vector(),
                    LayerLoader.Policy.PIPELINED)) {
                checkSameVocabulary(b.vocabulary().pieces(), m, base);
                ppl.checkTokens(tokens, b.model(), "base model");
                progress.update(0, windows.to() - windows.from(), "");
                return new Part(index, parts, dataSha256, weights(b.model().config()), threads(m), ppl.comparePart(m.model(), b.model(), tokens, bos, windows, told));
            }
        }
    }

    /**
     * The result of {@code request} from all its parts, in any order: their scores summed in window order
     * ({@link Perplexity#combine}), so the figures are those of one process's {@link #run}; the file's size and
     * quantization read from {@code request.model()}, {@code seconds} the evaluation's wall-clock time.
     */
    public static EvalResult combine(Request request, List<Part> parts, double seconds) throws IOException {
        List<Part> ordered = parts.stream().sorted(Comparator.comparingInt(Part::index)).toList();
        Part first = ordered.getFirst();
        for (int i = 0; i < ordered.size(); i++) {
            Part p = ordered.get(i);
            if (p.index() != i || p.parts() != ordered.size()) {
                throw new IllegalArgumentException("parts " + ordered.stream().map(q -> q.index() + "/" + q.parts()).toList() + " are not every part of one evaluation");
            }
            if (!p.dataSha256().equals(first.dataSha256())) throw new IllegalArgumentException("part " + i + " was scored on another text than part 0");
        }
        List<Perplexity.WindowScores> scores = ordered.stream().map(Part::scores).toList();
        TokenRecorder recorder = new TokenRecorder(request.base() != null);
        if (request.base() == null) {
            Perplexity.Result r = Perplexity.combine(scores, recorder);
            return result(request, first.dataSha256(), first.weights(), first.threads(), r, null, null, seconds, recorder);
        }
        Perplexity.Comparison c = Perplexity.combineComparison(scores, recorder);
        return result(request, first.dataSha256(), first.weights(), first.threads(), c.model(), c.base(), c, seconds, recorder);
    }

    /**
     * {@link Request#layerwise}: each model opened to load its layers only when they are needed
     * ({@link LayerLoader.Policy#LAYERWISE}) and run one layer at a time, each layer's pages released after
     * it; the base first (its logits at the scored positions kept), then the model. The windows' hidden
     * states stay in memory up to a quarter of the heap, beyond it in a scratch file in the temporary folder.
     */
    private static EvalResult layerwise(Request request, ProgressListener progress) throws IOException {
        String text = readText(request.data());
        String dataSha256 = sha256(InputFiles.readAllBytes(request.data()));
        long start = System.nanoTime();
        Perplexity ppl = new Perplexity(request.ctx());
        Path scratch = Path.of(System.getProperty("java.io.tmpdir"));
        try (LoadedModel m = LoadedModel.open(request.model(), request.tokenizer(), request.mode(), request.kernels(), Compute.vector(),
                LayerLoader.Policy.LAYERWISE)) {
            int[] tokens = m.tokenizer().encode(text);
            int bos = m.tokenizer().addsBos() ? m.tokenizer().bos() : -1;
            ppl.checkTokens(tokens, m.model(), "model");
            TokenRecorder recorder = new TokenRecorder(request.base() != null);
            int stages = m.model().config().layers() + 2;
            Perplexity.Layerwise byModel = new Perplexity.Layerwise(m::release, scratch, Memory.heap() / 4);
            if (request.base() == null) {
                progress.update(0, stages, "");
                Perplexity.Result r = ppl.evaluate(m.model(), tokens, bos, byModel, (done, total, p) -> progress.update(done, stages, ""), recorder);
                return result(request, dataSha256, weights(m.model().config()), threads(m), r, null, null, seconds(start), recorder);
            }
            Perplexity.Reference reference;
            long weights;
            int baseStages;
            try (LoadedModel b = LoadedModel.open(request.base(), request.tokenizer(), m.vocabulary(), request.mode(), request.kernels(),
                    Compute.vector(), LayerLoader.Policy.LAYERWISE)) {
                checkSameVocabulary(b.vocabulary().pieces(), m, request.base());
                ppl.checkTokens(tokens, b.model(), "base model");
                baseStages = b.model().config().layers() + 2;
                int all = baseStages + stages;
                progress.update(0, all, "");
                reference = ppl.reference(b.model(), tokens, bos, new Perplexity.Layerwise(b::release, scratch, Memory.heap() / 4),
                        (done, total, p) -> progress.update(done, all, ""));
                weights = weights(b.model().config());
            }
            int before = baseStages, all = baseStages + stages;
            Perplexity.Comparison c = ppl.compare(m.model(), reference, byModel, (done, total, p) -> progress.update(before + done, all, ""), recorder);
            return result(request, dataSha256, weights, threads(m), c.model(), c.base(), c, seconds(start), recorder);
        }
    }

    /**
     * A base model run once over a text, its logits kept ({@link Perplexity.Reference}): the
     * {@code base} of any number of evaluations on that text for the price of their own passes.
     */
    public record Base(Path model, Path data, int ctx, String dataSha256, List<String> pieces, long weights, Perplexity.Reference reference) {}

    /** Runs {@code base} over {@code data} once, for {@link #run(Request, Base, ProgressListener)}. */
    public static Base base(Path base, Path data, int ctx, Path tokenizer, KernelChoice kernels) throws IOException {
        String text = readText(data);
        String dataSha256 = sha256(InputFiles.readAllBytes(data));
        try (LoadedModel b = LoadedModel.open(base, tokenizer, PackedModelLoader.Mode.WEIGHT_ONLY, kernels)) {
            int[] tokens = b.tokenizer().encode(text);
            int bos = b.tokenizer().addsBos() ? b.tokenizer().bos() : -1;
            Perplexity.Reference reference = new Perplexity(ctx).reference(b.model(), tokens, bos, null);
            return new Base(base, data, ctx, dataSha256, b.vocabulary().pieces(), weights(b.model().config()), reference);
        }
    }

    /** Evaluates {@code request} against a base run once; the request's text, ctx and base must be the base's. */
    public static EvalResult run(Request request, Base base, ProgressListener progress) throws IOException {
        if (!request.data().equals(base.data()) || request.ctx() != base.ctx() || !base.model().equals(request.base())) {
            throw new IllegalArgumentException("the request (" + request.base() + " on " + request.data() + ", ctx " + request.ctx()
                    + ") is not the base's (" + base.model() + " on " + base.data() + ", ctx " + base.ctx() + ")");
        }
        long start = System.nanoTime();
        try (LoadedModel m = LoadedModel.open(request.model(), request.tokenizer(), request.mode(), request.kernels())) {
            checkSameVocabulary(base.pieces(), m, base.model());
            TokenRecorder recorder = new TokenRecorder(true);
            Perplexity.Comparison c = new Perplexity(request.ctx()).compare(m.model(), base.reference(), (done, total, p) -> progress.update(done, total, ""), recorder);
            return result(request, base.dataSha256(), base.weights(), threads(m), c.model(), c.base(), c, seconds(start), recorder);
        }
    }

    private static int threads(LoadedModel m) {
        return m.model().compute().pool().threads();
    }

    private static void checkSameVocabulary(List<String> basePieces, LoadedModel m, Path base) throws CheckpointException {
        if (!basePieces.equals(m.vocabulary().pieces())) {
            throw new CheckpointException(base, "its vocabulary differs from " + m.source() + "'s: KL divergence needs the same tokens");
        }
    }

    /** {@code threads}: of the model's {@link jquant.runtime.Compute} (the base, if any, runs on the same pool). */
    private static EvalResult result(Request request, String dataSha256, long weights, int threads, Perplexity.Result model, Perplexity.Result base,
                                     Perplexity.Comparison c, double seconds, TokenRecorder recorder) throws IOException {
        Path path = request.model();
        boolean packed = LoadedModel.isPacked(path);
        return new EvalResult(path.toString(), request.data().toString(), dataSha256, request.ctx(),
                packed ? request.mode().name().toLowerCase().replace('_', '-') : "", request.series(), bytesOnDisk(path), weights,
                packed ? quantization(path) : null, model, base == null ? null : request.base().toString(), base,
                c == null ? null : new EvalResult.Divergence(c.meanKl(), c.klP99(), c.maxKl(), c.top1Agreement()), seconds,
                threads, recorder.figures(model.scored()));
    }

    /** Collects the per-token figures as the evaluation tells them. */
    private static final class TokenRecorder implements Perplexity.TokenScores {
        private final boolean withBase;
        private float[] nll = new float[1024], baseNll, kl;

        TokenRecorder(boolean withBase) {
            this.withBase = withBase;
            if (withBase) {
                baseNll = new float[nll.length];
                kl = new float[nll.length];
            }
        }

        @Override
        public void scored(int index, double tokenNll, double tokenBaseNll, double tokenKl) {
            if (index >= nll.length) {
                nll = Arrays.copyOf(nll, 2 * nll.length);
                if (withBase) {
                    baseNll = Arrays.copyOf(baseNll, nll.length);
                    kl = Arrays.copyOf(kl, nll.length);
                }
            }
            nll[index] = (float) tokenNll;
            if (withBase) {
                baseNll[index] = (float) tokenBaseNll;
                kl[index] = (float) tokenKl;
            }
        }

        EvalResult.TokenFigures figures(int scored) {
            return new EvalResult.TokenFigures(Arrays.copyOf(nll, scored), withBase ? Arrays.copyOf(baseNll, scored) : null,
                    withBase ? Arrays.copyOf(kl, scored) : null);
        }
    }

    /**
     * Weights of a Llama-family model: embedding, every block's norms, matrices and q/k/v biases (Qwen2),
     * the final norm, and the classifier unless it is the embedding.
     */
    static long weights(ModelConfig c) {
        long dim = c.dim();
        long biases = c.architecture().qkvBias() ? c.qDim() + 2L * c.kvDim() : 0;
        long block = 2 * dim + 2 * dim * c.qDim() + 2 * dim * c.kvDim() + 3 * dim * c.hiddenDim() + biases;
        return (long) c.vocabSize() * dim * (c.tiedEmbeddings() ? 1 : 2) + c.layers() * block + dim;
    }

    /** What a packed file's metadata says of its quantization. */
    private static EvalResult.Quantization quantization(Path packed) throws IOException {
        try (JqwFile file = JqwFile.openWithoutLayerChecksums(packed)) {
            QuantizationMetadata q = QuantizationMetadata.of(file);
            return new EvalResult.Quantization(q.budget(), q.averageBits(), q.roundingLabel(),
                    q.smoothing() == null ? "" : q.smoothing().ruleLabel());
        }
    }

    /** SHA-256 of {@code bytes}, in hex: how an evaluation names its text. */
    public static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    private static double seconds(long start) {
        return (System.nanoTime() - start) / 1e9;
    }

    /** Size of a model file, or of everything in a model folder. */
    private static long bytesOnDisk(Path path) throws IOException {
        if (!Files.isDirectory(path)) return Files.size(path);
        try (var files = Files.walk(path)) {
            return files.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
        }
    }

    /** The whole file as strict UTF-8: a malformed byte is an error naming its offset, never a replacement character. */
    public static String readText(Path file) throws IOException {
        return InputFiles.readText(file);
    }
}
