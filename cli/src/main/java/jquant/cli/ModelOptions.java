package jquant.cli;

import jquant.formats.CheckpointException;
import jquant.runtime.Compute;
import jquant.runtime.KernelChoice;
import jquant.runtime.LayerLoader;
import jquant.core.Memory;
import jquant.runtime.LoadedModel;
import jquant.runtime.PackedModelLoader;
import jquant.runtime.nativelib.NativeKernels;
import picocli.CommandLine.Mixin;
import jquant.runtime.nativelib.KernelSource;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.nio.file.Path;
import java.util.Locale;

/** How {@code run} and {@code eval} open and execute a model: the options both share. */
final class ModelOptions {

    @Mixin
    TokenizerOption tokenizer = new TokenizerOption();

    @Option(names = "--mode", defaultValue = "weight-only", converter = ModeOption.Converter.class, paramLabel = "weight-only|npu",
            description = "Arithmetic of a .jqw model's packed tensors: weight-only (int8 × scale, float matmul) or npu "
                    + "(W{B}A8: static int8 activations, int32 accumulation). Default: ${DEFAULT-VALUE}.")
    ModeOption mode;

    @Option(names = "--kernels", defaultValue = "auto", converter = ModelOptions.KernelsConverter.class, paramLabel = "auto|java|native|stored|t2p|float[,…]",
            description = "Which kernels multiply, a layout and an implementation, comma-separated. Layout: the fastest per format (the "
                    + "default): ternary tensors on the integer ternary kernels as stored, llama.cpp's Q4_0, Q8_0, Q4_K, Q5_K, Q6_K on "
                    + "integer block kernels as llama.cpp computes them, a .jqw model's weightlet tensors as stored; with the AVX-512 "
                    + "kernels, a .jqw's weightlet tensors for weight-only decode and T2P tensors read a copy made at each tensor's first "
                    + "product (the copy takes the stored pages' place in memory); stored: the same with no copy; t2p: as the default, ternary tensors repacked to T2P row "
                    + "pairs at load; float: every weight decoded to float32. Implementation: the C "
                    + "library's kernels where built and this CPU runs them, else Java (the default), "
                    + "java: Java only, native: the C library's or an error. auto: both defaults (default: ${DEFAULT-VALUE}).")
    KernelChoice kernels;

    @Option(names = "--load", defaultValue = "pipelined", converter = LoadingConverter.class, paramLabel = "pipelined|eager|layerwise",
            description = "pipelined: start computing at once while a background thread pages in (and for .jqw verifies) the layers "
                    + "in forward-pass order; eager: page in and verify everything first; layerwise: each layer when the forward pass "
                    + "first needs it (default: ${DEFAULT-VALUE}).")
    LayerLoader.Policy loading;

    LoadedModel open(Path model) throws CheckpointException {
        LoadedModel loaded = LoadedModel.open(model, tokenizer.path, mode.mode, kernels, Compute.vector(), loading);
        noteWithoutCopies(loaded);
        return loaded;
    }

    /** Says on stderr when {@code loaded} runs without the copies these options ask for: its file was too large ({@link LoadedModel#withoutCopies}). */
    void noteWithoutCopies(LoadedModel loaded) {
        if (!loaded.withoutCopies()) return;
        Path model = loaded.source();
        boolean packed = LoadedModel.isPacked(model);
        if (packed && mode.mode == PackedModelLoader.Mode.WEIGHT_ONLY && KernelSource.kernels().filter(NativeKernels::hasWeightletLanes).isPresent()) {
            System.err.printf("jquant: %s: larger than half the memory available (%s): weight-only decode reads it as stored, without "
                    + "the weightlet lanes' copy%n", model, Memory.format(Memory.systemAvailable()));
        } else if (!packed && KernelSource.kernels().filter(NativeKernels::hasT2pR16).isPresent()) {
            System.err.printf("jquant: %s: larger than half the memory available (%s): its tensors run as stored, without the copies "
                    + "some native kernels read faster (T2P's sixteen-row tiles)%n", model, Memory.format(Memory.systemAvailable()));
        }
    }

    /** Case-insensitive {@code --load} values; anything else is a usage error. */
    static final class LoadingConverter implements CommandLine.ITypeConverter<LayerLoader.Policy> {
        @Override
        public LayerLoader.Policy convert(String name) {
            for (LayerLoader.Policy p : LayerLoader.Policy.values()) if (p.name().equalsIgnoreCase(name)) return p;
            throw new CommandLine.TypeConversionException("'" + name + "' is not one of pipelined, eager, layerwise");
        }
    }

    /** A {@code --kernels} value: the layout ({@link KernelChoice}) and the implementation ({@link KernelSource}). */
    record Kernels(KernelChoice layout, KernelSource source) {

        /**
         * Parses a comma-separated value, case-insensitively: at most one of stored, t2p and float, at most one of java
         * and native, auto anywhere; anything else is a usage error.
         */
        static Kernels parse(String value) {
            KernelChoice layout = null;
            KernelSource source = null;
            for (String part : value.split(",", -1)) {
                String p = part.trim().toLowerCase(Locale.ROOT);
                switch (p) {
                    case "auto" -> { }
                    case "stored", "t2p", "float" -> {
                        if (layout != null) throw new CommandLine.TypeConversionException("'" + value + "' names two layouts");
                        layout = KernelChoice.valueOf(p.toUpperCase(Locale.ROOT));
                    }
                    case "java", "native" -> {
                        if (source != null) throw new CommandLine.TypeConversionException("'" + value + "' names two implementations");
                        source = KernelSource.valueOf(p.toUpperCase(Locale.ROOT));
                    }
                    default -> throw new CommandLine.TypeConversionException("'" + value + "' is not a list of auto, java, native, stored, t2p, float");
                }
            }
            return new Kernels(layout == null ? KernelChoice.AUTO : layout, source == null ? KernelSource.AUTO : source);
        }
    }

    /** The layout part of {@code --kernels} (the implementation is applied process-wide before the command runs: {@code Main}). */
    static final class KernelsConverter implements CommandLine.ITypeConverter<KernelChoice> {
        @Override
        public KernelChoice convert(String value) {
            return Kernels.parse(value).layout();
        }
    }
}
