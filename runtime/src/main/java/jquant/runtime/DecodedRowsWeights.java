package jquant.runtime;

import java.lang.foreign.MemorySegment;
import jquant.formats.DType;
import jquant.formats.Dequantizer;
import jquant.formats.Tensor;
import jquant.runtime.kernels.MatmulKernels;

/**
 * A matrix of any block-quantized type jquant decodes (Q4_0, Q8_0, the K-quants, the ternary types on
 * the float path …), multiplied where it lies: the rows a kernel needs are decoded to float32 into a
 * per-thread buffer just before use, by the type's reference {@link Dequantizer}. Slower than a fused
 * kernel, but no decoded copy of the matrix ever exists.
 */
public final class DecodedRowsWeights extends RowMajorWeights {
    private final Tensor tensor;
    private final Dequantizer dequantizer;
    private final int group;
    private final long groupBytes;

    public DecodedRowsWeights(Tensor tensor, Compute compute) {
        super(tensor.name(), tensor.rows(), tensor.cols(), compute);
        KernelWarmup.startFloatRows();
        DType type = tensor.dtype();
        if (!type.isDecodable()) {
            throw new IllegalArgumentException(tensor.name() + " is stored as ggml type " + type + " (id " + type.ggmlId()
                    + "), which jquant can list but not decode");
        }
        this.tensor = tensor;
        this.dequantizer = Dequantizer.of(type, in);
        this.group = type.rowGroup();
        this.groupBytes = type.byteSize((long) group * in, in);
    }

    @Override
    void dotRows(MatmulKernels k, int r0, int r1, int r2, int r3, float[] x, int xOff, int k0, int k1, float[] acc, Scratch s) {
        float[] rows = s.rows(4 * in);
        decodeRow(r0, k0, k1, rows, k0);
        decodeRow(r1, k0, k1, rows, in + k0);
        decodeRow(r2, k0, k1, rows, 2 * in + k0);
        decodeRow(r3, k0, k1, rows, 3 * in + k0);
        k.rowsF32(rows, 0, in, 2 * in, 3 * in, x, xOff, k0, k1, acc);
    }

    @Override
    void decodeRows(int r0, int count, int k0, int k1, float[] dst, Scratch s) {
        for (int i = 0; i < count; i++) decodeRow(r0 + i, k0, k1, dst, i * (k1 - k0));
    }

    /** Row r, columns [k0, k1) (whole blocks, or up to the row's end), into dst[at..]. */
    private void decodeRow(int r, int k0, int k1, float[] dst, int at) {
        MemorySegment data = tensor.data();
        if (group == 1) {
            long from = tensor.dtype().byteSize(k0, in), to = tensor.dtype().byteSize(k1, in);
            dequantizer.dequantize(data.asSlice(r * groupBytes + from, to - from), dst, at, k1 - k0);
        } else {
            float[] rows = new float[group * in];
            dequantizer.dequantize(data.asSlice(r / group * groupBytes, groupBytes), rows, 0, rows.length);
            System.arraycopy(rows, r % group * in + k0, dst, at, k1 - k0);
        }
    }

    @Override
    public long storedBytes() {
        return tensor.byteSize();
    }

    @Override
    float output(int r, float dot) {
        return dot;
    }
}
