package jquant.runtime;

import jquant.formats.CheckpointException;
import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwModelMetadata;
import jquant.formats.jqw.JqwTensor;
import jquant.pack.model.TensorEncoding;
import jquant.runtime.kernels.Int8Dot;
import jquant.runtime.kernels.VectorInt8Dot;

import java.util.ArrayList;
import java.util.List;

/**
 * Builds a {@link LlamaModel} from a jquant packed model file, in one of two arithmetics for its
 * weightlet tensors (float32 tensors, e.g. a kept embedding or classifier, always run dense):
 * <ul>
 * <li>{@link Mode#WEIGHT_ONLY}: int8 codes × per-channel scale, float32 matmul ({@link WeightletWeights});
 * <li>{@link Mode#NPU}: W{B}A8 as the NPU runs it: activations quantized to int8 with the file's static
 * per-tensor scales of the smoothed inputs, int8 × int8 → int32, per-channel dequantization with the
 * smoothing output factor folded into the channel scales ({@link NpuInt8Weights}). A file packed
 * without calibration stats has no static scales and is refused.
 * </ul>
 * The embedding is a table lookup, so a weightlet-packed embedding is dequantized to float32 rows.
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
        return load(file, compute, mode, new VectorInt8Dot());
    }

    /** As {@link #load(JqwFile, Compute, Mode)}, with the int8 dot product given (the scalar oracle in tests). */
    public static LlamaModel load(JqwFile file, Compute compute, Mode mode, Int8Dot dot) throws CheckpointException {
        ModelConfig c = JqwModelMetadata.config(file);
        try {
            List<LlamaModel.Layer> layers = new ArrayList<>(c.layers());
            for (int l = 0; l < c.layers(); l++) {
                layers.add(new LlamaModel.Layer(
                        vector(file, TensorKind.ATTN_NORM, l),
                        linear(file, TensorKind.WQ, l, compute, mode, dot),
                        linear(file, TensorKind.WK, l, compute, mode, dot),
                        linear(file, TensorKind.WV, l, compute, mode, dot),
                        linear(file, TensorKind.WO, l, compute, mode, dot),
                        vector(file, TensorKind.FFN_NORM, l),
                        linear(file, TensorKind.W_GATE, l, compute, mode, dot),
                        linear(file, TensorKind.W_UP, l, compute, mode, dot),
                        linear(file, TensorKind.W_DOWN, l, compute, mode, dot)));
            }
            JqwTensor embedding = tensor(file, TensorKind.EMBEDDING.canonicalName(0));
            float[] table = embedding.encoding().equals(TensorEncoding.WEIGHTLET)
                    ? dequantize(file, embedding) : TensorEncoding.readF32(file, embedding);
            TensorKind headKind = c.tiedEmbeddings() ? TensorKind.EMBEDDING : TensorKind.HEAD;
            LinearWeights head = linear(file, headKind, 0, compute, mode, dot);
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

    private static float[] dequantize(JqwFile file, JqwTensor t) {
        TensorEncoding.Weightlet w = TensorEncoding.readWeightlet(file, t);
        return WeightletWeights.dequantize(w.packed(), w.scales());
    }

    private static LinearWeights linear(JqwFile file, TensorKind kind, int layer, Compute compute, Mode mode, Int8Dot dot)
            throws CheckpointException {
        JqwTensor t = tensor(file, kind.canonicalName(layer));
        switch (t.encoding()) {
            case TensorEncoding.F32 -> {
                int[] shape = TensorEncoding.matrixShape(t);
                return new DenseF32Weights(TensorEncoding.readF32(file, t), shape[0], shape[1], compute);
            }
            case TensorEncoding.WEIGHTLET -> {
                TensorEncoding.Weightlet w = TensorEncoding.readWeightlet(file, t);
                if (mode == Mode.WEIGHT_ONLY) return new WeightletWeights(w.packed(), w.scales(), compute);
                if (!(t.attrs().get(TensorEncoding.INPUT_SCALE) instanceof Number scale)) {
                    throw new CheckpointException(file.path(), t.name() + " has no static activation scale, which the NPU (W{B}A8) mode needs: "
                            + "pack with calibration stats (jquant pack --stats), or run --mode weight-only");
                }
                byte[] codes = jquant.pack.VectorWeightletUnpacker.INSTANCE.unpackTensor(w.packed());
                return new NpuInt8Weights(codes, w.scales(), w.rows(), w.cols(), scale.floatValue(), compute, dot);
            }
            default -> throw new CheckpointException(file.path(), t.name() + " has unknown encoding '" + t.encoding() + "'");
        }
    }
}
