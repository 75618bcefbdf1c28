package jquant.formats;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A named tensor whose bytes live in a (usually memory-mapped) segment; nothing is copied until
 * {@link #toFloats()} is asked for.
 *
 * <p>{@code shape} is row-major, outermost first, as PyTorch writes it: a linear layer's weight is
 * {@code [out, in]}, so {@link #rows()} are output channels and {@link #cols()} input channels. (GGUF
 * lists dimensions innermost first; its reader reverses them.)
 */
public record Tensor(String name, long[] shape, DType dtype, MemorySegment data) {

    static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    public Tensor {
        shape = shape.clone();
        long n = 1;
        for (long d : shape) {
            if (d <= 0) throw new IllegalArgumentException(name + ": non-positive dimension in " + Arrays.toString(shape));
            n = Math.multiplyExact(n, d);
        }
        long expected = dtype.byteSize(n, shape.length == 0 ? 1 : shape[shape.length - 1]);
        if (data.byteSize() != expected) {
            throw new IllegalArgumentException(name + ": " + Arrays.toString(shape) + " " + dtype + " needs "
                    + expected + " bytes, data has " + data.byteSize());
        }
    }

    @Override
    public long[] shape() { return shape.clone(); }

    public long elements() {
        long n = 1;
        for (long d : shape) n *= d;
        return n;
    }

    /** Innermost dimension (input channels of a weight matrix). */
    public int cols() { return Math.toIntExact(shape[shape.length - 1]); }

    /** Product of all dimensions but the innermost (output channels of a weight matrix). */
    public int rows() { return Math.toIntExact(elements() / shape[shape.length - 1]); }

    public long byteSize() { return data.byteSize(); }

    /**
     * All elements as float32, dequantized if need be. Fails for tensors of more than 2^31-1 elements.
     *
     * @throws UnsupportedOperationException if the dtype is not {@link DType#isDecodable() decodable}
     */
    public float[] toFloats() {
        requireDecodable();
        float[] out = new float[Math.toIntExact(elements())];
        Dequantizer.of(dtype, shape.length == 0 ? 1 : cols()).dequantize(data, out, 0, out.length);
        return out;
    }

    /**
     * One row (output channel) as float32. For a type whose blocks span a {@link DType#rowGroup() group}
     * of rows, the whole group is decoded and the row taken from it.
     *
     * @throws UnsupportedOperationException if the dtype is not {@link DType#isDecodable() decodable}
     */
    public float[] row(int r) {
        requireDecodable();
        int cols = cols();
        int group = dtype.rowGroup();
        java.util.Objects.checkIndex(r, rows());
        long groupBytes = dtype.byteSize((long) group * cols, cols);
        float[] decoded = new float[group * cols];
        Dequantizer.of(dtype, cols).dequantize(data.asSlice(r / group * groupBytes, groupBytes), decoded, 0, decoded.length);
        return group == 1 ? decoded : Arrays.copyOfRange(decoded, r % group * cols, (r % group + 1) * cols);
    }

    private void requireDecodable() {
        if (!dtype.isDecodable()) {
            throw new UnsupportedOperationException("tensor " + name + " is stored as ggml type " + dtype + " (id "
                    + dtype.ggmlId() + "), which jquant can list but not decode");
        }
    }

    /**
     * Drops this tensor's pages from the process's resident memory when it is mapped from a file (read
     * again from the page cache or the disk if used later): a stage that streams a model one layer at a
     * time calls it when done with a layer, so its resident set holds one layer, not the whole file.
     */
    public void unload() {
        if (data.isMapped()) data.unload();
    }

    public String shapeString() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < shape.length; i++) {
            if (i > 0) sb.append('×');
            sb.append(shape[i]);
        }
        return sb.toString();
    }
}
