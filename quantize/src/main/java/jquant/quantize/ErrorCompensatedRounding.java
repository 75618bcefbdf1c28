package jquant.quantize;

import jquant.quantize.SymmetricChannelQuantizer.QuantizedMatrix;

import jquant.core.WorkerPool;


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
 * <p>Rows are independent given U. They are rounded {@value #ROW_GROUP} at a time with GPTQ's lazy
 * batch updates: within a block of {@value #COLUMN_BLOCK} columns each rounding error is spread over
 * the block's later columns at once, and over the columns after the block only when the block is done,
 * as one {@link FusedAxpy#tile} for all the group's rows, so each strip of U is read from cache for 64
 * rows rather than from memory for each. The scale refit's H·v is tiled the same way. Every weight
 * still gets its updates one fused multiply-add at a time in column order, so the result is the same
 * bits as the column-at-a-time loop, on any thread count and on the SIMD and scalar kernels, and
 * {@code jquant verify} can recompute it from the same statistics.
 */
public final class ErrorCompensatedRounding {

    /** GPTQ's relative damping ({@code percdamp}): λ = 1% of the mean diagonal of H. */
    public static final double DAMPING = 0.01;
    /** Rows rounded together: one pass over U serves all of them. */
    static final int ROW_GROUP = 64;
    /** Columns whose errors are spread within the block first and after it as one tile (GPTQ's blocksize). */
    static final int COLUMN_BLOCK = 128;
    /** Columns of one tile call: the strip of U (or H) it reads stays in L2 while every row uses it. */
    private static final int COLUMNS = 256;
    /** Terms of one H·v tile call. */
    private static final int DEPTH = 256;

    private ErrorCompensatedRounding() {}

    /**
     * What GPTQ needs of a layer's inputs: H = E[x·xᵀ] (row-major n×n, symmetric, float32) and the factor
     * U of its damped inverse, both in the order the columns are rounded in: {@code order[k]} is the k-th
     * column rounded (null: 0, 1, …, n−1). The layer-wise squared error's Hessian is 2H; the factor 2
     * changes nothing. Both are n² floats: for n = 28,672 (a 70B model's feed-forward width) 3.3 GB each.
     */
    public record Hessian(int n, float[] moment, float[] inverseFactor, int[] order) {
        /**
         * From E[x·xᵀ] as calibration records it (kept, not copied), columns in their own order. A column
         * that never fired (H[j][j] = 0) gets a 1 on the diagonal of the matrix that is inverted, as in GPTQ,
         * so it is rounded on its own; an all-zero H gives U = identity, which is rounding to nearest.
         */
        public static Hessian of(float[] secondMoment, int n) {
            return factored(secondMoment, n, null);
        }

        /**
         * The same with the columns in order of decreasing H[j][j] = E[x_j²], ties in column order (GPTQ's
         * act-order); {@code secondMoment} is permuted in place to that order (no second n² array).
         */
        public static Hessian activationOrder(float[] secondMoment, int n) {
            if ((long) n * n != secondMoment.length) {
                throw new IllegalArgumentException(secondMoment.length + " values are not a " + n + "×" + n + " matrix");
            }
            Integer[] sorted = new Integer[n];
            for (int j = 0; j < n; j++) sorted[j] = j;
            java.util.Arrays.sort(sorted, (a, b) -> Float.compare(secondMoment[b * n + b], secondMoment[a * n + a]));   // stable
            int[] order = new int[n];
            for (int k = 0; k < n; k++) order[k] = sorted[k];
            float[] row = new float[n];
            for (int i = 0; i < n; i++) {   // columns of every row
                System.arraycopy(secondMoment, i * n, row, 0, n);
                for (int k = 0; k < n; k++) secondMoment[i * n + k] = row[order[k]];
            }
            permuteRows(secondMoment, n, order, row);
            return factored(secondMoment, n, order);
        }

        private static Hessian factored(float[] secondMoment, int n, int[] order) {
            if ((long) n * n != secondMoment.length) {
                throw new IllegalArgumentException(secondMoment.length + " values are not a " + n + "×" + n + " matrix");
            }
            for (int i = 0; i < secondMoment.length; i++) {
                if (!Float.isFinite(secondMoment[i])) {
                    throw new IllegalArgumentException("E[x·xᵀ] has a non-finite entry at row " + i / n + ", column " + i % n);
                }
            }
            float[] factor = secondMoment.clone();
            double trace = 0;
            for (int j = 0; j < n; j++) {
                if (factor[j * n + j] == 0) factor[j * n + j] = 1;
                trace += factor[j * n + j];
            }
            double damp = DAMPING * trace / n;
            for (int j = 0; j < n; j++) factor[j * n + j] = (float) (factor[j * n + j] + damp);
            InverseCholesky.upperFactorOfInverseInPlace(factor, n);
            return new Hessian(n, secondMoment, factor, order);
        }
    }

    /** Rows of the row-major {@code n}-column matrix {@code m} put in {@code order} (row k ← row order[k]), in place along cycles. */
    static void permuteRows(float[] m, int n, int[] order, float[] buffer) {
        int rows = order.length;
        boolean[] done = new boolean[rows];
        for (int start = 0; start < rows; start++) {
            if (done[start] || order[start] == start) continue;
            System.arraycopy(m, start * n, buffer, 0, n);
            int k = start;
            while (order[k] != start) {
                System.arraycopy(m, order[k] * n, m, k * n, n);
                done[k] = true;
                k = order[k];
            }
            System.arraycopy(buffer, 0, m, k * n, n);
            done[k] = true;
        }
    }

    /**
     * Rounds every row {@code r} of a row-major {@code rows × cols} matrix at {@code bits[r]} bits; {@code hessian.n()} = cols.
     * With a Hessian in another column order the rows are rounded in that order ({@code matrix} is permuted in place
     * while it runs and put back), and the codes come back in the matrix's own order.
     */
    public static QuantizedMatrix quantize(float[] matrix, int rows, int cols, byte[] bits, Hessian hessian) {
        return quantize(matrix, rows, cols, bits, hessian, FusedAxpy.VECTOR);
    }

    static QuantizedMatrix quantize(float[] matrix, int rows, int cols, byte[] bits, Hessian hessian, FusedAxpy axpy) {
        if ((long) rows * cols != matrix.length) throw new IllegalArgumentException("matrix has " + matrix.length + " floats, not " + rows + "×" + cols);
        if (bits.length != rows) throw new IllegalArgumentException(bits.length + " bit widths for " + rows + " rows");
        if (hessian.n() != cols) throw new IllegalArgumentException("a Hessian of " + hessian.n() + " inputs for " + cols + " columns");
        int[] order = hessian.order();
        if (order == null) return quantizeInOrder(matrix, rows, cols, bits, hessian, axpy);
        float[] row = new float[cols];
        for (int r = 0; r < rows; r++) {
            System.arraycopy(matrix, r * cols, row, 0, cols);
            for (int k = 0; k < cols; k++) matrix[r * cols + k] = row[order[k]];
        }
        QuantizedMatrix q;
        try {
            q = quantizeInOrder(matrix, rows, cols, bits, hessian, axpy);
        } finally {
            for (int r = 0; r < rows; r++) {
                System.arraycopy(matrix, r * cols, row, 0, cols);
                for (int k = 0; k < cols; k++) matrix[r * cols + order[k]] = row[k];
            }
        }
        byte[] values = q.values(), codes = new byte[cols];
        for (int r = 0; r < rows; r++) {
            System.arraycopy(values, r * cols, codes, 0, cols);
            for (int k = 0; k < cols; k++) values[r * cols + order[k]] = codes[k];
        }
        return new QuantizedMatrix(rows, cols, bits, values, q.scales());
    }

    private static QuantizedMatrix quantizeInOrder(float[] matrix, int rows, int cols, byte[] bits, Hessian hessian, FusedAxpy axpy) {
        byte[] values = new byte[matrix.length];
        float[] scales = new float[rows];
        int groups = (rows + ROW_GROUP - 1) / ROW_GROUP;
        WorkerPool.current().forRange(groups, (long) ROW_GROUP * cols * cols, (worker, start, end) -> {
            for (int g = start; g < end; g++) roundGroup(matrix, g * ROW_GROUP, Math.min(ROW_GROUP, rows - g * ROW_GROUP), cols, bits, hessian, axpy, values, scales);
        });
        return new QuantizedMatrix(rows, cols, bits, values, scales);
    }

    /** Rounds rows {@code [r0, r0 + count)}: GPTQ's column loop with lazy batch updates, then the scale refit. */
    private static void roundGroup(float[] matrix, int r0, int count, int cols, byte[] bits, Hessian hessian, FusedAxpy axpy,
                                   byte[] values, float[] scales) {
        float[] factor = hessian.inverseFactor();
        float[] work = new float[count * cols];
        float[] inverseSpacing = new float[count], unit = new float[count];
        boolean[] rounded = new boolean[count];
        GridKernel.Shape[] shape = new GridKernel.Shape[count];
        for (int b = 0; b < count; b++) {
            int r = r0 + b, offset = r * cols;
            SymmetricChannelQuantizer.QuantizedRow nearest = SymmetricChannelQuantizer.quantizeRow(matrix, offset, cols, bits[r], r);
            shape[b] = GridKernel.Shape.of(bits[r]);
            unit[b] = nearest.scale();
            if (unit[b] == 0) {
                // A negligible channel: round-to-nearest's all-zero codes and scale 0; its work row stays zero.
                System.arraycopy(nearest.values(), 0, values, offset, cols);
                continue;
            }
            rounded[b] = true;
            System.arraycopy(matrix, offset, work, b * cols, cols);
            inverseSpacing[b] = SymmetricChannelQuantizer.chooseGrid(matrix, offset, cols, bits[r],
                    SymmetricChannelQuantizer.maxAbs(matrix, offset, cols, r), SymmetricChannelQuantizer.energy(matrix, offset, cols)).inverseSpacing();
        }
        float[] spread = new float[count * COLUMN_BLOCK];
        for (int j0 = 0; j0 < cols; j0 += COLUMN_BLOCK) {
            int j1 = Math.min(cols, j0 + COLUMN_BLOCK);
            for (int b = 0; b < count; b++) {
                if (!rounded[b]) continue;
                int row = b * cols, out = (r0 + b) * cols;
                for (int j = j0; j < j1; j++) {
                    float w = work[row + j];
                    int v = GridKernel.code(shape[b], w, inverseSpacing[b]);
                    values[out + j] = (byte) v;
                    float error = (w - unit[b] * v) / factor[j * cols + j];
                    spread[b * COLUMN_BLOCK + j - j0] = -error;
                    axpy.floats(-error, factor, j * cols + j + 1, work, row + j + 1, j1 - j - 1);
                }
            }
            for (int c0 = j1; c0 < cols; c0 += COLUMNS) {
                axpy.tile(spread, 0, COLUMN_BLOCK, factor, j0 * cols, cols, work, 0, cols, count, j1 - j0, c0, Math.min(cols, c0 + COLUMNS));
            }
        }
        refit(matrix, values, r0, count, cols, rounded, unit, hessian, axpy, scales);
    }

    /**
     * Each rounded row's scale {@code vᵀ·H·w / vᵀ·H·v} (or its round-to-nearest scale if H sees nothing of v):
     * H·v for all the group's rows as tiles, H's rows in order, then the two sums in double.
     */
    private static void refit(float[] matrix, byte[] values, int r0, int count, int n, boolean[] rounded, float[] unit, Hessian hessian,
                              FusedAxpy axpy, float[] scales) {
        float[] codes = new float[count * n];
        for (int b = 0; b < count; b++) {
            if (rounded[b]) for (int k = 0; k < n; k++) codes[b * n + k] = values[(r0 + b) * n + k];
        }
        float[] hv = new float[count * n];
        for (int c0 = 0; c0 < n; c0 += COLUMNS) {
            int c1 = Math.min(n, c0 + COLUMNS);
            for (int j = 0; j < n; j += DEPTH) axpy.tile(codes, j, n, hessian.moment(), j * n, n, hv, 0, n, count, Math.min(DEPTH, n - j), c0, c1);
        }
        for (int b = 0; b < count; b++) {
            int r = r0 + b;
            if (!rounded[b]) continue;
            double wHv = 0, vHv = 0;
            for (int k = 0; k < n; k++) {
                wHv += matrix[r * n + k] * (double) hv[b * n + k];
                vHv += codes[b * n + k] * (double) hv[b * n + k];
            }
            float scale = vHv > 0 ? (float) (wHv / vHv) : 0;
            scales[r] = scale > 0 && Float.isFinite(scale) ? scale : unit[b];
        }
    }
}
