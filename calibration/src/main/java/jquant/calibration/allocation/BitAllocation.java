package jquant.calibration.allocation;

import jquant.calibration.CalibrationStats;
import jquant.calibration.LinearGroup;
import jquant.calibration.ModelFingerprint;
import jquant.calibration.SmoothedModel;
import jquant.calibration.Smoothing;
import jquant.core.Memory;
import jquant.core.ProgressListener;
import jquant.formats.Checkpoint;
import jquant.formats.ModelConfig;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.quantize.BitPlan;
import jquant.quantize.ErrorTable;
import jquant.quantize.GreedyBitAllocator;
import jquant.quantize.Metric;
import jquant.quantize.QuantLimits;
import jquant.quantize.RelativeError;
import jquant.quantize.SymmetricChannelQuantizer;
import jquant.quantize.TensorPlan;
import jquant.runtime.Tokenizer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Bit allocation over a model's linear layers (the seven block matrices of every layer, then the
 * classifier), on the smoothed W' when calibration stats are given, so the allocation is
 * activation-aware (EdgeFlow §4.1). The smoothing's α per group is the one calibration searched for
 * the budget, or one fixed α ({@link SmoothingChoice}).
 *
 * <ul>
 *   <li>{@link Widths#GREEDY}: EdgeFlow's Algorithm 1 ({@link GreedyBitAllocator}).</li>
 *   <li>{@link Widths#UNIFORM}: every channel at the budget, which must be a whole number of bits
 *       (per-channel round-to-nearest as plain per-channel quantization does it; the baselines).</li>
 *   <li>{@link Scope#TENSOR}: every tensor gets the budget on its own (the paper).</li>
 *   <li>{@link Scope#MODEL}: one budget over all weights of the block matrices (one allocator run);
 *       the classifier, usually kept out of the plan by pack, meets the budget on its own.</li>
 *   <li>{@code wholeFile} (with {@link Scope#MODEL}): the budget counts every byte of the packed file's tensors
 *       over every weight of the model, as llama.cpp's bits per weight do ({@link WholeFileBudget}); the embedding
 *       and classifier join the blocks in one allocator run, each channel at its stored cost, and either may
 *       end in float16 when all its channels reached 8 bits and the budget pays the rest.</li>
 *   <li>{@code weighted}: channel errors are weighted per input column by the E[x²] the smoothed
 *       weights see, {@code E[(x/f)²] = E[x²] / f²} ({@link RelativeError}'s importance).</li>
 *   <li>{@code outputWeighted}: each channel's error is weighted by its share of the layer's output
 *       energy on the calibration text, {@code c_i = E[o_i²] / Σ_k E[o_k²]} with
 *       {@code E[o_i²] ≈ Σ_j W_ij² E[x_j²]}. RE is relative to the channel's own size, so the paper's
 *       Σ RE_i counts a quiet channel's error like a loud one's; Σ c_i·RE_i is the layer's relative
 *       output error, and with {@link Scope#MODEL} every layer's relative output error counts alike.</li>
 *   <li>{@code sensitivity} (with {@link Scope#MODEL}): each block matrix's table is multiplied by its
 *       loss sensitivity {@code s_t = ΔKL_t / E_t}, ΔKL_t the mean KL divergence from the float model
 *       when only t is rounded to nearest at {@value Sensitivity#PROBE_BITS} bits on a sample of text
 *       ({@link LossProbe}), E_t the table's own total at that width; the allocator then minimises
 *       {@code Σ_t s_t · E_t(widths)}, the second-order model of the KL divergence (docs/calibration.md §5).</li>
 * </ul>
 * The plan's α per tensor is its group's α, and its input clip the one calibration searched with that α
 * (1 for a fixed α; both null without stats). Tables are computed row-parallel
 * by code that does not depend on the thread count, and the allocator is sequential, so the plan is
 * the same bytes on any machine.
 */
public final class BitAllocation {

    public enum Scope { TENSOR, MODEL }

    /** Whether channels get widths of their own or all the budget's. */
    public enum Widths { GREEDY, UNIFORM }

    /**
     * Where the loss sensitivity of every block matrix is measured: the first {@code tokens} tokens of a
     * text ({@link #ofText}) or of token ids calibration recorded ({@link #ofTokens}, {@link
     * CalibrationStats#probeTokens}). The same tokens give the same sensitivities, whichever way they come.
     */
    public sealed interface Sensitivity {
        /**
         * The width the probe rounds each matrix to: coarse enough that every matrix's divergence stands
         * well above the sample's noise, fine enough that the error is still small (the quadratic model holds).
         */
        int PROBE_BITS = 3;
        /** Tokens probed unless told otherwise: on tinystories-6M and stories260K, 128 gave plans as good as 512. */
        int DEFAULT_TOKENS = 128;

        /** The first {@code tokens} tokens of {@code text}, tokenized with the checkpoint's vocabulary. */
        static Sensitivity ofText(String text, int tokens) {
            return new Text(text, tokens);
        }

        /**
         * The first {@code tokens} of {@code ids}.
         *
         * @throws IllegalArgumentException if there are fewer than {@code tokens} ids
         */
        static Sensitivity ofTokens(int[] ids, int tokens) {
            return new Tokens(ids, tokens);
        }

        /** Tokens the probe runs at most. */
        int tokens();

        /** The token ids the probe runs on {@code checkpoint}: at most {@link #tokens()}. */
        int[] tokenIds(Checkpoint checkpoint);

        record Text(String text, int tokens) implements Sensitivity {
            public Text {
                if (text == null || text.isBlank()) throw new IllegalArgumentException("the sensitivity text is empty");
                checkTokens(tokens);
            }

            @Override
            public int[] tokenIds(Checkpoint checkpoint) {
                Tokenizer tokenizer = Tokenizer.of(checkpoint.vocabulary().orElseThrow(
                        () -> new IllegalArgumentException(checkpoint.source() + ": no tokenizer vocabulary, which the loss probe needs to read the text")));
                int[] all = tokenizer.encode(text);
                return Arrays.copyOf(all, Math.min(all.length, tokens));
            }

            @Override
            public String toString() {
                return "Sensitivity[" + tokens + " tokens of " + text.length() + " characters]";
            }
        }

        record Tokens(int[] ids, int tokens) implements Sensitivity {
            public Tokens {
                checkTokens(tokens);
                if (ids.length < tokens) throw new IllegalArgumentException("the probe's sample has " + ids.length + " tokens, fewer than the " + tokens + " asked");
                ids = Arrays.copyOf(ids, tokens);
            }

            @Override
            public int[] tokenIds(Checkpoint checkpoint) {
                return ids.clone();
            }

            @Override
            public boolean equals(Object o) {
                return o instanceof Tokens t && Arrays.equals(ids, t.ids);
            }

            @Override
            public int hashCode() {
                return Arrays.hashCode(ids);
            }

            @Override
            public String toString() {
                return "Sensitivity[" + tokens + " token ids]";
            }
        }

        private static void checkTokens(int tokens) {
            if (tokens < 2) throw new IllegalArgumentException("the sensitivity probe needs at least 2 tokens, got " + tokens);
        }
    }

    /**
     * How to allocate; made with {@link #budget(double)} and the methods named after the other components.
     *
     * @param budget         average bits per weight, [1, 8]
     * @param weighted       weigh channel errors per input column by calibration E[x²] (needs stats)
     * @param outputWeighted weigh each channel's error by its share of the layer's output energy (needs stats)
     * @param widths         greedy allocation or every channel at the budget
     * @param smoothing      the α of each group when stats are given
     * @param sensitivity    where to measure each block matrix's loss sensitivity (model scope), or null for none
     * @param wholeFile      the budget counts the whole file as llama.cpp's bits per weight do ({@link WholeFileBudget}),
     *                       and the embedding and classifier share it with the blocks (model scope, needs stats)
     */
    public record Options(double budget, Scope scope, Metric metric, boolean weighted, boolean outputWeighted, Widths widths,
                          SmoothingChoice smoothing, Sensitivity sensitivity, boolean wholeFile) {
        public Options {
            if (wholeFile) BitPlan.checkFileBudget(budget);
            else BitPlan.checkBudget(budget);
            if (widths == Widths.UNIFORM && budget != Math.rint(budget)) {
                throw new IllegalArgumentException("uniform widths need a whole number of bits, not a budget of " + budget);
            }
        }

        /**
         * {@code budget} bits with the paper's plan (Algorithm 1): tensor scope, the approximate metric, no
         * weighting, greedy widths, EdgeFlow's smoothing with the α searched for the budget; change one with
         * the methods named after it, as in {@code Options.budget(4).scope(Scope.MODEL).weighted(true)}.
         */
        public static Options budget(double budget) {
            return new Options(budget, Scope.TENSOR, Metric.APPROX, false, false, Widths.GREEDY, SmoothingChoice.searched(), null, false);
        }

        /**
         * {@code budget} bits per weight of the whole file ({@link WholeFileBudget}), in [1, {@value BitPlan#MAX_FILE_BITS}],
         * with {@link #budget}'s plan otherwise; it needs {@link Scope#MODEL} and stats to allocate.
         */
        public static Options fileBudget(double budget) {
            return new Options(budget, Scope.TENSOR, Metric.APPROX, false, false, Widths.GREEDY, SmoothingChoice.searched(), null, true);
        }

        /**
         * The best plan measured, {@code jquant allocate}'s default with stats that carry the probe's sample:
         * {@code named}'s budget and smoothing, one budget over the blocks ({@link Scope#MODEL}), output-weighted,
         * and each block matrix weighed by its loss sensitivity on the first {@code tokens} of the stats' sample.
         *
         * @throws IllegalArgumentException if the stats have no sample ({@link CalibrationStats#hasProbeTokens})
         *                                  or it is shorter than {@code tokens}
         */
        public static Options best(Options named, CalibrationStats stats, int tokens) {
            if (!stats.hasProbeTokens()) throw new IllegalArgumentException("the calibration stats have no sample for the loss probe: calibrate again to record one");
            return named.scope(Scope.MODEL).outputWeighted(true).sensitivity(Sensitivity.ofTokens(stats.probeTokens(), tokens));
        }

        /**
         * The budget whose searched α and input clips the plan takes: the budget, but 8 for a whole-file budget
         * above 8 bits (no channel is wider, and calibration searches only [1, 8]).
         */
        public double alphaBudget() {
            return Math.min(budget, QuantLimits.MAX_BITS);
        }

        public Options scope(Scope scope) { return new Options(budget, scope, metric, weighted, outputWeighted, widths, smoothing, sensitivity, wholeFile); }

        public Options metric(Metric metric) { return new Options(budget, scope, metric, weighted, outputWeighted, widths, smoothing, sensitivity, wholeFile); }

        public Options weighted(boolean weighted) { return new Options(budget, scope, metric, weighted, outputWeighted, widths, smoothing, sensitivity, wholeFile); }

        public Options outputWeighted(boolean outputWeighted) { return new Options(budget, scope, metric, weighted, outputWeighted, widths, smoothing, sensitivity, wholeFile); }

        public Options widths(Widths widths) { return new Options(budget, scope, metric, weighted, outputWeighted, widths, smoothing, sensitivity, wholeFile); }

        public Options smoothing(SmoothingChoice smoothing) { return new Options(budget, scope, metric, weighted, outputWeighted, widths, smoothing, sensitivity, wholeFile); }

        public Options sensitivity(Sensitivity sensitivity) { return new Options(budget, scope, metric, weighted, outputWeighted, widths, smoothing, sensitivity, wholeFile); }

    }

    private BitAllocation() {}

    /** The linear layers a plan covers, in file order: blocks (q, k, v, o, gate, up, down), then the classifier. */
    public static List<Linear> linears(int layers) {
        List<Linear> out = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            for (TensorKind kind : TensorKind.values()) {
                if (kind.isBlockLinear()) out.add(new Linear(kind, l));
            }
        }
        out.add(new Linear(TensorKind.HEAD, 0));
        return out;
    }

    /** One linear layer of the model. */
    public record Linear(TensorKind kind, int layer) {
        public String name() { return CalibrationStats.tensorName(kind, layer); }
    }

    /**
     * Allocates bits to every linear layer of {@code checkpoint}.
     *
     * @param stats    calibration stats of this checkpoint, or null to allocate on the raw weights
     * @param progress told after each tensor's error table (at tensor scope, its widths), with the tensor's name
     * @throws IllegalArgumentException if the stats belong to another model, weighting is asked without stats, or a
     *                                  sensitivity without greedy widths at model scope
     */
    public static BitPlan allocate(Checkpoint checkpoint, CalibrationStats stats, Options options, ProgressListener progress) {
        if ((options.weighted() || options.outputWeighted()) && stats == null) {
            throw new IllegalArgumentException("weighted allocation needs calibration stats (E[x²] per input channel)");
        }
        if (options.sensitivity() != null && (options.scope() != Scope.MODEL || options.widths() != Widths.GREEDY)) {
            throw new IllegalArgumentException("a loss sensitivity weighs tensors against each other: it needs greedy widths at model scope");
        }
        if (options.wholeFile() && (options.scope() != Scope.MODEL || options.widths() != Widths.GREEDY || stats == null)) {
            throw new IllegalArgumentException("a whole-file budget weighs the embedding and classifier against the blocks: it needs greedy widths at model scope"
                    + " and calibration stats");
        }
        SmoothedModel smoothed = stats == null ? null : Smoothing.apply(checkpoint, stats, options.smoothing().rule(),
                options.smoothing().alphas(stats, options.alphaBudget()), options.smoothing().inputClips(stats, options.alphaBudget()));
        List<Linear> linears = planned(checkpoint.config().layers(), options);
        Allocated allocated = options.widths() == Widths.UNIFORM ? uniform(checkpoint, linears, options, progress)
                : greedy(checkpoint, smoothed, linears, options, progress);
        BitPlan.WholeFile whole = allocated.wholeFile();
        List<TensorPlan> plans = new ArrayList<>();
        for (int i = 0; i < allocated.plans().size(); i++) {
            TensorPlan p = allocated.plans().get(i);
            Linear l = linears.get(i);
            if (whole != null && whole.float16().contains(l.kind().canonicalName(l.layer()))) continue;
            boolean smooths = smoothed != null && l.kind() != TensorKind.EMBEDDING;
            Double alpha = smooths ? (double) smoothed.alpha(l.kind(), l.layer()) : null;
            Double clip = smooths ? (double) smoothed.inputClip(l.kind(), l.layer()) : null;
            plans.add(new TensorPlan(p.name(), p.rows(), p.cols(), p.bits(), p.metric(), alpha, clip));
        }
        return new BitPlan(options.budget(), plans, smoothed == null ? null : smoothed.rule(), ModelFingerprint.id(checkpoint), whole);
    }

    /** The tensors a plan covers: {@link #linears}, and with a whole-file budget the embedding first (file order). */
    public static List<Linear> planned(int layers, Options options) {
        List<Linear> out = new ArrayList<>();
        if (options.wholeFile()) out.add(new Linear(TensorKind.EMBEDDING, 0));
        out.addAll(linears(layers));
        return out;
    }

    /** Widths of every planned tensor, in order, and with a whole-file budget what the file's tensors will take. */
    private record Allocated(List<TensorPlan> plans, BitPlan.WholeFile wholeFile) {}

    private static Allocated greedy(Checkpoint checkpoint, SmoothedModel smoothed, List<Linear> linears, Options options, ProgressListener progress) {
        // Tensor scope allocates each table as it is made, so only the plans (a byte a channel) outlive their tensor;
        // model scope needs every table at once.
        List<ErrorTable> tables = new ArrayList<>();
        List<TensorPlan> plans = new ArrayList<>();
        LossProbe probe = options.sensitivity() == null ? null : new LossProbe(checkpoint, options.sensitivity().tokenIds(checkpoint));
        for (Linear l : linears) {
            Tensor t = checkpoint.tensor(l.kind(), l.layer());
            // The embedding is a lookup of the original rows: never smoothed, its rows alike to the output.
            boolean embedding = l.kind() == TensorKind.EMBEDDING;
            float[] weights = smoothed == null || embedding ? t.toFloats() : smoothed.weights(l.kind(), l.layer());
            float[] importance = options.weighted() && !embedding ? importance(smoothed, l) : null;
            ErrorTable table = RelativeError.table(l.name(), weights, t.rows(), t.cols(), options.metric(), importance);
            if (options.outputWeighted()) {
                table = table.weighted(embedding ? uniformShares(t.rows())
                        : outputShares(t.toFloats(), t.rows(), t.cols(), smoothed.stats().group(LinearGroup.of(l.kind()), l.layer()).inputMeanSquare()));
            }
            if (probe != null && (l.kind().isBlockLinear() || options.wholeFile())) {
                double[] s = new double[t.rows()];
                Arrays.fill(s, sensitivity(probe, embedding ? null : smoothed, l, weights, table));
                table = table.weighted(s);
            }
            if (options.scope() == Scope.TENSOR) plans.add(GreedyBitAllocator.allocate(table, options.budget()));
            else tables.add(table);
            progress.update(plans.size() + tables.size(), linears.size(), l.name());
            t.unload();
            if (l.kind() == TensorKind.W_DOWN) Memory.layerDone(Float.BYTES * checkpoint.config().layerWeights());
        }
        if (options.scope() == Scope.TENSOR) return new Allocated(plans, null);
        if (options.wholeFile()) return wholeFile(checkpoint.config(), linears, tables, options.budget());
        // The classifier (last) keeps a budget of its own: it is usually kept float32 (pack --keep), and
        // bits the shared budget gave or took there would change the size of the packed blocks.
        List<TensorPlan> blocks = new ArrayList<>(GreedyBitAllocator.allocate(tables.subList(0, tables.size() - 1), options.budget()).tensors());
        blocks.add(GreedyBitAllocator.allocate(tables.getLast(), options.budget()));
        return new Allocated(blocks, null);
    }

    /**
     * One budget over the file's bytes ({@link WholeFileBudget}): the float32 vectors and every planned
     * tensor's scales and widths are paid first, Algorithm 1 spends the rest on channel widths (each channel
     * at its stored size), and then the classifier, then the embedding, goes to float16 if all its channels
     * reached 8 bits and what is left pays the difference (a tied pair only together, as one tensor).
     */
    private static Allocated wholeFile(ModelConfig c, List<Linear> linears, List<ErrorTable> tables, double budget) {
        long weights = WholeFileBudget.modelWeights(c);
        long fixed = WholeFileBudget.vectorBytes(c);
        for (ErrorTable t : tables) fixed += WholeFileBudget.channelOverhead(t.rows());
        long atOneBit = 0;
        for (ErrorTable t : tables) atOneBit += t.rows() * WholeFileBudget.CHANNEL.bits(t, 1);
        long available = GreedyBitAllocator.budgetBits(budget, weights) - 8 * fixed;
        if (available < atOneBit) {
            throw new IllegalArgumentException(String.format("a whole-file budget of %s bits per weight is less than the file's smallest: norms, scales "
                    + "and widths with every channel at 1 bit take %.4f bits per weight", budget, (8.0 * fixed + atOneBit) / weights));
        }
        List<TensorPlan> plans = GreedyBitAllocator.allocate(tables, available, WholeFileBudget.CHANNEL);
        long left = available;
        for (TensorPlan p : plans) left -= 8 * (WholeFileBudget.bytes(p) - WholeFileBudget.channelOverhead(p.rows()));
        int embedding = indexOf(linears, TensorKind.EMBEDDING), head = indexOf(linears, TensorKind.HEAD);
        List<String> float16 = new ArrayList<>();
        List<Integer> candidates = c.tiedEmbeddings() ? List.of() : List.of(head, embedding);
        for (int i : candidates) {
            long extra = 8 * (WholeFileBudget.float16Bytes(tables.get(i)) - WholeFileBudget.bytes(plans.get(i)));
            if (allEight(plans.get(i)) && extra <= left) {
                float16.add(linears.get(i).kind().canonicalName(0));
                left -= extra;
            }
        }
        if (c.tiedEmbeddings() && allEight(plans.get(head)) && allEight(plans.get(embedding))) {
            // one float16 tensor, the lookup and the classifier, in place of two weightlet tensors
            long extra = 8 * (WholeFileBudget.float16Bytes(tables.get(embedding)) - WholeFileBudget.bytes(plans.get(embedding)) - WholeFileBudget.bytes(plans.get(head)));
            if (extra <= left) {
                float16.add(TensorKind.EMBEDDING.canonicalName(0));
                float16.add(TensorKind.HEAD.canonicalName(0));
            }
        }
        long bytes = WholeFileBudget.vectorBytes(c);
        for (int i = 0; i < plans.size(); i++) {
            TensorKind kind = linears.get(i).kind();
            if (!float16.contains(kind.canonicalName(linears.get(i).layer()))) bytes += WholeFileBudget.bytes(plans.get(i));
            else if (!(c.tiedEmbeddings() && kind == TensorKind.HEAD)) bytes += WholeFileBudget.float16Bytes(tables.get(i));
        }
        return new Allocated(plans, new BitPlan.WholeFile(weights, bytes, float16));
    }

    private static boolean allEight(TensorPlan p) {
        return p.histogram()[QuantLimits.MAX_BITS - 1] == p.rows();
    }

    private static int indexOf(List<Linear> linears, TensorKind kind) {
        for (int i = 0; i < linears.size(); i++) if (linears.get(i).kind() == kind) return i;
        throw new IllegalStateException("no " + kind + " among the planned tensors");
    }

    /**
     * {@code ΔKL / E} of one block matrix: the probe's divergence with the matrix rounded to nearest at
     * {@value Sensitivity#PROBE_BITS} bits (on W' when smoothed, then mapped back to the original layer),
     * over the table's total error at that width. 0 for a matrix the table sees no error in.
     */
    private static double sensitivity(LossProbe probe, SmoothedModel smoothed, Linear l, float[] weights, ErrorTable table) {
        double predicted = 0;
        for (int r = 0; r < table.rows(); r++) predicted += table.error(r, Sensitivity.PROBE_BITS);
        if (predicted == 0) return 0;
        byte[] widths = new byte[table.rows()];
        Arrays.fill(widths, (byte) Sensitivity.PROBE_BITS);
        float[] rounded = SymmetricChannelQuantizer.quantize(weights, table.rows(), table.cols(), widths).dequantize();
        if (smoothed != null) rounded = smoothed.unsmoothed(l.kind(), l.layer(), rounded);  // null for the embedding: never smoothed
        return probe.meanKl(l.kind(), l.layer(), rounded) / predicted;
    }

    /** Every channel of every tensor at the budget's width. */
    private static Allocated uniform(Checkpoint checkpoint, List<Linear> linears, Options options, ProgressListener progress) {
        List<TensorPlan> plans = new ArrayList<>();
        for (Linear l : linears) {
            Tensor t = checkpoint.tensor(l.kind(), l.layer());
            byte[] bits = new byte[t.rows()];
            Arrays.fill(bits, (byte) options.budget());
            plans.add(new TensorPlan(l.name(), t.rows(), t.cols(), bits, options.metric(), null));
            progress.update(plans.size(), linears.size(), l.name());
        }
        return new Allocated(plans, null);
    }

    /** An equal share of the output for every channel: the embedding's rows, each a token's whole input. */
    private static double[] uniformShares(int rows) {
        double[] c = new double[rows];
        Arrays.fill(c, 1.0 / rows);
        return c;
    }

    /**
     * Each output channel's share of the layer's output energy, {@code E[o_i²] / Σ_k E[o_k²]}, with
     * {@code E[o_i²] ≈ Σ_j W_ij² E[x_j²]} (inputs taken as uncorrelated) on the original weights and
     * inputs: the output is the same function with or without smoothing.
     */
    static double[] outputShares(float[] w, int rows, int cols, float[] inputMeanSquare) {
        double[] c = new double[rows];
        double total = 0;
        for (int i = 0; i < rows; i++) {
            double e = 0;
            for (int j = 0; j < cols; j++) e += (double) w[i * cols + j] * w[i * cols + j] * inputMeanSquare[j];
            c[i] = e;
            total += e;
        }
        if (total > 0) for (int i = 0; i < rows; i++) c[i] /= total;
        return c;
    }

    /** E[(x/f)²] per input column of the smoothed layer. */
    private static float[] importance(SmoothedModel smoothed, Linear l) {
        LinearGroup group = LinearGroup.of(l.kind());
        float[] meanSquare = smoothed.stats().group(group, l.layer()).inputMeanSquare();
        float[] f = smoothed.inputFactors(group, l.layer());
        for (int j = 0; j < meanSquare.length; j++) meanSquare[j] = (float) (meanSquare[j] / ((double) f[j] * f[j]));
        return meanSquare;
    }
}
