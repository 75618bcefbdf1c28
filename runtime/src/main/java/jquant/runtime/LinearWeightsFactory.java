package jquant.runtime;

import jquant.formats.Tensor;
import jquant.formats.TensorKind;

/**
 * Turns a checkpoint's weight tensor into the {@link LinearWeights} the model multiplies by, so one
 * loader can give each tensor its own representation (e.g. int8 blocks but a float classifier).
 */
@FunctionalInterface
public interface LinearWeightsFactory {

    /**
     * The weights for {@code tensor}, which plays {@code kind} in {@code layer} (0 for the
     * classifier {@link TensorKind#HEAD}, the only non-block linear layer).
     */
    LinearWeights create(TensorKind kind, int layer, Tensor tensor);

    /** Every tensor decoded to float32 ({@link Tensor#toFloats()}) and kept dense. */
    static LinearWeightsFactory dense(Compute compute) {
        return (kind, layer, tensor) -> new DenseF32Weights(tensor.toFloats(), tensor.rows(), tensor.cols(), compute);
    }
}
