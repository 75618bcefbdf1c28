package jquant.pack.model;

import jquant.formats.Checkpoint;
import jquant.formats.TensorKind;
import jquant.quantize.ErrorCompensatedRounding;
import jquant.quantize.Rounding;
import jquant.quantize.SmoothingRule;

import java.util.LinkedHashMap;
import java.util.SequencedMap;

/**
 * The one {@link SmoothedSource} stand-in of this module's tests: the smoothed view is the source
 * itself (W' = W) and every figure is given, so a test sees what the packer and the loader do with
 * smoothing, whatever calibration computes.
 *
 * @param rowFactor   S_O'^β of output channel {@code row}, the same in every layer
 * @param inputScales static int8 input scale per linear layer
 * @param outputScale static int8 output scale of every linear layer
 * @param alpha       α of every linear layer
 */
public record FakeSmoothing(Checkpoint smoothed, RowFactor rowFactor, LayerScale inputScales, float outputScale, float alpha,
                            SequencedMap<String, Float> groupAlphas, String modelFingerprint, String statsSha256) implements SmoothedSource {

    /** A value per output channel. */
    @FunctionalInterface
    public interface RowFactor {
        float of(int row);
    }

    /** A value per linear layer. */
    @FunctionalInterface
    public interface LayerScale {
        float of(TensorKind kind, int layer);
    }

    @Override
    public float[] weights(TensorKind kind, int layer) { return smoothed.tensor(kind, layer).toFloats(); }

    @Override
    public float[] outputFactor(TensorKind kind, int layer) {
        float[] f = new float[smoothed.tensor(kind, layer).rows()];
        for (int r = 0; r < f.length; r++) f[r] = rowFactor.of(r);
        return f;
    }

    @Override
    public float inputScale(TensorKind kind, int layer) { return inputScales.of(kind, layer); }

    @Override
    public float outputScale(TensorKind kind, int layer) { return outputScale; }

    @Override
    public float alpha(TensorKind kind, int layer) { return alpha; }

    @Override
    public SequencedMap<String, Float> groupAlphas() { return new LinkedHashMap<>(groupAlphas); }

    @Override
    public SmoothingRule rule() { return SmoothingRule.EDGEFLOW; }

    /** Uncorrelated inputs of unit power (E[x·xᵀ] = I), under which GPTQ rounds exactly as round-to-nearest. */
    @Override
    public ErrorCompensatedRounding.Hessian hessian(TensorKind kind, int layer, Rounding rounding) {
        int n = smoothed.tensor(kind, layer).cols();
        float[] identity = new float[n * n];
        for (int i = 0; i < n; i++) identity[i * n + i] = 1;
        return ErrorCompensatedRounding.Hessian.of(identity, n);
    }
}
