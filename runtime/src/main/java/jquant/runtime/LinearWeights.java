package jquant.runtime;

/**
 * One linear layer's weight matrix {@code W[out][in]} as the model multiplies by it: the seam where
 * a stored representation (dense float, weight-only int8, int8×int8, ternary …) meets the forward
 * pass. The model never sees how the weights are stored; a loader picks an implementation per tensor
 * through a {@link LinearWeightsFactory}.
 */
public interface LinearWeights {

    /** Input features (columns of W). */
    int inFeatures();

    /** Output features (rows of W). */
    int outFeatures();

    /**
     * {@code out[i*outFeatures + r] = Σ_k x[i*inFeatures + k] · W[r][k]} for the {@code n} token rows
     * of {@code x}: a matrix-vector product when {@code n == 1}, a batched product otherwise.
     */
    void matmul(float[] x, int n, float[] out);

    /**
     * Bytes of stored weights (codes, scales) one product reads: what a memory-bound decode step
     * streams. Float32 size unless the storage says otherwise.
     */
    default long storedBytes() {
        return 4L * inFeatures() * outFeatures();
    }
}
