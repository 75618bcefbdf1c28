package jquant.calibration;

import jquant.formats.Checkpoint;
import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;
import jquant.quantize.QuantLimits;
import jquant.runtime.Compute;
import jquant.runtime.InferenceSession;
import jquant.runtime.LlamaModel;
import jquant.runtime.Tokenizer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;

/**
 * Runs the float32 model on calibration text and measures, for every linear layer, S_I, E[x²] and
 * S_O ({@link CalibrationStats}), then chooses α per group ({@link AlphaSearch}).
 *
 * <p>The text is tokenized in one go (BOS as the vocabulary says) and cut into windows of
 * {@code context} tokens, each run from an empty cache; like llama.cpp's perplexity, every window
 * after the first starts with BOS in place of its first token, so every window looks like a text
 * start to the model. Logits are computed for every position so the classifier is observed too.
 * The runtime's kernels round the same way in every JIT tier (fixed-order lane sums, {@code Math.exp}),
 * so the same text, model and options always give bit-identical stats.
 *
 * <pre>{@code
 * CalibrationStats stats = Calibrator.calibrate(checkpoint, text, Calibrator.Options.defaults(), (stage, done, total) -> {});
 * CalibrationStatsFile.write(stats, Path.of("stats.gguf"));
 * }</pre>
 */
public final class Calibrator {

    /**
     * @param maxTokens     calibration tokens to run at most (the text's first ones)
     * @param context       tokens per window (at most the model's context)
     * @param sampleTokens  input rows per group kept for the α search
     * @param referenceBits uniform weight width of the α search, 1..8
     * @param seed          seed of the row sample
     */
    public record Options(int maxTokens, int context, int sampleTokens, int referenceBits, long seed) {
        /** 8192 tokens, windows of 512 (capped at the model's context), 512 sampled rows, 5-bit reference, seed 0. */
        public static Options defaults() {
            return new Options(8192, 512, 512, 5, 0);
        }

        public Options {
            if (maxTokens < 2) throw new IllegalArgumentException("calibration needs at least 2 tokens, got --tokens " + maxTokens);
            if (context < 2) throw new IllegalArgumentException("calibration windows need at least 2 tokens, got " + context);
            if (sampleTokens < 1) throw new IllegalArgumentException("the α search needs at least 1 sampled token, got " + sampleTokens);
            if (!QuantLimits.isBitWidth(referenceBits)) throw new IllegalArgumentException("reference bit width " + referenceBits + " outside " + QuantLimits.BIT_RANGE);
        }
    }

    /** Told as work proceeds: stage "forward" counts tokens, stage "alpha" counts groups. */
    @FunctionalInterface
    public interface Progress {
        void update(String stage, long done, long total);
    }

    private Calibrator() {}

    public static CalibrationStats calibrate(Checkpoint checkpoint, String text, Options options, Progress progress) {
        ModelConfig c = checkpoint.config();
        Tokenizer tokenizer = Tokenizer.of(checkpoint.vocabulary().orElseThrow(
                () -> new IllegalArgumentException(checkpoint.source() + ": no tokenizer vocabulary, which calibration needs to read the text")));
        if (text.isBlank()) throw new IllegalArgumentException("the calibration text is empty");
        int[] all = tokenizer.encode(text);
        int[] tokens = Arrays.copyOf(all, Math.min(all.length, options.maxTokens()));
        if (tokens.length < 2) throw new IllegalArgumentException("the calibration text gives only " + tokens.length + " token(s)");

        Compute compute = Compute.vector();
        ActivationRecorder recorder = new ActivationRecorder(compute, options.sampleTokens(), options.seed());
        LlamaModel model = LlamaModel.load(checkpoint, compute, recorder);
        int context = Math.min(options.context(), c.maxSeqLen());
        int bos = tokenizer.addsBos() ? tokenizer.bos() : -1;
        for (int start = 0; start < tokens.length; start += context) {
            int[] window = Arrays.copyOfRange(tokens, start, Math.min(tokens.length, start + context));
            if (start > 0 && bos >= 0) window[0] = bos;
            InferenceSession session = model.newSession(window.length);
            session.forward(window, 0);
            progress.update("forward", start + window.length, tokens.length);
        }

        List<GroupStats> groups = new ArrayList<>();
        SequencedMap<String, float[]> outputMax = new LinkedHashMap<>();
        int groupCount = 4 * c.layers() + 1;
        for (int layer = 0; layer < c.layers(); layer++) {
            for (LinearGroup g : LinearGroup.values()) {
                if (!g.perLayer()) continue;
                groups.add(group(checkpoint, recorder, g, layer, options, compute));
                progress.update("alpha", groups.size(), groupCount);
            }
        }
        groups.add(group(checkpoint, recorder, LinearGroup.HEAD, 0, options, compute));
        progress.update("alpha", groups.size(), groupCount);
        for (GroupStats g : groups) {
            for (TensorKind kind : g.group().members()) {
                String name = CalibrationStats.tensorName(kind, g.layer());
                float[] s = recorder.outputs().get(name);
                ActivationRecorder.checkFinite(name + " output", s);
                outputMax.put(name, s);
            }
        }
        return new CalibrationStats(ModelFingerprint.of(checkpoint), checkpoint.source().getFileName().toString(), tokens.length,
                Math.min(tokens.length, options.sampleTokens()), options.referenceBits(), groups, outputMax);
    }

    private static GroupStats group(Checkpoint checkpoint, ActivationRecorder recorder, LinearGroup g, int layer,
                                    Options options, Compute compute) {
        ActivationRecorder.InputStats in = recorder.input(g, layer);
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
        AlphaSearch.Result r = new AlphaSearch(in.sample, in.sampleRows(), in.max, bases, members, options.referenceBits(), compute).search();
        return new GroupStats(g, layer, in.max, meanSquare, r.alpha(), r.error(), r.unsmoothedError());
    }
}
