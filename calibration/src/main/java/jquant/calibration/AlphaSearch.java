package jquant.calibration;

import jquant.quantize.QuantLimits;
import jquant.quantize.SymmetricChannelQuantizer;
import jquant.runtime.Compute;
import jquant.runtime.DenseF32Weights;

import java.util.Arrays;
import java.util.List;

/**
 * Chooses a group's smoothing exponent α ∈ [0, 1] by the error of the quantized matmul it leads to,
 * on a sample of the group's real calibration inputs X (rows = tokens).
 *
 * <pre>
 *  f     = b^α                                   (b: {@link SmoothingFactors#bases})
 *  s_x   = max_j S_I[j] / f_j  / 127             static per-tensor int8 input scale (whole calibration run)
 *  X̂     = s_x · round(X · diag(1/f) / s_x)      the int8 input the NPU sees, dequantized
 *  Ŵ     = Q_B(W · diag(f))                       per-output-channel symmetric, B = reference width, dequantized
 *  error = Σ_layers ‖X̂ · Ŵᵀ − X · Wᵀ‖² / ‖X · Wᵀ‖²
 * </pre>
 * Each layer's error is relative, so q, k and v (or gate and up) count alike whatever their scales.
 * The output factor S_O^β is left out: per-output-channel weight quantization is invariant to a
 * row scale, and the output is compared in the original units.
 *
 * <p>Search: the grid α = 0, 0.05, …, 1, then α* ± 0.01, ±0.02, ±0.03, ±0.04 around the grid's best.
 * The smallest error wins; ties go to the smaller α (less transformation).
 */
final class AlphaSearch {
    static final int GRID_POINTS = 20;
    static final int REFINE_POINTS = 4;
    static final float REFINE_STEP = 0.01f;

    /** One member layer of the group: row-major {@code w[rows][cols]}. */
    record Member(float[] weights, int rows, int cols) {}

    record Result(float alpha, double error, double unsmoothedError) {}

    private final float[] sample;
    private final int sampleRows;
    private final float[] inputMax;
    private final float[] bases;
    private final List<Member> members;
    private final int referenceBits;
    private final Compute compute;
    private final float[][] reference;
    private final double[] referenceEnergy;

    AlphaSearch(float[] sample, int sampleRows, float[] inputMax, float[] bases, List<Member> members, int referenceBits, Compute compute) {
        this.sample = sample;
        this.sampleRows = sampleRows;
        this.inputMax = inputMax;
        this.bases = bases;
        this.members = members;
        this.referenceBits = referenceBits;
        this.compute = compute;
        this.reference = new float[members.size()][];
        this.referenceEnergy = new double[members.size()];
        for (int m = 0; m < members.size(); m++) {
            Member w = members.get(m);
            reference[m] = new float[sampleRows * w.rows()];
            new DenseF32Weights(w.weights(), w.rows(), w.cols(), compute).matmul(sample, sampleRows, reference[m]);
            for (float o : reference[m]) referenceEnergy[m] += (double) o * o;
        }
    }

    Result search() {
        double unsmoothed = error(0f);
        float best = 0f;
        double bestError = unsmoothed;
        for (int k = 1; k <= GRID_POINTS; k++) {
            float alpha = (float) k / GRID_POINTS;
            double e = error(alpha);
            if (e < bestError) {
                best = alpha;
                bestError = e;
            }
        }
        float coarse = best;
        for (int m = -REFINE_POINTS; m <= REFINE_POINTS; m++) {
            float alpha = coarse + m * REFINE_STEP;
            if (m == 0 || alpha < 0 || alpha > 1) continue;
            double e = error(alpha);
            if (e < bestError || (e == bestError && alpha < best)) {
                best = alpha;
                bestError = e;
            }
        }
        return new Result(best, bestError, unsmoothed);
    }

    /** The group's summed relative output error at {@code alpha}. */
    double error(float alpha) {
        float[] f = SmoothingFactors.factors(bases, alpha);
        float range = SmoothingFactors.smoothedRange(inputMax, f);
        int d = f.length;
        float[] x = new float[sampleRows * d];
        if (range > 0) {
            float step = range / QuantLimits.INT8_MAX;
            for (int t = 0; t < sampleRows; t++) {
                for (int j = 0; j < d; j++) {
                    // |x / f| ≤ range on every calibration row, so the code stays within ±127.
                    x[t * d + j] = step * Math.round(sample[t * d + j] / f[j] / step);
                }
            }
        }
        double total = 0;
        for (int m = 0; m < members.size(); m++) {
            Member w = members.get(m);
            float[] scaled = new float[w.weights().length];
            for (int r = 0; r < w.rows(); r++) {
                for (int j = 0; j < d; j++) scaled[r * d + j] = w.weights()[r * d + j] * f[j];
            }
            byte[] bits = new byte[w.rows()];
            Arrays.fill(bits, (byte) referenceBits);
            float[] quantized = SymmetricChannelQuantizer.quantize(scaled, w.rows(), d, bits).dequantize();
            float[] out = new float[sampleRows * w.rows()];
            new DenseF32Weights(quantized, w.rows(), d, compute).matmul(x, sampleRows, out);
            double err = 0;
            for (int i = 0; i < out.length; i++) {
                double diff = (double) out[i] - reference[m][i];
                err += diff * diff;
            }
            if (referenceEnergy[m] > 0) total += err / referenceEnergy[m];
        }
        return total;
    }
}
