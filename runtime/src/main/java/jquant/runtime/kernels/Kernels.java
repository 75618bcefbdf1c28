package jquant.runtime.kernels;

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

    /** SwiGLU's gating: {@code gate[k] = silu(gate[k]) · up[k]} with {@code silu(g) = g / (1 + e^-g)}. */
    void siluMul(float[] gate, float[] up, int len);
}
