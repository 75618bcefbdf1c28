package jquant.calibration;

import jquant.quantize.ErrorTable;
import jquant.quantize.GreedyBitAllocator;
import jquant.quantize.Metric;
import jquant.quantize.QuantLimits;
import jquant.quantize.RelativeError;
import jquant.quantize.SymmetricChannelQuantizer;
import jquant.runtime.Compute;
import jquant.runtime.DenseF32Weights;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

/**
 * Chooses a group's smoothing exponent α ∈ [0, 1] for one bit budget by the error of the quantized
 * matmul it leads to, on a sample of the group's real calibration inputs X (rows = tokens).
 *
 * <pre>
 *  f     = b^α                                   (b: {@link SmoothingFactors#bases})
 *  s_x   = max_j S_I[j] / f_j  / 127             static per-tensor int8 input scale (whole calibration run)
 *  X̂     = s_x · round(X · diag(1/f) / s_x)      the int8 input the NPU sees, dequantized
 *  B_i   = the width allocation gives row i of W·diag(f) at the budget   (EdgeFlow's Algorithm 1, per tensor, APPROX RE)
 *  Ŵ     = Q_B(W · diag(f))                       row i at B_i bits, per-output-channel symmetric, dequantized
 *  error = Σ_layers ‖X̂ · Ŵᵀ − X · Wᵀ‖² / ‖X · Wᵀ‖²      over a fixed sample of output rows of each layer
 * </pre>
 * Each layer's error is relative, so q, k and v (or gate and up) count alike whatever their scales.
 * The output factor S_O^β is left out: per-output-channel weight quantization is invariant to a
 * row scale, and the output is compared in the original units.
 *
 * <p><b>Input clip.</b> With α chosen, the static input range itself is searched: {@code s_x = c · max_j S_I[j] / f_j / 127}
 * for c from 1 down to 0.5 (the {@link #CLIPS}), inputs beyond ±127 codes saturating. The maximum over a whole
 * calibration run is set by a few tokens; a smaller range rounds every other token more finely. The c with
 * the least error is kept (1 unless a smaller one is better), so the clip never raises this error.
 *
 * <p><b>At the budget's widths.</b> Smoothing moves activation range into the weights; whether that
 * pays depends on how coarsely the weights are then rounded. Searching at one reference width picks
 * an α that is too strong for small budgets (the weights then lose more than the activations gain)
 * and too weak for large ones. Searching with the widths the plan will have makes α = 0 (no smoothing)
 * a candidate judged by the same rule, so the chosen α never does worse than no smoothing on this
 * measure, at any budget.
 *
 * <p><b>Cost.</b> The error is a sum over output rows, and the rows are quantized independently, so a
 * fixed, evenly spaced sample of at most {@value #SAMPLED_ROWS} rows per layer estimates it without
 * bias; every candidate α is compared on the same rows and tokens. The widths still come from the
 * whole tensor (allocation needs every row's error curve, one pass of statistics per row). Candidates:
 * the grid α = 0, 0.1, …, 1, then the best ± 0.05 and the new best ± 0.025; the smallest error wins,
 * ties go to the smaller α (less transformation).
 */
final class AlphaSearch {
    /** Output rows per layer whose outputs the error compares. */
    static final int SAMPLED_ROWS = 256;
    static final int GRID_POINTS = 10;
    static final float[] REFINE_STEPS = {0.05f, 0.025f};
    /** Input clips tried at the chosen α, from the full range down (a smaller clip wins only with a smaller error). */
    static final float[] CLIPS = {0.95f, 0.9f, 0.85f, 0.8f, 0.75f, 0.7f, 0.65f, 0.6f, 0.55f, 0.5f};

    /** One member layer of the group: row-major {@code w[rows][cols]}. */
    record Member(float[] weights, int rows, int cols) {}

    private final float[] sample;
    private final int sampleRows;
    private final float[] inputMax;
    private final float[] bases;
    private final List<Member> members;
    private final Compute compute;
    /** Per member: the output rows compared, X·Wᵀ on them (tokens × sampled rows), and its energy. */
    private final int[][] rowsCompared;
    private final float[][] reference;
    private final double[] referenceEnergy;

    AlphaSearch(float[] sample, int sampleRows, float[] inputMax, float[] bases, List<Member> members, Compute compute) {
        this.sample = sample;
        this.sampleRows = sampleRows;
        this.inputMax = inputMax;
        this.bases = bases;
        this.members = members;
        this.compute = compute;
        this.rowsCompared = new int[members.size()][];
        this.reference = new float[members.size()][];
        this.referenceEnergy = new double[members.size()];
        for (int m = 0; m < members.size(); m++) {
            Member w = members.get(m);
            int count = Math.min(w.rows(), SAMPLED_ROWS);
            rowsCompared[m] = IntStream.range(0, count).map(k -> (int) ((long) k * w.rows() / count)).toArray();
            float[] rows = new float[count * w.cols()];
            for (int k = 0; k < count; k++) System.arraycopy(w.weights(), rowsCompared[m][k] * w.cols(), rows, k * w.cols(), w.cols());
            reference[m] = new float[sampleRows * count];
            new DenseF32Weights(rows, count, w.cols(), compute).matmul(sample, sampleRows, reference[m]);
            for (float o : reference[m]) referenceEnergy[m] += (double) o * o;
        }
    }

    /** α for every budget, in the order given. */
    List<GroupStats.SearchedAlpha> search(List<Double> budgets) {
        List<GroupStats.SearchedAlpha> out = new ArrayList<>();
        for (double budget : budgets) out.add(search(budget));
        return out;
    }

    GroupStats.SearchedAlpha search(double budget) {
        double unsmoothed = error(0f, budget);
        float best = 0f;
        double bestError = unsmoothed;
        for (int k = 1; k <= GRID_POINTS; k++) {
            float alpha = (float) k / GRID_POINTS;
            double e = error(alpha, budget);
            if (e < bestError) {
                best = alpha;
                bestError = e;
            }
        }
        for (float step : REFINE_STEPS) {
            float centre = best;
            for (float alpha : new float[] {centre - step, centre + step}) {
                if (alpha < 0 || alpha > 1) continue;
                double e = error(alpha, budget);
                if (e < bestError || (e == bestError && alpha < best)) {
                    best = alpha;
                    bestError = e;
                }
            }
        }
        float clip = 1f;
        float[] f = SmoothingFactors.factors(bases, best);
        float[][] quantized = quantizedRows(f, budget);   // the weights do not depend on the clip: quantized once for all of them
        for (float c : CLIPS) {
            double e = error(f, c, quantized);
            if (e < bestError) {
                clip = c;
                bestError = e;
            }
        }
        return new GroupStats.SearchedAlpha(budget, best, bestError, unsmoothed, clip);
    }

    /** The group's summed relative output error at {@code alpha}, weights at the widths of {@code budget}, the full input range. */
    double error(float alpha, double budget) {
        return error(alpha, budget, 1f);
    }

    /**
     * The error with the static input range {@code clip} · max |x / f|: inputs beyond it saturate at ±127,
     * as the NPU (and {@link jquant.runtime.NpuInt8Weights}) saturates them.
     */
    double error(float alpha, double budget, float clip) {
        float[] f = SmoothingFactors.factors(bases, alpha);
        return error(f, clip, quantizedRows(f, budget));
    }

    /** Per member, its compared rows of W·diag(f) at the widths of {@code budget}, dequantized: what every clip is tried against. */
    private float[][] quantizedRows(float[] f, double budget) {
        int d = f.length;
        float[][] out = new float[members.size()][];
        for (int m = 0; m < members.size(); m++) {
            Member w = members.get(m);
            byte[] widths = widths(w, f, budget);
            int[] compared = rowsCompared[m];
            float[] quantized = new float[compared.length * d];
            compute.pool().forRange(compared.length, 16L * d, (worker, start, end) -> {
                float[] row = new float[d];
                for (int k = start; k < end; k++) {
                    scaledRow(w, compared[k], f, row);
                    float[] q = SymmetricChannelQuantizer.quantizeRow(row, widths[compared[k]]).dequantize();
                    System.arraycopy(q, 0, quantized, k * d, d);
                }
            });
            out[m] = quantized;
        }
        return out;
    }

    /** The summed relative error of the members' {@code quantized} rows on the sample's inputs, quantized with the range {@code clip} · max |x / f|. */
    private double error(float[] f, float clip, float[][] quantized) {
        float range = SmoothingFactors.smoothedRange(inputMax, f) * clip;
        int d = f.length;
        float[] x = new float[sampleRows * d];
        if (range > 0) {
            float step = range / QuantLimits.INT8_MAX;
            for (int t = 0; t < sampleRows; t++) {
                for (int j = 0; j < d; j++) {
                    x[t * d + j] = step * Math.clamp(Math.round(sample[t * d + j] / f[j] / step), -QuantLimits.INT8_MAX, QuantLimits.INT8_MAX);
                }
            }
        }
        double total = 0;
        for (int m = 0; m < members.size(); m++) {
            int rows = rowsCompared[m].length;
            float[] out = new float[sampleRows * rows];
            new DenseF32Weights(quantized[m], rows, d, compute).matmul(x, sampleRows, out);
            double err = 0;
            for (int i = 0; i < out.length; i++) {
                double diff = (double) out[i] - reference[m][i];
                err += diff * diff;
            }
            if (referenceEnergy[m] > 0) total += err / referenceEnergy[m];
        }
        return total;
    }

    /** Row widths EdgeFlow's allocator gives W·diag(f) at {@code budget}: per tensor, APPROX RE (what {@code jquant allocate} does by default). */
    private byte[] widths(Member w, float[] f, double budget) {
        double[] errors = new double[w.rows() * RelativeError.WIDTHS];
        compute.pool().forRange(w.rows(), (long) RelativeError.WIDTHS * w.cols(), (worker, start, end) -> {
            float[] row = new float[w.cols()];
            for (int r = start; r < end; r++) {
                scaledRow(w, r, f, row);
                RelativeError.curve(Metric.APPROX, row, 0, w.cols(), null, r, errors, r * RelativeError.WIDTHS);
            }
        });
        return GreedyBitAllocator.allocate(new ErrorTable("smoothed", w.rows(), w.cols(), Metric.APPROX, errors), budget).bits();
    }

    /** Row r of W·diag(f), written into the first cols entries of {@code row}. */
    private static float[] scaledRow(Member w, int r, float[] f, float[] row) {
        for (int j = 0; j < w.cols(); j++) row[j] = w.weights()[r * w.cols() + j] * f[j];
        return row;
    }
}
