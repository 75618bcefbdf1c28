package jquant.quantize;

import jquant.quantize.SymmetricChannelQuantizer.QuantizedMatrix;

import java.util.Arrays;
import java.util.stream.IntStream;

/**
 * GPTQ's rounding (the GPTQ paper by Frantar et al.) inside jquant's per-channel bit plan: every
 * channel keeps its width, its symmetric grid and the clip {@link SymmetricChannelQuantizer} chooses
 * for it, so the file stays NPU-legal; only which level each weight takes, and then its scale, change.
 *
 * <pre>
 *  H  = E[x·xᵀ] of the layer's input over the calibration tokens       (n×n, n = columns)
 *  U  = upper factor of (H + λ·mean(diag H)·I)⁻¹ = UᵀU,  λ = {@value #DAMPING}   GPTQ's damping ({@link InverseCholesky})
 *  per row w at B bits: grid and scale s as round-to-nearest chooses them; then columns j = 0 … n−1 in order:
 *      v_j = nearest level of w_j on the grid                             (the same rounding as RTN)
 *      e   = (w_j − s·v_j) / U[j][j]
 *      w_k ← w_k − e·U[j][k]   for k > j                                  the error moved onto the columns left
 *  scale = vᵀ·H·w₀ / vᵀ·H·v                                                (w₀: the row before any update)
 * </pre>
 * The update is the optimal brain surgeon step GPTQ derives: rounding column j and correcting the
 * columns after it keeps {@code (w₀ − ŵ)ᵀ·H·(w₀ − ŵ)}, the layer's squared output error on the
 * calibration inputs, as small as one column at a time allows. The final scale is the exact minimiser
 * of that same error for the chosen codes (least squares weighted by H; a plain least-squares refit, as
 * RTN does, would undo part of the compensation), so it is never worse than the scale it started from.
 *
 * <p>Rows are independent given U; each row's arithmetic is one fixed sequence of float and double
 * operations ({@link FusedAxpy}, sums in column order), so the result is the same bits on any thread
 * count and on the SIMD and scalar kernels, and {@code jquant verify} can recompute it from the same
 * statistics.
 */
public final class ErrorCompensatedRounding {

    /** GPTQ's relative damping ({@code percdamp}): λ = 1% of the mean diagonal of H. */
    public static final double DAMPING = 0.01;
    /** Rows rounded together, so one pass over U serves several rows while they stay in cache. */
    private static final int ROW_BLOCK = 8;

    private ErrorCompensatedRounding() {}

    /**
     * What GPTQ needs of a layer's inputs: H = E[x·xᵀ] (row-major n×n, symmetric) and the factor U of
     * its damped inverse. The layer-wise squared error's Hessian is 2H; the factor 2 changes nothing.
     */
    public record Hessian(int n, double[] moment, float[] inverseFactor) {
        /**
         * From E[x·xᵀ] as calibration records it. A column that never fired (H[j][j] = 0) gets a 1 on the
         * diagonal of the matrix that is inverted, as in GPTQ, so it is rounded on its own; an all-zero H
         * gives U = identity, which is rounding to nearest.
         */
        public static Hessian of(float[] secondMoment, int n) {
            if ((long) n * n != secondMoment.length) {
                throw new IllegalArgumentException(secondMoment.length + " values are not a " + n + "×" + n + " matrix");
            }
            double[] h = new double[secondMoment.length];
            for (int i = 0; i < h.length; i++) {
                if (!Float.isFinite(secondMoment[i])) {
                    throw new IllegalArgumentException("E[x·xᵀ] has a non-finite entry at row " + i / n + ", column " + i % n);
                }
                h[i] = secondMoment[i];
            }
            double[] damped = h.clone();
            double trace = 0;
            for (int j = 0; j < n; j++) {
                if (damped[j * n + j] == 0) damped[j * n + j] = 1;
                trace += damped[j * n + j];
            }
            double damp = DAMPING * trace / n;
            for (int j = 0; j < n; j++) damped[j * n + j] += damp;
            return new Hessian(n, h, InverseCholesky.upperFactorOfInverse(damped, n));
        }
    }

    /** Rounds every row {@code r} of a row-major {@code rows × cols} matrix at {@code bits[r]} bits; {@code hessian.n()} = cols. */
    public static QuantizedMatrix quantize(float[] matrix, int rows, int cols, byte[] bits, Hessian hessian) {
        return quantize(matrix, rows, cols, bits, hessian, FusedAxpy.VECTOR);
    }

    static QuantizedMatrix quantize(float[] matrix, int rows, int cols, byte[] bits, Hessian hessian, FusedAxpy axpy) {
        if ((long) rows * cols != matrix.length) throw new IllegalArgumentException("matrix has " + matrix.length + " floats, not " + rows + "×" + cols);
        if (bits.length != rows) throw new IllegalArgumentException(bits.length + " bit widths for " + rows + " rows");
        if (hessian.n() != cols) throw new IllegalArgumentException("a Hessian of " + hessian.n() + " inputs for " + cols + " columns");
        float[] factor = hessian.inverseFactor();
        byte[] values = new byte[matrix.length];
        float[] scales = new float[rows];
        IntStream.range(0, (rows + ROW_BLOCK - 1) / ROW_BLOCK).parallel().forEach(block -> {
            int r0 = block * ROW_BLOCK, count = Math.min(ROW_BLOCK, rows - r0);
            float[][] work = new float[count][];
            float[] inverseSpacing = new float[count], unit = new float[count];
            GridKernel.Shape[] shape = new GridKernel.Shape[count];
            for (int b = 0; b < count; b++) {
                int r = r0 + b, offset = r * cols;
                SymmetricChannelQuantizer.QuantizedRow nearest = SymmetricChannelQuantizer.quantizeRow(matrix, offset, cols, bits[r], r);
                shape[b] = GridKernel.Shape.of(bits[r]);
                unit[b] = nearest.scale();
                if (unit[b] == 0) {
                    // A negligible channel: round-to-nearest's all-zero codes and scale 0.
                    System.arraycopy(nearest.values(), 0, values, offset, cols);
                    continue;
                }
                work[b] = Arrays.copyOfRange(matrix, offset, offset + cols);
                inverseSpacing[b] = SymmetricChannelQuantizer.chooseGrid(matrix, offset, cols, bits[r],
                        SymmetricChannelQuantizer.maxAbs(matrix, offset, cols, r), SymmetricChannelQuantizer.energy(matrix, offset, cols)).inverseSpacing();
            }
            for (int j = 0; j < cols; j++) {
                float pivot = factor[j * cols + j];
                for (int b = 0; b < count; b++) {
                    if (work[b] == null) continue;
                    float w = work[b][j];
                    int v = GridKernel.code(shape[b], w, inverseSpacing[b]);
                    values[(r0 + b) * cols + j] = (byte) v;
                    float error = (w - unit[b] * v) / pivot;
                    axpy.floats(-error, factor, j * cols + j + 1, work[b], j + 1, cols - j - 1);
                }
            }
            double[] hv = new double[cols];
            for (int b = 0; b < count; b++) {
                if (work[b] == null) continue;
                int offset = (r0 + b) * cols;
                scales[r0 + b] = refit(matrix, values, offset, hessian, hv, axpy, unit[b]);
            }
        });
        return new QuantizedMatrix(rows, cols, bits, values, scales);
    }

    /** {@code vᵀ·H·w / vᵀ·H·v} for the row at {@code offset}, or {@code fallback} if H sees nothing of v. */
    private static float refit(float[] matrix, byte[] values, int offset, Hessian hessian, double[] hv, FusedAxpy axpy, float fallback) {
        int n = hessian.n();
        Arrays.fill(hv, 0);
        for (int j = 0; j < n; j++) {
            int v = values[offset + j];
            if (v != 0) axpy.doubles(v, hessian.moment(), j * n, hv, 0, n);
        }
        double wHv = 0, vHv = 0;
        for (int k = 0; k < n; k++) {
            wHv += matrix[offset + k] * hv[k];
            vHv += values[offset + k] * hv[k];
        }
        if (!(vHv > 0)) return fallback;
        float scale = (float) (wHv / vHv);
        return scale > 0 && Float.isFinite(scale) ? scale : fallback;
    }
}
