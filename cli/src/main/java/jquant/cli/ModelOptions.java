package jquant.cli;

import jquant.formats.CheckpointException;
import jquant.runtime.Compute;
import jquant.runtime.KernelChoice;
import jquant.runtime.LayerLoader;
import jquant.runtime.LoadedModel;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.nio.file.Path;

/** How {@code run} and {@code eval} open and execute a model: the options both share. */
final class ModelOptions {

    @Mixin
    TokenizerOption tokenizer = new TokenizerOption();

    @Option(names = "--mode", defaultValue = "weight-only", converter = ModeOption.Converter.class, paramLabel = "weight-only|npu",
            description = "Arithmetic of a .jqw model's packed tensors: weight-only (int8 × scale, float matmul) or npu "
                    + "(W{B}A8: static int8 activations, int32 accumulation). Default: ${DEFAULT-VALUE}.")
    ModeOption mode;

    @Option(names = "--kernels", defaultValue = "auto", converter = ModelOptions.KernelsConverter.class, paramLabel = "auto|t2p|float",
            description = "auto: ternary tensors on the integer ternary kernels as stored; t2p: repacked to T2P row pairs at load; "
                    + "float: every weight decoded to float32 (default: ${DEFAULT-VALUE}).")
    KernelChoice kernels;

    @Option(names = "--load", defaultValue = "pipelined", converter = LoadingConverter.class, paramLabel = "pipelined|eager|layerwise",
            description = "pipelined: start computing at once while a background thread pages in (and for .jqw verifies) the layers "
                    + "in forward-pass order; eager: page in and verify everything first; layerwise: each layer when the forward pass "
                    + "first needs it (default: ${DEFAULT-VALUE}).")
    LayerLoader.Policy loading;

    LoadedModel open(Path model) throws CheckpointException {
        return LoadedModel.open(model, tokenizer.path, mode.mode, kernels, Compute.vector(), loading);
    }

    /** Case-insensitive {@code --load} values; anything else is a usage error. */
    static final class LoadingConverter implements CommandLine.ITypeConverter<LayerLoader.Policy> {
        @Override
        public LayerLoader.Policy convert(String name) {
            for (LayerLoader.Policy p : LayerLoader.Policy.values()) if (p.name().equalsIgnoreCase(name)) return p;
            throw new CommandLine.TypeConversionException("'" + name + "' is not one of pipelined, eager, layerwise");
        }
    }

    /** Case-insensitive {@code --kernels} values; anything else is a usage error. */
    static final class KernelsConverter implements CommandLine.ITypeConverter<KernelChoice> {
        @Override
        public KernelChoice convert(String name) {
            for (KernelChoice k : KernelChoice.values()) {
                if (k.name().equalsIgnoreCase(name)) return k;
            }
            throw new CommandLine.TypeConversionException("'" + name + "' is not one of auto, t2p, float");
        }
    }
}
