package jquant.runtime.ternary;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import jquant.formats.quant.T2pBlock;
import jquant.runtime.kernels.WorkerPool;
import jquant.runtime.nativelib.NativeKernels;

/**
 * A T2P matrix ({@link T2pBlock}) multiplied by the C library's kernels ({@link NativeKernels}): each
 * row pair's 64 code bytes meet the activations in integer dot-product instructions (AVX-512 VNNI
 * {@code vpdpbusd}, AVX2 {@code vpmaddubsw}, NEON {@code sdot}), four slot masks per pair and no
 * widening, where the Java kernel ({@link T2pMatrix}) multiplies in 16-bit lanes. The integers and
 * floats are {@link T2pMatrix}'s bit for bit: the same exact dots, then the shared formula
 * {@code y = Σ_b dot_b · (d_b · scale_b)} in ascending b. {@link T2pMatrix} on the same bytes is the
 * scalar twin and reads the scales.
 *
 * <p>Activations are arranged once per call ({@code jq_t2p_arrange}: per block and slot the eight
 * activations of each word twice, 256 bytes per 128, then the blocks' sums and scales), then row
 * groups are dealt out to the pool, each chunk one native call over the stored bytes in place.
 */
public final class NativeT2pMatrix implements TernaryMatrix {

    private final T2pMatrix twin;
    private final MemorySegment data;
    private final int rows, cols, blocks;
    private final WorkerPool pool;
    private final NativeKernels kernels;

    /** {@code data} holds {@code rows/4 × cols/128} T2P blocks, read in place. */
    public NativeT2pMatrix(MemorySegment data, int rows, int cols, WorkerPool pool, NativeKernels kernels) {
        this.twin = new T2pMatrix(data, rows, cols, pool);
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / T2pBlock.WEIGHTS;
        this.pool = pool;
        this.kernels = kernels;
    }

    @Override public int rows() { return rows; }
    @Override public int cols() { return cols; }
    @Override public long packedBytes() { return data.byteSize(); }
    @Override public float scale(int row, int block) { return twin.scale(row, block); }

    /** The kernels' instruction set, for logs. */
    public NativeKernels kernels() { return kernels; }

    /** The columns as the native kernels take them, one after another ({@link NativeKernels#t2pArrange}). */
    private byte[] arrange(ActivationBlocks[] xs) {
        byte[] columns = new byte[xs.length * blocks * NativeKernels.T2P_COLUMN];
        MemorySegment all = MemorySegment.ofArray(columns);
        pool.forRange(xs.length, cols, (worker, start, end) -> {
            for (int i = start; i < end; i++) arrange(xs[i], all.asSlice((long) i * blocks * NativeKernels.T2P_COLUMN));
        });
        return columns;
    }

    private void arrange(ActivationBlocks x, MemorySegment column) {
        kernels.t2pArrange(MemorySegment.ofArray(x.values()), MemorySegment.ofArray(x.sums()), MemorySegment.ofArray(x.scales()), blocks, column);
    }

    @Override
    public void matvec(ActivationBlocks x, float[] y, int yOff) {
        TernaryMatrix.checkColumns(cols, new ActivationBlocks[] {x});
        if (yOff < 0 || y.length - yOff < rows) throw new IllegalArgumentException("output has room for " + (y.length - yOff) + " rows, matrix " + rows);
        byte[] column = new byte[blocks * NativeKernels.T2P_COLUMN];
        arrange(x, MemorySegment.ofArray(column));
        run(column, 1, MemorySegment.ofArray(y).asSlice(4L * yOff), null);
    }

    @Override
    public void multiply(ActivationBlocks[] xs, float[] y) {
        TernaryMatrix.checkColumns(cols, xs);
        TernaryMatrix.checkOutput(rows, xs.length, y);
        run(arrange(xs), xs.length, MemorySegment.ofArray(y), null);
    }

    @Override
    public int[][] blockDots(ActivationBlocks... xs) {
        TernaryMatrix.checkColumns(cols, xs);
        int[] flat = new int[xs.length * rows * blocks];
        run(arrange(xs), xs.length, null, flat);
        int[][] out = new int[xs.length][];
        for (int c = 0; c < xs.length; c++) out[c] = Arrays.copyOfRange(flat, c * rows * blocks, (c + 1) * rows * blocks);
        return out;
    }

    /** Row groups dealt out to the pool, one native call per chunk: floats into y (at row stride {@code rows}), or dots. */
    private void run(byte[] columns, int n, MemorySegment y, int[] dots) {
        MemorySegment act = MemorySegment.ofArray(columns);
        MemorySegment d = dots == null ? null : MemorySegment.ofArray(dots);
        long groupBytes = (long) blocks * T2pBlock.BYTES;
        pool.forRange(rows / 4, 4L * cols * n, (worker, start, end) -> kernels.t2pMultiply(
                data.asSlice(start * groupBytes, (end - start) * groupBytes), end - start, blocks, n, act,
                y == null ? MemorySegment.NULL : y.asSlice(16L * start), rows,
                d == null ? MemorySegment.NULL : d.asSlice(16L * start * blocks), (long) rows * blocks));
    }

    @Override
    public int[][] blockDotsScalar(ActivationBlocks... xs) { return twin.blockDotsScalar(xs); }
}
