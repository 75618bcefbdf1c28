package jquant.quantize;

import jquant.core.WorkerPool;

/**
 * RE(W_i, B): how far channel {@code W_i} moves when quantized to B bits (EdgeFlow §4.1).
 *
 * <h2>Exact</h2>
 * {@code RE = 1 − cos(W_i, Q_B(W_i))} with Q_B the int8 codes of {@link SymmetricChannelQuantizer},
 * on the very grid (clip) it picks, so this costs what quantizing at all 8 widths costs (the
 * cosine does not depend on the positive scale). Unweighted, it comes from the clip search's own
 * float-accumulated residual sums ({@link GridKernel}), accurate to about 1e−5 relative; weighted,
 * from double dot products. Because the quantizer refits its scale by
 * least squares, the relative squared error of the dequantized channel is
 * {@code 1 − cos² = RE·(2 − RE)}, so ranking by RE is ranking by real reconstruction error.
 *
 * <h2>Approximate (paper, Appendix A)</h2>
 * {@code 1 − cos ≈ E[E²] / (2·E[W²])} for a small error E uncorrelated with W; with E uniform over
 * a rounding step {@code S = 2·max|W|/2^B}, {@code E[E²] = S²/12}, so
 * {@code RE ≈ max|W|² / (6 · 4^B · E[W²])}. The factor 1/6 does not change any allocation (every
 * gain scales by it); it only puts APPROX on the scale of EXACT so the two can be compared.
 *
 * <h2>Activation-aware importance</h2>
 * Optional per-input-column weights {@code a_j = E[x_j²]} from calibration. The output error of
 * {@code y = Σ_j w_j x_j} with independent inputs is {@code Σ_j a_j Δw_j²}, so EXACT uses
 * a-weighted dot products, {@code cos_a(w, v) = Σ a w v / √(Σ a w² · Σ a v²)}. APPROX keeps the
 * uniform-error model (the rounding step still follows the unweighted max|W|, as the grid does)
 * and replaces both means by a-weighted means: {@code RE ≈ max|W|² · Σa / (6 · 4^B · Σ a w²)}.
 *
 * <p>A channel with no energy ({@code Σ a w² = 0}, e.g. all zeros) has RE 0 at every B: it is
 * represented exactly. Weights that are NaN or infinite are rejected with row and column.
 */
public final class RelativeError {

    /** Bit widths 1..8: the length of one channel's RE curve. */
    public static final int WIDTHS = QuantLimits.MAX_BITS;

    private RelativeError() {}

    /** RE of one channel at one bit width; {@code importance} may be null (all ones). */
    public static double of(Metric metric, float[] row, int bits, float[] importance) {
        SymmetricChannelQuantizer.checkBits(bits);
        double[] curve = new double[WIDTHS];
        curve(metric, row, 0, row.length, importance, 0, curve, 0);
        return curve[bits - 1];
    }

    /**
     * Writes RE(B) for B = 1..8 of the channel {@code data[offset, offset + length)} to
     * {@code out[outOffset .. outOffset + 7]}. {@code importance} (length {@code length}) may be
     * null; {@code row} is only for error messages.
     */
    public static void curve(Metric metric, float[] data, int offset, int length, float[] importance, int row,
                             double[] out, int outOffset) {
        checkImportance("row " + row, importance, length);
        checkedCurve(metric, data, offset, length, importance, row, out, outOffset);
    }

    private static void checkedCurve(Metric metric, float[] data, int offset, int length, float[] importance, int row,
                                     double[] out, int outOffset) {
        float maxAbs = SymmetricChannelQuantizer.maxAbs(data, offset, length, row);
        double energy = SymmetricChannelQuantizer.energy(data, offset, length);
        double weightedEnergy = energy, importanceSum = length;
        if (importance != null) {
            weightedEnergy = 0;
            importanceSum = 0;
            for (int j = 0; j < length; j++) {
                double w = data[offset + j];
                weightedEnergy += importance[j] * w * w;
                importanceSum += importance[j];
            }
        }
        if (maxAbs < SymmetricChannelQuantizer.NEGLIGIBLE || weightedEnergy == 0) {
            java.util.Arrays.fill(out, outOffset, outOffset + WIDTHS, 0.0);
            return;
        }
        for (int bits = 1; bits <= WIDTHS; bits++) {
            out[outOffset + bits - 1] = switch (metric) {
                case APPROX -> (double) maxAbs * maxAbs * importanceSum / (6 * Math.pow(4, bits) * weightedEnergy);
                case EXACT -> cosineDistance(data, offset, length, importance, bits, maxAbs, energy, weightedEnergy);
            };
        }
    }

    /**
     * The RE table of a weight tensor {@code [out, in]} (any dtype the formats module can
     * dequantize), named as the tensor is; {@code importance} is per input column or null.
     */
    public static ErrorTable table(jquant.formats.Tensor tensor, Metric metric, float[] importance) {
        if (tensor.shape().length != 2) {
            throw new IllegalArgumentException(tensor.name() + ": shape " + tensor.shapeString() + " is not a weight matrix [out, in]");
        }
        return table(tensor.name(), tensor.toFloats(), tensor.rows(), tensor.cols(), metric, importance);
    }

    /**
     * The RE curves of every row of a row-major {@code rows × cols} matrix, rows computed in
     * parallel (each row by the same sequential code, so the table does not depend on the thread
     * count). {@code importance} is per input column (length cols) or null.
     */
    public static ErrorTable table(String name, float[] matrix, int rows, int cols, Metric metric, float[] importance) {
        if (rows <= 0 || cols <= 0 || (long) rows * cols != matrix.length) {
            throw new IllegalArgumentException(name + ": " + matrix.length + " floats is not a " + rows + "×" + cols + " matrix");
        }
        checkImportance(name, importance, cols);
        double[] errors = new double[rows * WIDTHS];
        try {
            WorkerPool.current().forRange(rows, (long) WIDTHS * cols, (worker, start, end) -> {
                for (int r = start; r < end; r++) checkedCurve(metric, matrix, r * cols, cols, importance, r, errors, r * WIDTHS);
            });
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(name + ": " + e.getMessage(), e);
        }
        return new ErrorTable(name, rows, cols, metric, errors);
    }

    /**
     * 1 − cos on the grid the quantizer picks (chosen by the unweighted cosine, as quantizeRow
     * does); {@code energy} is Σw², {@code weightedEnergy} Σ a·w².
     */
    private static double cosineDistance(float[] data, int offset, int length, float[] importance, int bits,
                                         float maxAbs, double energy, double weightedEnergy) {
        SymmetricChannelQuantizer.Grid grid = SymmetricChannelQuantizer.chooseGrid(data, offset, length, bits, maxAbs, energy);
        if (importance == null) return grid.cosineDistance();
        GridKernel.Shape shape = GridKernel.Shape.of(bits);
        double dotWV = 0, dotVV = 0;
        for (int j = 0; j < length; j++) {
            float w = data[offset + j];
            int v = GridKernel.code(shape, w, grid.inverseSpacing());
            dotWV += (double) importance[j] * w * v;
            dotVV += (double) importance[j] * v * v;
        }
        // All important columns rounded to 0 (possible only at 8 bits): nothing of them survives.
        if (dotVV == 0) return 1;
        // Cauchy–Schwarz bounds cos by 1; rounding in the sums can overshoot by an ulp.
        return Math.max(0.0, 1.0 - dotWV / Math.sqrt(weightedEnergy * dotVV));
    }

    private static void checkImportance(String name, float[] importance, int cols) {
        if (importance == null) return;
        if (importance.length != cols) {
            throw new IllegalArgumentException(name + ": " + importance.length + " importance weights for " + cols + " columns");
        }
        for (int j = 0; j < cols; j++) {
            if (!Float.isFinite(importance[j]) || importance[j] < 0) {
                throw new IllegalArgumentException(name + ": importance weight of column " + j + " is " + importance[j]
                        + " (must be finite and ≥ 0)");
            }
        }
    }
}
