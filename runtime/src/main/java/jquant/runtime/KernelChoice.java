package jquant.runtime;

/**
 * How a checkpoint's linear layers multiply (the CLI's {@code --kernels}). {@code auto} runs
 * ternary tensors (and exactly ternary float matrices) on the integer ternary kernels in their stored
 * layout, llama.cpp's Q4_0, Q8_0, Q4_K, Q5_K and Q6_K on integer block dot products as llama.cpp
 * computes them, everything else dense; {@code t2p} does the same but repacks ternary tensors to T2P
 * row pairs at load where the shape allows; {@code lanes} does the same but copies a .jqw model's weightlet
 * tensors at their first weight-only decode into {@link WeightletLanes} for the AVX-512 kernel (the copy takes
 * the stored pages' place in memory); {@code float} multiplies every tensor in float32, quantized ones decoded row by row
 * as they are used (the comparison baseline: activations are then not quantized).
 */
public enum KernelChoice {
    AUTO, T2P, LANES, FLOAT;

    /** The factory the model loader asks for each linear layer. */
    public LinearWeightsFactory factory(Compute compute) {
        return switch (this) {
            case AUTO, LANES -> new TernaryWeightsFactory(compute, TernaryWeightsFactory.Layout.STOCK);
            case T2P -> new TernaryWeightsFactory(compute, TernaryWeightsFactory.Layout.T2P);
            case FLOAT -> LinearWeightsFactory.inPlace(compute);
        };
    }
}
