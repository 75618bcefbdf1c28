package jquant.runtime;

import java.lang.foreign.MemorySegment;
import java.util.Optional;
import jquant.formats.Tensor;
import jquant.runtime.nativelib.KernelSource;
import jquant.runtime.nativelib.NativeKernels;
import jquant.runtime.nativelib.NativeKernels.BlockType;

/**
 * A matrix of one of llama.cpp's block types the C library decodes in place (Q8_0, Q4_0, Q4_K, Q5_K,
 * Q6_K) whose decode runs there: each block of four rows decoded to float32 in L1 by the same
 * operations as jquant's reference decoder, then the runtime's float summation order on the
 * instruction set with the Java kernels' lane count — {@link DecodedRowsWeights}' outputs bit for bit,
 * without its per-row decode into a buffer. A batch of {@value RowMajorWeights#PREFILL_TOKENS} tokens
 * or more (prefill, where the decode is shared by the batch) takes the Java layer.
 */
final class NativeDecodedWeights implements LinearWeights {

    private final DecodedRowsWeights twin;
    private final NativeKernels kernels;
    private final BlockType type;
    private final MemorySegment data;
    private final long rowBytes;
    private final int out, in;
    private final Compute compute;

    NativeDecodedWeights(Tensor tensor, DecodedRowsWeights twin, BlockType type, NativeKernels kernels, Compute compute) {
        this.twin = twin;
        this.kernels = kernels;
        this.type = type;
        this.data = tensor.data();
        this.out = tensor.rows();
        this.in = tensor.cols();
        this.rowBytes = tensor.dtype().byteSize(in, in);
        this.compute = compute;
    }

    /** {@code tensor} on the native kernels where the process uses them and they decode its type, else {@link DecodedRowsWeights}. */
    static LinearWeights of(Tensor tensor, Compute compute) {
        DecodedRowsWeights twin = new DecodedRowsWeights(tensor, compute);
        Optional<BlockType> type = blockType(tensor);
        if (type.isEmpty() || tensor.dtype().rowGroup() != 1) return twin;
        return KernelSource.kernelsWithFloatLanes(compute.matmul().lanes())
                .<LinearWeights>map(k -> new NativeDecodedWeights(tensor, twin, type.get(), k, compute)).orElse(twin);
    }

    static Optional<BlockType> blockType(Tensor tensor) {
        for (BlockType t : BlockType.values()) if (t.name().equals(tensor.dtype().name())) return Optional.of(t);
        return Optional.empty();
    }

    @Override public int inFeatures() { return in; }
    @Override public int outFeatures() { return out; }
    @Override public long storedBytes() { return twin.storedBytes(); }

    @Override
    public void matmul(float[] x, int n, float[] y) {
        if (n >= RowMajorWeights.PREFILL_TOKENS) {
            twin.matmul(x, n, y);
            return;
        }
        MemorySegment xs = MemorySegment.ofArray(x), ys = MemorySegment.ofArray(y);
        for (int t = 0; t < n; t++) {
            MemorySegment xt = xs.asSlice(4L * t * in, 4L * in), yt = ys.asSlice(4L * t * out, 4L * out);
            compute.pool().forRange((out + 3) / 4, 4L * in, (worker, start, end) -> {
                int r0 = 4 * start, r1 = Math.min(out, 4 * end);
                kernels.rows(type, data.asSlice(r0 * rowBytes, (r1 - r0) * rowBytes), rowBytes, r1 - r0, in, xt, yt.asSlice(4L * r0));
            });
        }
    }
}
