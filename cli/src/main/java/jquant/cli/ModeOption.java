package jquant.cli;

import jquant.runtime.PackedModelLoader;

/** {@code --mode} for packed files: the arithmetic of their quantized tensors. */
enum ModeOption {
    /** Unpacked int8 × per-channel scale, float32 matmul. */
    weight_only(PackedModelLoader.Mode.WEIGHT_ONLY),
    /** W{B}A8 as the NPU runs it: static int8 activations, int8 × int8 → int32. */
    npu(PackedModelLoader.Mode.NPU);

    final PackedModelLoader.Mode mode;

    ModeOption(PackedModelLoader.Mode mode) {
        this.mode = mode;
    }

    /** Accepts {@code weight-only} as well as {@code weight_only}. */
    static final class Converter implements picocli.CommandLine.ITypeConverter<ModeOption> {
        @Override
        public ModeOption convert(String value) {
            for (ModeOption m : values()) {
                if (m.name().equalsIgnoreCase(value.replace('-', '_'))) return m;
            }
            throw new picocli.CommandLine.TypeConversionException("'" + value + "' is not one of weight-only, npu");
        }
    }
}
