package jquant.calibration;

import jquant.core.Memory;
import jquant.core.ProgressListener;
import jquant.formats.Checkpoint;
import jquant.formats.LlamaLayout;
import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;
import jquant.quantize.BitPlan;
import jquant.runtime.Compute;
import jquant.runtime.HiddenStates;
import jquant.runtime.InferenceSession;
import jquant.runtime.LlamaModel;
import jquant.runtime.Tokenizer;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Runs the float32 model on calibration text and measures, for every linear layer, S_I, E[x²] and
 * S_O, and when asked E[x·xᵀ] ({@link CalibrationStats}), then chooses α per group for every budget
 * ({@link AlphaSearch}), writing the stats file as it goes.
 *
 * <p>The text is tokenized in one go (BOS as the vocabulary says) and cut into windows of
 * {@code context} tokens, each run from an empty cache; like llama.cpp's perplexity, every window
 * after the first starts with BOS in place of its first token, so every window looks like a text
 * start to the model. Logits are computed for every position so the classifier is observed too.
 * The first {@link CalibrationStats#PROBE_TOKENS} token ids are recorded too, as the sample allocate's
 * loss probe runs by default.
 *
 * <p><b>One decoder layer at a time</b> (llm-compressor's sequential onloading): all windows' hidden
 * states go through layer 0, then layer 1, …, kept between layers in memory or, beyond the memory
 * bound, in a scratch file ({@link HiddenStates}). When a layer has seen every window its groups' α
 * are searched and their statistics written to the stats file ({@link CalibrationStatsFile.Writer}),
 * and its weights' pages are dropped from memory, so the run holds one layer's statistics and weights,
 * never the model's. Each product sees the same rows in the same order as a whole-model forward pass
 * over the windows would give it, and the runtime's kernels round the same way in every JIT tier
 * (fixed-order lane sums, {@code Math.exp}), so the same text, model and options always give
 * bit-identical stats.
 *
 * <pre>{@code
 * CalibrationStats stats = Calibrator.calibrate(checkpoint, text, Calibrator.Options.defaults(), Path.of("stats.gguf"), (done, total, stage) -> {});
 * }</pre>
 */
public final class Calibrator {

    /**
     * @param maxTokens     calibration tokens to run at most (the text's first ones)
     * @param context       tokens per window (at most the model's context)
     * @param sampleTokens  input rows per group kept for the α search
     * @param budgets       the bit budgets to search α for (sorted and made distinct here), each in [1, 8]
     * @param secondMoments whether to record E[x·xᵀ] per group (D(D+1)/2 floats each), which GPTQ rounding needs
     * @param seed          seed of the row sample
     * @param memory        bytes of heap the run may use ({@link Runtime#maxMemory} when it is not told): the
     *                      hidden states beyond what the rest leaves go to a scratch file, and a run that
     *                      cannot fit is refused before it starts ({@link #memoryNeeded})
     */
    public record Options(int maxTokens, int context, int sampleTokens, List<Double> budgets, boolean secondMoments, long seed, long memory) {
        /** The budgets α is searched for unless told otherwise: the integer widths a sweep compares. */
        public static final List<Double> DEFAULT_BUDGETS = List.of(3.0, 4.0, 5.0, 6.0, 8.0);

        /** 8192 tokens, windows of 512 (capped at the model's context), 512 sampled rows, {@link #DEFAULT_BUDGETS}, no E[x·xᵀ], seed 0, the JVM's heap. */
        public static Options defaults() {
            return new Options(8192, 512, 512, DEFAULT_BUDGETS, false, 0);
        }

        /** With the JVM's heap as the memory bound. */
        public Options(int maxTokens, int context, int sampleTokens, List<Double> budgets, boolean secondMoments, long seed) {
            this(maxTokens, context, sampleTokens, budgets, secondMoments, seed, Runtime.getRuntime().maxMemory());
        }

        public Options {
            if (maxTokens < 2) throw new IllegalArgumentException("calibration needs at least 2 tokens, got --tokens " + maxTokens);
            if (context < 2) throw new IllegalArgumentException("calibration windows need at least 2 tokens, got " + context);
            if (sampleTokens < 1) throw new IllegalArgumentException("the α search needs at least 1 sampled token, got " + sampleTokens);
            if (budgets.isEmpty()) throw new IllegalArgumentException("calibration needs at least one budget to search α for");
            budgets.forEach(BitPlan::checkBudget);
            if (memory < 1) throw new IllegalArgumentException("the memory bound must be positive, got " + memory + " bytes");
            budgets = budgets.stream().sorted().distinct().toList();
        }
    }

    /**
     * Work units the progress counts per decoder layer (and as many for the classifier): half for the layer's forward
     * pass over the tokens, half for its α search.
     */
    static final int UNITS_PER_LAYER = 1000;

    private Calibrator() {}

    /**
     * Calibrates {@code checkpoint} on {@code text} and writes the stats to {@code out} (which appears
     * only when complete), returning them as read back (E[x·xᵀ] left in the file).
     *
     * @param progress told as work proceeds, {@link #UNITS_PER_LAYER} units a layer, with where the run is
     *                 ({@code "layer 3/32: 812 tok/s"})
     * @throws IllegalArgumentException before any work, when the run cannot fit {@link Options#memory}
     */
    public static CalibrationStats calibrate(Checkpoint checkpoint, String text, Options options, Path out, ProgressListener progress) throws IOException {
        ModelConfig c = checkpoint.config();
        Tokenizer tokenizer = Tokenizer.of(checkpoint.vocabulary().orElseThrow(
                () -> new IllegalArgumentException(checkpoint.source() + ": no tokenizer vocabulary, which calibration needs to read the text")));
        if (text.isBlank()) throw new IllegalArgumentException("the calibration text is empty");
        int[] all = tokenizer.encode(text);
        int[] tokens = Arrays.copyOf(all, Math.min(all.length, options.maxTokens()));
        if (tokens.length < 2) throw new IllegalArgumentException("the calibration text gives only " + tokens.length + " token(s)");
        int context = Math.min(options.context(), c.maxSeqLen());
        long fixed = memoryNeeded(c, options, 0, context);
        if (fixed > options.memory()) {
            throw new IllegalArgumentException(String.format("calibrating %s needs about %s of memory (one layer's statistics and weights%s), more than the %s it may use: "
                            + "give the JVM more (JQUANT_JAVA_OPTS=-Xmx%dg) or calibrate fewer --sample rows", checkpoint.source().getFileName(), Memory.format(fixed),
                    options.secondMoments() ? ", E[x·xᵀ] included" : "", Memory.format(options.memory()), Memory.gibibytesFor(fixed)));
        }

        List<int[]> windows = windows(tokens, context, tokenizer.addsBos() ? tokenizer.bos() : -1);
        Compute compute = Compute.vector();
        ActivationRecorder recorder = new ActivationRecorder(compute, options.sampleTokens(), options.seed(), options.secondMoments());
        LlamaModel model = LlamaModel.load(checkpoint, compute, recorder);
        InferenceSession session = model.newSession(context);
        CalibrationStatsFile.Header header = new CalibrationStatsFile.Header(ModelFingerprint.of(checkpoint), checkpoint.source().getFileName().toString(),
                tokens.length, Math.min(tokens.length, options.sampleTokens()), options.budgets(),
                Arrays.copyOf(tokens, Math.min(tokens.length, CalibrationStats.PROBE_TOKENS)));
        Path folder = out.toAbsolutePath().getParent();
        long total = (long) (c.layers() + 1) * UNITS_PER_LAYER;
        try (HiddenStates states = new HiddenStates(windows.stream().mapToInt(w -> w.length).toArray(), c.dim(), options.memory() - fixed, folder);
             CalibrationStatsFile.Writer writer = CalibrationStatsFile.Writer.open(out, header, c, options.secondMoments())) {
            for (int w = 0; w < windows.size(); w++) {
                float[] h = states.buffer(w);
                session.embed(windows.get(w), h);
                states.put(w, h);
            }
            for (int layer = 0; layer <= c.layers(); layer++) {
                boolean head = layer == c.layers();
                String where = head ? "classifier" : "layer " + (layer + 1) + "/" + c.layers();
                long started = System.nanoTime(), done = 0, base = (long) layer * UNITS_PER_LAYER;
                for (int w = 0; w < windows.size(); w++) {
                    float[] h = states.get(w);
                    int n = windows.get(w).length;
                    if (head) {
                        session.logits(h, n);
                    } else {
                        session.forwardBlock(layer, h, n);
                        states.put(w, h);
                    }
                    done += n;
                    progress.update(base + UNITS_PER_LAYER / 2 * done / tokens.length, total,
                            String.format("%s: %.0f tok/s", where, done / ((System.nanoTime() - started) / 1e9)));
                }
                List<LinearGroup> groups = head ? List.of(LinearGroup.HEAD) : Arrays.stream(LinearGroup.values()).filter(LinearGroup::perLayer).toList();
                int layerIndex = head ? 0 : layer;
                for (int g = 0; g < groups.size(); g++) {
                    progress.update(base + UNITS_PER_LAYER / 2 + UNITS_PER_LAYER / 2 * g / groups.size(), total, where + ": α search");
                    GroupStats stats = group(checkpoint, recorder.take(groups.get(g), layerIndex), groups.get(g), layerIndex, options, compute);
                    for (TensorKind kind : groups.get(g).members()) {
                        String name = CalibrationStats.tensorName(kind, layerIndex);
                        ActivationRecorder.checkFinite(name.substring(0, name.length() - ".weight".length()) + " output", recorder.outputs().get(name));
                    }
                    writer.write(stats, recorder.outputs());
                    for (TensorKind kind : groups.get(g).members()) checkpoint.tensor(kind, layerIndex).unload();
                }
                progress.update(base + UNITS_PER_LAYER, total, where);
                Memory.layerDone(Float.BYTES * c.layerWeights());
            }
            writer.finish();
        }
        return CalibrationStatsFile.read(out);
    }

    /**
     * Heap a calibration of a model of {@code c} needs, about: the statistics of one layer's groups while
     * its tokens run (reservoir samples, sums and, with second moments, Σx·xᵀ as D×D squares and the widest
     * group's mean triangle), the widest
     * group's weights in float32 for its α search, the session's buffers for one window, and the hidden
     * states of {@code tokens} tokens (0: without them).
     */
    public static long memoryNeeded(ModelConfig c, Options options, int tokens, int context) {
        long layerStats = 0, widestGroup = 0, widestTriangle = 0;
        for (LinearGroup g : LinearGroup.values()) {
            long d = LlamaLayout.expectedShape(g.members().getFirst(), c)[1];
            long stats = (long) options.sampleTokens() * d * Float.BYTES + d * (Float.BYTES + Double.BYTES)
                    + (options.secondMoments() ? d * d * Float.BYTES : 0);
            if (options.secondMoments()) widestTriangle = Math.max(widestTriangle, SecondMoment.triangleSize((int) d) * Float.BYTES);
            long weights = 0;
            for (TensorKind kind : g.members()) {
                long[] shape = LlamaLayout.expectedShape(kind, c);
                weights += shape[0] * shape[1] * Float.BYTES;
            }
            if (g.perLayer()) layerStats += stats;
            else layerStats = Math.max(layerStats, stats);
            widestGroup = Math.max(widestGroup, weights);
        }
        int batch = Math.min(256, context);
        long session = (long) batch * (3L * c.dim() + 2L * c.qDim() + 2L * c.kvDim() + 2L * c.hiddenDim()) * Float.BYTES
                + 2L * c.kvDim() * context * Float.BYTES + (long) context * c.vocabSize() * Float.BYTES;
        return layerStats + widestTriangle + widestGroup + session + HiddenStates.bytes(tokens, c.dim());
    }

    private static GroupStats group(Checkpoint checkpoint, ActivationRecorder.InputStats in, LinearGroup g, int layer,
                                    Options options, Compute compute) {
        String name = g.canonicalName(layer);
        ActivationRecorder.checkFinite(name + " input", in.max);
        float[] meanSquare = in.meanSquare();
        ActivationRecorder.checkFinite(name + " input", meanSquare);
        List<AlphaSearch.Member> members = new ArrayList<>();
        for (TensorKind kind : g.members()) {
            var t = checkpoint.tensor(kind, layer);
            members.add(new AlphaSearch.Member(t.toFloats(), t.rows(), t.cols()));
        }
        float[] bases = SmoothingFactors.bases(g, in.max, checkpoint.config());
        List<GroupStats.SearchedAlpha> alphas = new AlphaSearch(in.sample, in.sampleRows(), in.max, bases, members, compute).search(options.budgets());
        SecondMoment secondMoment = in.meanSecondMoment();
        if (secondMoment instanceof SecondMoment.Held held) ActivationRecorder.checkFinite(name + " input x·xᵀ", held.triangle());
        return new GroupStats(g, layer, in.max, meanSquare, alphas, secondMoment);
    }

    /**
     * {@code tokens} cut into windows of {@code context} (the last may be shorter), each to run from an empty
     * cache, every window after the first with {@code bos} in place of its first token (none when {@code bos} &lt; 0).
     */
    public static List<int[]> windows(int[] tokens, int context, int bos) {
        List<int[]> windows = new ArrayList<>();
        for (int start = 0; start < tokens.length; start += context) {
            int[] window = Arrays.copyOfRange(tokens, start, Math.min(tokens.length, start + context));
            if (start > 0 && bos >= 0) window[0] = bos;
            windows.add(window);
        }
        return windows;
    }
}
