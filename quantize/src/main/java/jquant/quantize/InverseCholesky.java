package jquant.quantize;

import java.util.stream.IntStream;

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
 * Both passes are made of {@link FusedAxpy} row updates, in double precision: every element's
 * updates come in the same order on any thread count, and the SIMD and scalar kernels give the same
 * bits. U is returned in float, the precision the rounding loop runs in (as GPTQ's does).
 */
public final class InverseCholesky {

    private InverseCholesky() {}

    /** U (row-major n×n, zero below the diagonal) of {@code h}'s inverse, on the SIMD kernel. */
    public static float[] upperFactorOfInverse(double[] h, int n) {
        return upperFactorOfInverse(h, n, FusedAxpy.VECTOR);
    }

    static float[] upperFactorOfInverse(double[] h, int n, FusedAxpy axpy) {
        if ((long) n * n != h.length) throw new IllegalArgumentException(h.length + " values are not a " + n + "×" + n + " matrix");
        double[] r = new double[h.length];
        for (int i = 0; i < n; i++) {
            for (int j = i; j < n; j++) r[i * n + j] = h[(n - 1 - i) * n + (n - 1 - j)];
        }
        choleskyUpper(r, n, axpy);
        double[] s = inverseUpper(r, n, axpy);
        float[] u = new float[h.length];
        for (int i = 0; i < n; i++) {
            for (int j = i; j < n; j++) u[i * n + j] = (float) s[(n - 1 - j) * n + (n - 1 - i)];
        }
        return u;
    }

    /**
     * In place on the upper triangle of {@code a}: row k becomes R's row k ({@code A = RᵀR}), each
     * remaining row updated by {@code a[i][i..] −= R[k][i]·R[k][i..]} (the strictly lower triangle is
     * never read).
     */
    static void choleskyUpper(double[] a, int n, FusedAxpy axpy) {
        for (int k = 0; k < n; k++) {
            double d = a[k * n + k];
            if (!(d > 0) || !Double.isFinite(d)) {
                throw new IllegalArgumentException("the matrix is not positive definite (pivot " + d + " at row " + k + " of " + n + ")");
            }
            double root = Math.sqrt(d);
            a[k * n + k] = root;
            for (int j = k + 1; j < n; j++) a[k * n + j] /= root;
            int row = k;
            IntStream.range(k + 1, n).parallel().forEach(i -> axpy.doubles(-a[row * n + i], a, row * n + i, a, i * n + i, n - i));
        }
    }

    /**
     * S = R⁻¹ for upper-triangular R, from the last row up:
     * {@code S[i][·] = (e_i − Σ_{k>i} R[i][k]·S[k][·]) / R[i][i]}. A column of S depends on that
     * column only, so blocks of columns run in parallel.
     */
    static double[] inverseUpper(double[] r, int n, FusedAxpy axpy) {
        double[] s = new double[r.length];
        int block = 64;
        IntStream.range(0, (n + block - 1) / block).parallel().forEach(b -> {
            int c0 = b * block, c1 = Math.min(n, c0 + block);
            for (int i = c1 - 1; i >= 0; i--) {
                if (i >= c0) s[i * n + i] = 1;
                for (int k = i + 1; k < c1; k++) {
                    int from = Math.max(k, c0);
                    axpy.doubles(-r[i * n + k], s, k * n + from, s, i * n + from, c1 - from);
                }
                double pivot = r[i * n + i];
                for (int j = Math.max(i, c0); j < c1; j++) s[i * n + j] /= pivot;
            }
        });
        return s;
    }
}
