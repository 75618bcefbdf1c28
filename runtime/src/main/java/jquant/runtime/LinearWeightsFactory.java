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

    /**
     * Every tensor multiplied where it is stored: float32/float16/bfloat16 through the fused kernels
     * ({@link DenseWeights}), any other decodable type row by row ({@link DecodedRowsWeights}); float16 and
     * llama.cpp's common block types decode on the native kernels where they are in use ({@link NativeRowsWeights}). A
     * tensor held in Java memory rather than a file (a computed model) is copied to float32 once.
     */
    static LinearWeightsFactory inPlace(Compute compute) {
        return (kind, layer, tensor) -> {
            if (!tensor.data().isNative()) return new DenseF32Weights(tensor.toFloats(), tensor.rows(), tensor.cols(), compute);
            if (DenseWeights.supports(tensor.dtype())) return NativeRowsWeights.dense(tensor, compute);
            return NativeRowsWeights.decoded(tensor, compute);
        };
    }

    /** Every tensor decoded to a float32 copy ({@link Tensor#toFloats()}): the baseline that in-place loading replaces. */
    static LinearWeightsFactory dense(Compute compute) {
        return (kind, layer, tensor) -> new DenseF32Weights(tensor.toFloats(), tensor.rows(), tensor.cols(), compute);
    }
}
