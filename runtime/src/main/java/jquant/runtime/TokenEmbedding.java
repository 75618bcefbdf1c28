package jquant.runtime;

import java.lang.foreign.MemorySegment;
import jquant.formats.DType;
import jquant.formats.Dequantizer;
import jquant.formats.Tensor;

/**
 * The token embedding table as the model reads it: one row per token, decoded when looked up, so a
 * table stored in the file (of any type) is never copied whole.
 */
@FunctionalInterface
public interface TokenEmbedding {

    /** Writes token {@code token}'s {@code dim} floats to {@code dst[off..]}. */
    void lookup(int token, float[] dst, int off);

    /** A row-major {@code [vocab][dim]} float32 table in memory. */
    static TokenEmbedding of(float[] table, int dim) {
        return (token, dst, off) -> System.arraycopy(table, token * dim, dst, off, dim);
    }

    /** Rows of a stored tensor, decoded where they lie. */
    static TokenEmbedding of(Tensor tensor) {
        DType type = tensor.dtype();
        int dim = tensor.cols();
        if (type.rowGroup() != 1) return (token, dst, off) -> System.arraycopy(tensor.row(token), 0, dst, off, dim);
        Dequantizer dequantizer = Dequantizer.of(type, dim);
        long rowBytes = type.byteSize(dim, dim);
        MemorySegment data = tensor.data();
        return (token, dst, off) -> dequantizer.dequantize(data.asSlice(token * rowBytes, rowBytes), dst, off, dim);
    }
}
