package jquant.quantize;

import jquant.core.WorkerPool;

/**
 * The upper-triangular factor U of H⁻¹ = UᵀU for a symmetric positive definite H: the factor the
 * GPTQ paper (Frantar et al.) spreads rounding errors with ({@link ErrorCompensatedRounding}).
 *
 * <p>GPTQ computes it in three passes: Cholesky of H, the inverse from it, and the upper Cholesky
 * factor of that inverse. Two passes of n³/6 multiply-adds give the same U (the factor with a
 * positive diagonal is unique): with J the permutation that reverses the order,
 * <pre>
 *   J·H·J = RᵀR            upper Cholesky factor R of H with rows and columns reversed
 *   S     = R⁻¹            upper, by back substitution
 *   U     = J·Sᵀ·J         U[i][j] = S[n−1−j][n−1−i], upper
 *   then  UᵀU = J·S·Sᵀ·J = J·(RᵀR)⁻¹·J = H⁻¹
 * </pre>
 * All of it runs in place in one n×n float array, in float32 as GPTQ's own does, so a layer of width
 * n needs n² floats for it (3.3 GB at n = 28,672, a 70B model's feed-forward width) besides H itself:
 * J·H·J is the array reversed, J·Sᵀ·J a transpose and a reversal. Both passes are blocked: a panel of
 * {@value #BLOCK} rows updates the rest through {@link FusedAxpy#tile}, each strip of the panel read
 * from cache for every row it updates, which keeps them compute-bound at 70B widths. Every element
 * still gets its updates one fused multiply-add at a time in a fixed order (the Cholesky's in the order
 * of the unblocked algorithm), so the SIMD kernel, its scalar twin and any thread count give the same
 * bits.
 */
public final class InverseCholesky {
    /** Rows of one panel: the depth of the tile passes. */
    static final int BLOCK = 64;
    /** Columns of one tile pass: a panel's strip of them stays in L2 while every row is updated. */
    static final int COLUMNS = 256;
    /** Terms of one tile call in the back substitution: its strip of x stays in L2. */
    static final int DEPTH = 256;

    private InverseCholesky() {}

    /**
     * Overwrites {@code a} (row-major n×n, symmetric positive definite) with U, zero below the diagonal,
     * on the SIMD kernel and the run's worker pool.
     *
     * @throws IllegalArgumentException if {@code a} is not n×n or not positive definite
     */
    public static void upperFactorOfInverseInPlace(float[] a, int n) {
        upperFactorOfInverseInPlace(a, n, FusedAxpy.VECTOR);
    }

    static void upperFactorOfInverseInPlace(float[] a, int n, FusedAxpy axpy) {
        if ((long) n * n != a.length) throw new IllegalArgumentException(a.length + " values are not a " + n + "×" + n + " matrix");
        reverse(a);
        choleskyUpper(a, n, axpy);
        inverseUpper(a, n, axpy);
        transpose(a, n);
        reverse(a);
    }

    /**
     * In place: the upper triangle of {@code a} becomes R ({@code A = RᵀR}), the strictly lower triangle
     * zero. Row k is divided by its pivot's root, then every later row i is updated by
     * {@code a[i][i..] = fma(−R[k][i], R[k][i..], a[i][i..])}: within the panel row by row, below it as tiles.
     * Each element thus gets its updates in ascending k, as in the unblocked algorithm.
     */
    static void choleskyUpper(float[] a, int n, FusedAxpy axpy) {
        WorkerPool pool = WorkerPool.current();
        float[] coefficients = new float[Math.max(0, n - BLOCK) * BLOCK];
        for (int k0 = 0; k0 < n; k0 += BLOCK) {
            int k1 = Math.min(n, k0 + BLOCK), depth = k1 - k0;
            for (int k = k0; k < k1; k++) {
                float d = a[k * n + k];
                if (!(d > 0) || !Float.isFinite(d)) {
                    throw new IllegalArgumentException("the matrix is not positive definite (pivot " + d + " at row " + (n - 1 - k) + " of " + n + ")");
                }
                float root = (float) Math.sqrt(d);
                a[k * n + k] = root;
                for (int j = k + 1; j < n; j++) a[k * n + j] /= root;
                for (int i = k + 1; i < k1; i++) axpy.floats(-a[k * n + i], a, k * n + i, a, i * n + i, n - i);
            }
            if (k1 == n) break;
            int first = k1, panel = k0;
            for (int i = first; i < n; i++) {
                for (int k = k0; k < k1; k++) coefficients[(i - first) * depth + (k - k0)] = -a[k * n + i];
            }
            int tiles = (n - first + COLUMNS - 1) / COLUMNS;
            // Tile t covers columns [c0, c1) of the rows whose diagonal lies before c1; the cells it writes
            // below the diagonal are never read and are cleared at the end.
            pool.forRange(tiles, (long) depth * COLUMNS * (n - first) / 2, (worker, start, end) -> {
                for (int t = start; t < end; t++) {
                    int c0 = first + t * COLUMNS, c1 = Math.min(n, c0 + COLUMNS);
                    axpy.tile(coefficients, 0, depth, a, panel * n, n, a, first * n, n, c1 - first, depth, c0, c1);
                }
            });
        }
        for (int i = 1; i < n; i++) java.util.Arrays.fill(a, i * n, i * n + i, 0f);
    }

    /**
     * In place: upper-triangular R (zero below the diagonal) becomes S = R⁻¹, by back substitution in
     * blocks of rows from the bottom up: {@code S[i][j] = (δᵢⱼ − Σₖ R[i][k]·S[k][j]) / R[i][i]}, the terms of
     * the rows below the block first (as tiles, k ascending), then those of the block's own rows (k
     * ascending), then the division. Rows below a block are final when it starts; a block's rows are
     * copied aside before they are overwritten.
     */
    static void inverseUpper(float[] a, int n, FusedAxpy axpy) {
        WorkerPool pool = WorkerPool.current();
        float[] block = new float[Math.min(n, BLOCK) * n];
        float[] coefficients = new float[Math.min(n, BLOCK) * n];
        for (int i0 = (n - 1) / BLOCK * BLOCK; i0 >= 0; i0 -= BLOCK) {
            int top = i0, i1 = Math.min(n, i0 + BLOCK), rows = i1 - i0, below = n - i1;
            System.arraycopy(a, i0 * n, block, 0, rows * n);
            for (int r = 0; r < rows; r++) {
                java.util.Arrays.fill(a, (i0 + r) * n, (i0 + r + 1) * n, 0f);
                a[(i0 + r) * n + i0 + r] = 1;
            }
            if (below > 0) {
                for (int r = 0; r < rows; r++) {
                    for (int k = i1; k < n; k++) coefficients[r * below + (k - i1)] = -block[r * n + k];
                }
                int tiles = (below + COLUMNS - 1) / COLUMNS;
                // Rows k ≥ c1 of S are zero in the tile's columns, so a tile stops at its last column.
                pool.forRange(tiles, (long) rows * COLUMNS * below / 2, (worker, start, end) -> {
                    for (int t = start; t < end; t++) {
                        int c0 = i1 + t * COLUMNS, c1 = Math.min(n, c0 + COLUMNS);
                        for (int k = i1; k < c1; k += DEPTH) {
                            int depth = Math.min(DEPTH, c1 - k);
                            axpy.tile(coefficients, k - i1, below, a, k * n, n, a, top * n, n, rows, depth, c0, c1);
                        }
                    }
                });
            }
            for (int i = i1 - 1; i >= i0; i--) {
                int r = i - i0;
                for (int k = i + 1; k < i1; k++) axpy.floats(-block[r * n + k], a, k * n + k, a, i * n + k, n - k);
                float pivot = block[r * n + i];
                for (int j = i; j < n; j++) a[i * n + j] /= pivot;
            }
        }
    }

    /** Transposes the n×n array in place, in tiles that stay in cache. */
    private static void transpose(float[] a, int n) {
        int tile = 64;
        for (int i0 = 0; i0 < n; i0 += tile) {
            for (int j0 = i0; j0 < n; j0 += tile) {
                for (int i = i0; i < Math.min(n, i0 + tile); i++) {
                    for (int j = Math.max(j0, i + 1); j < Math.min(n, j0 + tile); j++) {
                        float t = a[i * n + j];
                        a[i * n + j] = a[j * n + i];
                        a[j * n + i] = t;
                    }
                }
            }
        }
    }

    /** Reverses the array: element (i, j) of an n×n matrix goes to (n−1−i, n−1−j). */
    private static void reverse(float[] a) {
        for (int i = 0, j = a.length - 1; i < j; i++, j--) {
            float t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
}
