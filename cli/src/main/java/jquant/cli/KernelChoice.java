package jquant.cli;

import jquant.runtime.Compute;
import jquant.runtime.LinearWeightsFactory;
import jquant.runtime.TernaryWeightsFactory;

/**
 * {@code --kernels}: how {@code run} and {@code eval} multiply by the weights. {@code auto} runs
 * ternary tensors (and exactly ternary float matrices) on the integer ternary kernels in their stored
 * layout, everything else dense; {@code t2p} does the same but repacks ternary tensors to T2P row pairs
 * at load where the shape allows; {@code float} multiplies every tensor in float32, ternary ones decoded
 * row by row as they are used (the comparison baseline: activations are then not quantized).
 */
enum KernelChoice {
    AUTO, T2P, FLOAT;

    /** The factory the model loader asks for each linear layer. */
    LinearWeightsFactory factory(Compute compute) {
        return switch (this) {
            case AUTO -> new TernaryWeightsFactory(compute, TernaryWeightsFactory.Layout.STOCK);
            case T2P -> new TernaryWeightsFactory(compute, TernaryWeightsFactory.Layout.T2P);
            case FLOAT -> LinearWeightsFactory.inPlace(compute);
        };
    }

    /** Case-insensitive {@code --kernels} values; anything else is a usage error. */
    static final class Converter implements picocli.CommandLine.ITypeConverter<KernelChoice> {
        @Override
        public KernelChoice convert(String name) {
            for (KernelChoice k : values()) {
                if (k.name().equalsIgnoreCase(name)) return k;
            }
            throw new picocli.CommandLine.TypeConversionException("'" + name + "' is not one of auto, t2p, float");
        }
    }
}
