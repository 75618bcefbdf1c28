package jquant.formats.gguf;

import java.lang.foreign.MemorySegment;
import jquant.formats.Tensor;

/**
 * One tensor as a GGUF file gets it from a source checkpoint: its llama.cpp name, and the source's rows in
 * the order the file stores them. {@code rowOrder[r]} is the source row that becomes row {@code r}, or
 * null when the rows keep their order (everything but Hugging Face q/k rows going to a llama file).
 */
public record GgufTensor(String name, Tensor source, int[] rowOrder) {

    public GgufTensor {
        if (rowOrder != null && rowOrder.length != source.rows()) {
            throw new IllegalArgumentException(name + ": row order of " + rowOrder.length + " for " + source.rows() + " rows");
        }
    }

    public long[] shape() { return source.shape(); }

    /** Row {@code r} of the file's tensor, decoded to float32. */
    public float[] row(int r) {
        return source.row(rowOrder == null ? r : rowOrder[r]);
    }

    /** The whole tensor in the file's row order, decoded to float32. */
    public float[] toFloats() {
        if (rowOrder == null) return source.toFloats();
        int cols = source.cols();
        float[] out = new float[Math.multiplyExact(source.rows(), cols)];
        for (int r = 0; r < rowOrder.length; r++) System.arraycopy(source.row(rowOrder[r]), 0, out, r * cols, cols);
        return out;
    }

    /**
     * The file's tensor in the source's own type: the source's bytes under the GGUF name, or, when rows
     * move, a copy with each row's bytes moved (exact for every row-major type).
     */
    public Tensor stored() {
        if (rowOrder == null) return new Tensor(name, source.shape(), source.dtype(), source.data());
        if (source.dtype().rowGroup() != 1) throw new IllegalStateException(name + ": rows of " + source.dtype() + " cannot move one by one");
        long rowBytes = source.byteSize() / source.rows();
        MemorySegment out = MemorySegment.ofArray(new byte[Math.toIntExact(source.byteSize())]);
        for (int r = 0; r < rowOrder.length; r++) MemorySegment.copy(source.data(), rowOrder[r] * rowBytes, out, r * rowBytes, rowBytes);
        return new Tensor(name, source.shape(), source.dtype(), out);
    }
}
