package jquant.runtime;

import java.lang.foreign.MemorySegment;
import jquant.formats.CheckpointException;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwModelMetadata;
import jquant.formats.jqw.JqwTensor;
import jquant.formats.weightlet.PackedTensor;
import jquant.formats.weightlet.VectorWeightletUnpacker;
import jquant.formats.jqw.TensorEncoding;

import java.util.ArrayList;
import java.util.List;

/**
 * Builds a {@link LlamaModel} from a jquant packed model file, in one of two arithmetics for its
 * weightlet tensors (float32 and float16 tensors, e.g. a kept embedding or classifier, always run dense,
 * and a classifier kept as 8-bit weightlets always runs weight-only):
 * <ul>
 * <li>{@link Mode#WEIGHT_ONLY}: int8 codes × float32 activations, per-channel scale ({@link WeightletWeights});
 * <li>{@link Mode#NPU}: W{B}A8 as the NPU runs it: activations quantized to int8 with the file's static
 * per-tensor scales of the smoothed inputs, int8 × int8 → int32, per-channel dequantization with the
 * smoothing output factor folded into the channel scales ({@link NpuInt8Weights}). A file packed
 * without calibration stats has no static scales and is refused.
 * </ul>
 * Every tensor is used where it lies in the mapped file: weightlet channels are unpacked on the
 * matmul path, a weightlet embedding one row per looked-up token, float32 and float16 tensors read in place
 * (with {@code lanes}, weight-only decode reads a copy instead).
 */
public final class PackedModelLoader {

    /** The arithmetic of the weightlet tensors. */
    public enum Mode {
        /** Unpacked int8 × per-channel scale → float32 matmul. */
        WEIGHT_ONLY,
        /** Static int8 activations, int8 × int8 → int32, per-channel dequantization (W{B}A8). */
        NPU
    }

    private PackedModelLoader() {}

    public static LlamaModel load(JqwFile file, Compute compute, Mode mode) throws CheckpointException {
        return load(file, compute, mode, false);
    }

    /**
     * As {@link #load(JqwFile, Compute, Mode)}; with {@code lanes}, weight-only weightlet tensors copy themselves
     * into {@link WeightletLanes} at their first decode where the native kernels have them ({@link KernelChoice#weightletLanes}).
     */
    public static LlamaModel load(JqwFile file, Compute compute, Mode mode, boolean lanes) throws CheckpointException {
        ModelConfig c = JqwModelMetadata.config(file);
        try {
            List<LlamaModel.Layer> layers = new ArrayList<>(c.layers());
            for (int l = 0; l < c.layers(); l++) {
                layers.add(new LlamaModel.Layer(
                        vector(file, TensorKind.ATTN_NORM, l),
                        linear(file, TensorKind.WQ, l, compute, mode, lanes),
                        linear(file, TensorKind.WK, l, compute, mode, lanes),
                        linear(file, TensorKind.WV, l, compute, mode, lanes),
                        linear(file, TensorKind.WO, l, compute, mode, lanes),
                        vector(file, TensorKind.FFN_NORM, l),
                        linear(file, TensorKind.W_GATE, l, compute, mode, lanes),
                        linear(file, TensorKind.W_UP, l, compute, mode, lanes),
                        linear(file, TensorKind.W_DOWN, l, compute, mode, lanes),
                        bias(file, c, TensorKind.Q_BIAS, l),
                        bias(file, c, TensorKind.K_BIAS, l),
                        bias(file, c, TensorKind.V_BIAS, l)));
            }
            JqwTensor embedding = tensor(file, TensorKind.EMBEDDING.canonicalName(0));
            TokenEmbedding table = embedding(file, embedding);
            TensorKind headKind = c.tiedEmbeddings() ? TensorKind.EMBEDDING : TensorKind.HEAD;
            LinearWeights head = linear(file, headKind, 0, compute, mode, lanes);
            return new LlamaModel(c, JqwModelMetadata.rope(file), table, layers, vector(file, TensorKind.FINAL_NORM, 0), head, compute);
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file.path(), e.getMessage());
        }
    }

    private static JqwTensor tensor(JqwFile file, String name) throws CheckpointException {
        JqwTensor t = file.tensors().get(name);
        if (t == null) throw new CheckpointException(file.path(), "no tensor " + name);
        return t;
    }

    private static float[] vector(JqwFile file, TensorKind kind, int layer) throws CheckpointException {
        return TensorEncoding.readF32(file, tensor(file, kind.canonicalName(layer)));
    }

    /** A q/k/v bias as float32, or null when the architecture has none. */
    private static float[] bias(JqwFile file, ModelConfig c, TensorKind kind, int layer) throws CheckpointException {
        return kind.presentIn(c) ? vector(file, kind, layer) : null;
    }

    private static TokenEmbedding embedding(JqwFile file, JqwTensor t) {
        int[] shape = TensorEncoding.matrixShape(t);
        DType dense = denseType(t);
        if (dense != null) return TokenEmbedding.of(new Tensor(t.name(), new long[] {shape[0], shape[1]}, dense, densePart(file, t, dense)));
        TensorEncoding.Weightlet w = TensorEncoding.readWeightlet(file, t);
        PackedTensor p = w.packed();
        float[] scales = w.scales();
        return (token, dst, off) -> VectorWeightletUnpacker.INSTANCE.unpackChannel(p.data(), p.channelOffset(token),
                p.bits(token), p.length(), scales[token], dst, off);
    }

    /** F32 or F16 for the dense encodings, null otherwise. */
    private static DType denseType(JqwTensor t) {
        return switch (t.encoding()) {
            case TensorEncoding.F32 -> DType.F32;
            case TensorEncoding.F16 -> DType.F16;
            default -> null;
        };
    }

    /** A dense tensor's data part, checked against its shape. */
    private static MemorySegment densePart(JqwFile file, JqwTensor t, DType type) {
        long n = 1;
        for (long d : t.shape()) n = Math.multiplyExact(n, d);
        MemorySegment data = file.part(t, TensorEncoding.DATA);
        if (data.byteSize() != type.byteSize(n, 1)) {
            throw new IllegalArgumentException(t.name() + ": data part has " + data.byteSize() + " bytes for " + n + " " + type + " values");
        }
        return data;
    }

    private static LinearWeights linear(JqwFile file, TensorKind kind, int layer, Compute compute, Mode mode, boolean lanes)
            throws CheckpointException {
        JqwTensor t = tensor(file, kind.canonicalName(layer));
        switch (t.encoding()) {
            case TensorEncoding.F32, TensorEncoding.F16 -> {
                int[] shape = TensorEncoding.matrixShape(t);
                DType type = denseType(t);
                return new DenseWeights(t.name(), densePart(file, t, type), type, shape[0], shape[1], compute);
            }
            case TensorEncoding.WEIGHTLET -> {
                TensorEncoding.Weightlet w = TensorEncoding.readWeightlet(file, t);
                // a kept classifier stored as 8-bit weightlets runs weight-only in either mode: it has no static scales
                boolean kept = t.attrs().containsKey(TensorEncoding.KEPT);
                if (mode == Mode.WEIGHT_ONLY || kept) return NativeWeightletWeights.of(new WeightletWeights(t.name(), w.packed(), w.scales(), compute), lanes);
                if (!(t.attrs().get(TensorEncoding.INPUT_SCALE) instanceof Number scale)) {
                    throw new CheckpointException(file.path(), t.name() + " has no static activation scale, which the NPU (W{B}A8) mode needs: "
                            + "pack with calibration stats (jquant pack --stats), or run --mode weight-only");
                }
                return NativeWeightletWeights.of(new NpuInt8Weights(t.name(), w.packed(), w.scales(), scale.floatValue(), compute));
            }
            default -> throw new CheckpointException(file.path(), t.name() + " has unknown encoding '" + t.encoding() + "'");
        }
    }
}
