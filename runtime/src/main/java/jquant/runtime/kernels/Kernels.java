package jquant.runtime.kernels;

import jquant.core.WorkerPool;

import java.util.Arrays;

/**
 * The float32 arithmetic of a Llama forward pass, single-threaded; {@link WorkerPool} splits the
 * work across threads. {@link VectorKernels} is the fast implementation and {@link ScalarKernels}
 * its plain-loop twin, the oracle the tests compare it with.
 *
 * <p>Activations are row-major {@code [tokens][features]}. Products with weight matrices are
 * {@link MatmulKernels}' job.
 */
public interface Kernels {

    /** {@code Σ_k a[aOff + k] · b[bOff + k]} for {@code k < len}. */
    float dot(float[] a, int aOff, float[] b, int bOff, int len);

    /** {@code y[yOff + k] += a · x[xOff + k]} for {@code k < len}. */
    void axpy(float a, float[] x, int xOff, float[] y, int yOff, int len);

    /** {@code out[outOff + k] = weight[k] · x[xOff + k] / sqrt(mean(x²) + eps)} for {@code k < size}. */
    void rmsnorm(float[] x, int xOff, float[] weight, float eps, float[] out, int outOff, int size);

    /** In-place softmax of {@code x[off, off + len)}, shifted by its maximum so it cannot overflow. */
    void softmax(float[] x, int off, int len);

    /** {@link #softmax} of {@code rows} rows of {@code len} floats, {@code stride} apart from {@code off} (this default). */
    default void softmaxRows(float[] x, int off, int stride, int rows, int len) {
        for (int r = 0; r < rows; r++) softmax(x, off + r * stride, len);
    }

    /** SwiGLU's gating: {@code gate[k] = silu(gate[k]) · up[k]} with {@code silu(g) = g / (1 + e^-g)}, for {@code off <= k < off + len}. */
    void siluMul(float[] gate, float[] up, int off, int len);

    /**
     * Attention scores of {@code rows} query rows against one key head stored dimension-major:
     * {@code s[sOff + r·sStride + p] = Σ_d (q[qOff + r·qStride + d] · scale) · k[kOff + d·kStride + p]}
     * for {@code p < len}, defined as {@code dims} calls of {@link #axpy} in ascending d onto zeros
     * (this default). An implementation may compute several rows at once but must give these bits.
     */
    default void scores(float[] q, int qOff, int qStride, int rows, int dims, float scale,
                        float[] k, int kOff, int kStride, int len, float[] s, int sOff, int sStride) {
        for (int r = 0; r < rows; r++) {
            Arrays.fill(s, sOff + r * sStride, sOff + r * sStride + len, 0f);
            for (int d = 0; d < dims; d++) axpy(q[qOff + r * qStride + d] * scale, k, kOff + d * kStride, s, sOff + r * sStride, len);
        }
    }

    /**
     * Attention's weighted sums of one value head stored dimension-major:
     * {@code out[outOff + r·outStride + d] = Σ_p s[sOff + r·sStride + p] · v[vOff + d·vStride + p]} for
     * {@code p < len}, {@code d < dims}, {@code r < rows}, defined as {@link #dot} computes each
     * (this default); an implementation may share loads between rows but must give these bits.
     */
    default void weightedSums(float[] s, int sOff, int sStride, int rows, float[] v, int vOff, int vStride, int dims, int len,
                              float[] out, int outOff, int outStride) {
        for (int r = 0; r < rows; r++) {
            for (int d = 0; d < dims; d++) out[outOff + r * outStride + d] = dot(s, sOff + r * sStride, v, vOff + d * vStride, len);
        }
    }
}
