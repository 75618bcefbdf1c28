package jquant.runtime;

/**
 * How a checkpoint's linear layers multiply (the CLI's {@code --kernels}), the fastest layout per format by default.
 * {@code auto} runs ternary tensors (and exactly ternary float matrices) on the integer ternary kernels in their stored
 * layout, llama.cpp's Q4_0, Q8_0, Q4_K, Q5_K and Q6_K on integer block dot products as llama.cpp computes them, a .jqw
 * model's weightlet tensors as stored but for weight-only decode, which reads a copy made at each tensor's first decode into
 * {@link WeightletLanes} where the native library has their AVX-512 kernel and the file fits in half the memory the system
 * has available (the copy takes the stored pages' place in memory; llama.cpp likewise repacks Q4_0 at load), and everything
 * else dense; {@code stored} does the same with no copy, every tensor where it lies in the file; {@code t2p} does as
 * {@code auto} but repacks ternary tensors to T2P row pairs at load where the shape allows; {@code float} multiplies every
 * tensor in float32, quantized ones decoded row by row as they are used (the comparison baseline: activations are then not
 * quantized).
 */
public enum KernelChoice {
    AUTO, STORED, T2P, FLOAT;

    /** The factory the model loader asks for each linear layer. */
    public LinearWeightsFactory factory(Compute compute) {
        return switch (this) {
            case AUTO, STORED -> new TernaryWeightsFactory(compute, TernaryWeightsFactory.Layout.STOCK);
            case T2P -> new TernaryWeightsFactory(compute, TernaryWeightsFactory.Layout.T2P);
            case FLOAT -> LinearWeightsFactory.inPlace(compute);
        };
    }

    /** Whether a .jqw model's weightlet tensors copy themselves into {@link WeightletLanes} for weight-only decode. */
    public boolean weightletLanes() {
        return this == AUTO || this == T2P;
    }
}
