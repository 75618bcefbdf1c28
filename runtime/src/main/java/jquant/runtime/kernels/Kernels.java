package jquant.runtime.kernels;

/**
 * The float32 arithmetic of a Llama forward pass, single-threaded; {@link WorkerPool} splits the
 * work across threads. {@link VectorKernels} is the fast implementation and {@link ScalarKernels}
 * its plain-loop twin, the oracle the tests compare it with.
 *
 * <p>Activations are row-major {@code [tokens][features]}. A weight matrix {@code w} is
 * {@code [out][in]} (PyTorch's layout), which an implementation may repack once for its own access
 * pattern; every output element is the dot product of one activation row and one weight row.
 */
public interface Kernels {

    /**
     * The layout {@link #matmulRows} multiplies by, made once from a row-major {@code w[out][in]}
     * (it may be {@code w} itself).
     */
    float[] packWeights(float[] w, int out, int in);

    /** Row ranges given to {@link #matmulRows} must start at a multiple of this. */
    int rowAlignment();

    /**
     * Rows {@code [rowStart, rowEnd)} of a batched matrix product: for every token {@code i < n} and
     * weight row {@code r}, {@code y[i*out + r] = Σ_k x[i*in + k] · w[r][k]}, with {@code packed} from
     * {@link #packWeights}.
     */
    void matmulRows(float[] x, int n, int in, float[] packed, int rowStart, int rowEnd, float[] y, int out);

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
