package jquant.runtime;

/**
 * How a checkpoint's linear layers multiply (the CLI's {@code --kernels}), the fastest layout per format by default.
 * {@code auto} runs ternary tensors (and exactly ternary float matrices) on the integer ternary kernels in their stored
 * layout, llama.cpp's Q4_0, Q8_0, Q4_K, Q5_K and Q6_K on integer block dot products as llama.cpp computes them, a .jqw
 * model's weightlet tensors as stored, and everything else dense; where the native library has the AVX-512 kernels and the
 * file fits in half the memory the system has available, two forms run on a copy made at each tensor's first product, which
 * takes the stored pages' place in memory (llama.cpp likewise repacks Q4_0 at load): a .jqw's weightlet tensors for
 * weight-only decode ({@link WeightletLanes}), and T2P tensors ({@code NativeTernaryMatrix}'s sixteen-row tiles).
 * {@code stored} does the same with no copy, every tensor where it lies in the file; {@code t2p} does as {@code auto} but
 * repacks ternary tensors to T2P row pairs at load where the shape allows; {@code float} multiplies every tensor in float32,
 * quantized ones decoded row by row as they are used (the comparison baseline: activations are then not quantized).
 */
public enum KernelChoice {
    AUTO, STORED, T2P, FLOAT;

    /** The factory the model loader asks for each linear layer; {@code copies}: whether tensors may run on copies ({@link #copies}). */
    public LinearWeightsFactory factory(Compute compute, boolean copies) {
        return switch (this) {
            case AUTO, STORED -> new TernaryWeightsFactory(compute, TernaryWeightsFactory.Layout.STOCK, copies && copies());
            case T2P -> new TernaryWeightsFactory(compute, TernaryWeightsFactory.Layout.T2P, copies && copies());
            case FLOAT -> LinearWeightsFactory.inPlace(compute);
        };
    }

    /**
     * Whether tensors whose native kernels read a copy faster make one: a .jqw model's weightlet tensors into
     * {@link WeightletLanes} for weight-only decode, T2P tensors into sixteen-row tiles.
     */
    public boolean copies() {
        return this == AUTO || this == T2P;
    }
}
