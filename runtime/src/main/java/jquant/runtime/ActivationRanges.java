package jquant.runtime;

import jquant.formats.Checkpoint;
import jquant.formats.TensorKind;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The static activation ranges an int8 NPU needs: max |x| of each linear layer's input over a text,
 * measured on the float32 model. Keys are canonical tensor names ({@code blk.0.attn_q}, {@code output});
 * q/k/v (and gate/up) read the same input, so they get the same range.
 */
public final class ActivationRanges {

    private ActivationRanges() {}

    /** Called after each window. */
    @FunctionalInterface
    public interface Progress {
        void windowDone(int done, int total);
    }

    /** Runs {@code source} (dense float32) over {@code tokens} in windows of {@code context} and returns the ranges. */
    public static Map<String, Float> measure(Checkpoint source, int[] tokens, int context, Progress progress) {
        if (context < 1) throw new IllegalArgumentException("context must be ≥ 1, got " + context);
        if (tokens.length == 0) throw new IllegalArgumentException("no calibration tokens");
        Map<String, Float> ranges = new LinkedHashMap<>();
        Compute compute = Compute.vector();
        LinearWeightsFactory dense = LinearWeightsFactory.dense(compute);
        LlamaModel model = LlamaModel.load(source, compute, (kind, layer, tensor) ->
                observed(kind.canonicalName(kind == TensorKind.HEAD ? 0 : layer), dense.create(kind, layer, tensor), ranges));
        int ctx = Math.min(context, source.config().maxSeqLen());
        int windows = (tokens.length + ctx - 1) / ctx;
        for (int w = 0; w < windows; w++) {
            int from = w * ctx;
            model.newSession(ctx).forward(java.util.Arrays.copyOfRange(tokens, from, Math.min(from + ctx, tokens.length)), 0);
            progress.windowDone(w + 1, windows);
        }
        return ranges;
    }

    /** {@code weights}, recording the largest |x| it is multiplied with under {@code name}. */
    private static LinearWeights observed(String name, LinearWeights weights, Map<String, Float> ranges) {
        return new LinearWeights() {
            @Override
            public int inFeatures() {
                return weights.inFeatures();
            }

            @Override
            public int outFeatures() {
                return weights.outFeatures();
            }

            @Override
            public void matmul(float[] x, int n, float[] out) {
                float max = 0f;
                for (int i = 0; i < n * weights.inFeatures(); i++) max = Math.max(max, Math.abs(x[i]));
                ranges.merge(name, max, Math::max);
                weights.matmul(x, n, out);
            }
        };
    }
}
