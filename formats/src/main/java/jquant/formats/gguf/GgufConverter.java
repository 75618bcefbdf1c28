package jquant.formats.gguf;

import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.DType;
import jquant.formats.FloatEncoder;
import jquant.formats.Tensor;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SequencedMap;

/**
 * {@code jquant convert}: any checkpoint to a llama.cpp GGUF file in one float type, as llama.cpp's
 * convert_hf_to_gguf.py writes it: {@link GgufSource}'s names, hyper-parameters, tokenizer and row order;
 * one-dimensional tensors and norms in F32 and every matrix in the chosen type (a Q8_0 matrix whose rows
 * are not whole 32-weight blocks falls back to F16, as there); {@code general.file_type} and
 * {@code general.quantization_version} set.
 *
 * <p>Streamed: each tensor is read, converted and written a few rows at a time when the writer reaches it,
 * so memory stays a small buffer whatever the model's size; a tensor whose type does not change is copied
 * byte for byte. The output appears only when complete ({@link GgufWriter}).
 */
public final class GgufConverter {
    /** Floats converted per write: bounds the buffers whatever the tensor. */
    private static final int CHUNK_VALUES = 1 << 20;

    private GgufConverter() {}

    /** The types {@code --type} names. */
    public enum Target {
        f32(DType.F32), f16(DType.F16), bf16(DType.BF16), q8_0(DType.Q8_0);

        public final DType dtype;

        Target(DType dtype) { this.dtype = dtype; }

        /** The target named {@code name}, or an error listing the names. */
        public static Target parse(String name) {
            try {
                return valueOf(name);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("unknown type '" + name + "' (" + Arrays.toString(values()) + ")");
            }
        }
    }

    /** Told of each tensor as it is written. */
    @FunctionalInterface
    public interface Listener {
        void written(String name, long[] shape, DType from, DType to);
    }

    /** Writes {@code source} to {@code out} with its matrices in {@code target}; returns the tensors written. */
    public static List<GgufWriter.PendingTensor> convert(Checkpoint source, Target target, Path out, Listener listener)
            throws IOException, CheckpointException {
        SequencedMap<String, GgufValue> kv = GgufSource.metadata(source);
        GgufFileType.put(kv, target.dtype);
        List<GgufWriter.PendingTensor> pending = new ArrayList<>();
        for (GgufTensor t : GgufSource.tensors(source)) {
            DType type = typeOf(t, target.dtype);
            if (!t.source().dtype().isDecodable()) {
                throw new CheckpointException(source.source(), "tensor " + t.name() + " is stored as " + t.source().dtype() + ", which jquant cannot decode");
            }
            pending.add(new GgufWriter.PendingTensor(t.name(), t.shape(), type, channel -> {
                write(t, type, channel);
                listener.written(t.name(), t.shape(), t.source().dtype(), type);
            }));
        }
        GgufWriter.writePending(out, kv, pending);
        return pending;
    }

    /** convert_hf_to_gguf.py's rule: F32 for 1-D tensors and norms, the target for matrices (F16 where Q8_0 blocks do not fit). */
    static DType typeOf(GgufTensor t, DType target) {
        long[] shape = t.shape();
        if (shape.length <= 1 || t.name().endsWith("_norm.weight")) return DType.F32;
        if (target == DType.Q8_0 && shape[shape.length - 1] % DType.Q8_0.blockSize() != 0) return DType.F16;
        return target;
    }

    private static void write(GgufTensor t, DType type, java.nio.channels.WritableByteChannel out) throws IOException {
        Tensor s = t.source();
        if (s.dtype() == type) {
            Tensor stored = t.stored();
            GgufWriter.PendingTensor.of(stored).bytes().writeTo(out);
            return;
        }
        int rows = s.rows(), cols = s.cols();
        int chunkRows = Math.max(1, CHUNK_VALUES / cols);
        FloatEncoder encoder = FloatEncoder.of(type);
        float[] values = new float[Math.min(rows, chunkRows) * cols];
        ByteBuffer bytes = ByteBuffer.allocate(Math.toIntExact(type.byteSize(values.length, cols))).order(ByteOrder.LITTLE_ENDIAN);
        for (int r0 = 0; r0 < rows; r0 += chunkRows) {
            int n = Math.min(chunkRows, rows - r0);
            for (int i = 0; i < n; i++) System.arraycopy(t.row(r0 + i), 0, values, i * cols, cols);
            bytes.clear();
            encoder.encode(values, 0, n * cols, bytes);
            bytes.flip();
            GgufWriter.writeFully(out, bytes);
        }
    }
}
