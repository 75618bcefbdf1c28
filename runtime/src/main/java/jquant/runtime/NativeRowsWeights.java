package jquant.runtime;

import java.lang.foreign.MemorySegment;
import java.util.Optional;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.runtime.nativelib.AlignedScratch;
import jquant.runtime.nativelib.KernelSource;
import jquant.runtime.nativelib.NativeKernels;
import jquant.runtime.nativelib.NativeKernels.RowType;

/**
 * A row-major matrix the C library multiplies in place in decode: F16 (each weight converted exactly
 * in registers) or one of llama.cpp's block types (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K: each block of four
 * rows decoded to float32 in L1 by the same operations as jquant's reference decoder), then the
 * runtime's float summation order on the instruction set with the Java kernels' lane count. So the
 * outputs are the Java layer's ({@link DenseWeights}, {@link DecodedRowsWeights}) bit for bit. A batch
 * of {@value RowMajorWeights#PREFILL_TOKENS} tokens or more (prefill) of F16 goes to the library's
 * tiles of four rows by four tokens; of a block type, to the Java layer, which decodes the rows once for
 * the batch. The first product of a matrix is the Java layer's too (of one token, before a first batch):
 * it checks a float16 matrix's weights finite (the conversion in registers would pass an infinity on).
 */
final class NativeRowsWeights implements LinearWeights {

    private final LinearWeights twin;
    /** Whether the Java layer has made a product yet: the first one is its, so that it checks a float16 matrix's weights finite. */
    private volatile boolean checked;
    private final NativeKernels kernels;
    private final RowType type;
    private final MemorySegment data;
    private final long rowBytes;
    private final int out, in;
    private final Compute compute;
    /** A thread's copy of a prefill batch's activations, aligned to a cache line. */
    private static final AlignedScratch TOKENS = new AlignedScratch();

    NativeRowsWeights(Tensor tensor, LinearWeights twin, RowType type, NativeKernels kernels, Compute compute) {
        this.twin = twin;
        this.kernels = kernels;
        this.type = type;
        this.data = tensor.data();
        this.out = tensor.rows();
        this.in = tensor.cols();
        this.rowBytes = tensor.dtype().byteSize(in, in);
        this.compute = compute;
    }

    /** A float16 {@code tensor} on the native kernels where the process uses them, else {@link DenseWeights}. */
    static LinearWeights dense(Tensor tensor, Compute compute) {
        DenseWeights twin = new DenseWeights(tensor, compute);
        if (tensor.dtype() != DType.F16) return twin;
        return KernelSource.kernelsWithFloatLanes(compute.matmul().lanes())
                .<LinearWeights>map(k -> new NativeRowsWeights(tensor, twin, RowType.F16, k, compute)).orElse(twin);
    }

    /** {@code tensor} on the native kernels where the process uses them and they decode its type, else {@link DecodedRowsWeights}. */
    static LinearWeights decoded(Tensor tensor, Compute compute) {
        DecodedRowsWeights twin = new DecodedRowsWeights(tensor, compute);
        Optional<RowType> type = rowType(tensor.dtype());
        if (type.isEmpty() || type.get() == RowType.F16) return twin;
        return KernelSource.kernelsWithFloatLanes(compute.matmul().lanes())
                .<LinearWeights>map(k -> new NativeRowsWeights(tensor, twin, type.get(), k, compute)).orElse(twin);
    }

    static Optional<RowType> rowType(DType dtype) {
        for (RowType t : RowType.values()) if (t.name().equals(dtype.name())) return Optional.of(t);
        return Optional.empty();
    }

    @Override public int inFeatures() { return in; }
    @Override public int outFeatures() { return out; }
    @Override public long storedBytes() { return twin.storedBytes(); }

    @Override
    public void matmul(float[] x, int n, float[] y) {
        boolean prefill = n >= RowMajorWeights.PREFILL_TOKENS;
        if (prefill && type != RowType.F16 || !checked && !prefill) {
            twin.matmul(x, n, y);
            checked = true;
            return;
        }
        if (!checked) {
            twin.matmul(x, 1, new float[out]);   // the Java layer's check, for one token's product rather than the batch's
            checked = true;
        }
        if (prefill) {
            tiles(aligned(x, n), n, y).runOn(compute.pool());
            return;
        }
        MemorySegment xs = MemorySegment.ofArray(x), ys = MemorySegment.ofArray(y);
        for (int t = 0; t < n; t++) {
            token(xs.asSlice(4L * t * in, 4L * in), ys.asSlice(4L * t * out, 4L * out)).runOn(compute.pool());
        }
    }

    @Override
    public Optional<RowGroups> prepare(SharedInput x, float[] y) {
        if (!checked) return Optional.empty();
        int n = x.tokens();
        if (n >= RowMajorWeights.PREFILL_TOKENS) {
            // the batch's aligned copy is a form: q, k and v (gate and up) share one
            return type == RowType.F16 ? Optional.of(tiles(x.form(TOKENS, v -> aligned(v, n)), n, y)) : Optional.empty();
        }
        if (n != 1) return Optional.empty();
        return Optional.of(token(MemorySegment.ofArray(x.values()).asSlice(0, 4L * in), MemorySegment.ofArray(y).asSlice(0, 4L * out)));
    }

    /**
     * The first {@code n} tokens of {@code x} copied to this thread's aligned buffer, the tiles' input (straight
     * from the array, whose elements start 16 bytes into a cache line, they ran slower: bench/RESULTS.md), each
     * token by one of the pool's threads.
     */
    private MemorySegment aligned(float[] x, int n) {
        MemorySegment xs = MemorySegment.ofArray(x), tokens = TOKENS.get(4L * n * in);
        compute.pool().forRange(n, in, (worker, start, end) -> MemorySegment.copy(xs, 4L * start * in, tokens, 4L * start * in, 4L * (end - start) * in));
        return tokens;
    }

    /** The F16 prefill product of the {@code n} aligned tokens at {@code tokens} into {@code y}, one tile call per range of row groups. */
    private RowGroups tiles(MemorySegment tokens, int n, float[] y) {
        MemorySegment ys = MemorySegment.ofArray(y);
        return new RowGroups(out, 4L * in * n, (r0, r1) ->
                kernels.tilesF16(data.asSlice(r0 * rowBytes, (r1 - r0) * rowBytes), rowBytes, r1 - r0, in, tokens, n, ys.asSlice(4L * r0), out));
    }

    /** One token's product, {@code xt} into {@code yt}, one kernel call per range of row groups. */
    private RowGroups token(MemorySegment xt, MemorySegment yt) {
        return new RowGroups(out, 4L * in, (r0, r1) ->
                kernels.rows(type, data.asSlice(r0 * rowBytes, (r1 - r0) * rowBytes), rowBytes, r1 - r0, in, xt, yt.asSlice(4L * r0)));
    }
}
