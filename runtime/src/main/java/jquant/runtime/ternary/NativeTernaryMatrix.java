package jquant.runtime.ternary;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import jquant.formats.DType;
import jquant.formats.quant.T2pBlock;
import jquant.formats.quant.Tq2Block;
import jquant.core.WorkerPool;
import jquant.runtime.LinearWeights;
import jquant.runtime.LinearWeights.RowGroups;
import jquant.runtime.nativelib.AlignedScratch;
import jquant.runtime.nativelib.CopyMemory;
import jquant.runtime.nativelib.LazyCopy;
import jquant.runtime.nativelib.NativeKernels;
import jquant.runtime.nativelib.NativeKernels.TernaryLayout;

/**
 * A T2P ({@link T2pBlock}) or TQ2_0 ({@link Tq2Block}) matrix multiplied by the C library's kernels
 * ({@link NativeKernels}) on its stored bytes in place: the 2-bit codes meet the activations in integer
 * dot-product instructions (AVX-512 VNNI {@code vpdpbusd}, AVX2 {@code vpmaddubsw}, NEON {@code sdot}),
 * four slots per code byte taken by masks and one shift (with GFNI one byte map each), where the Java
 * kernels ({@link T2pMatrix}, {@link Tq2Matrix}) multiply in 16-bit lanes. The integers and floats are
 * the Java kernels' bit for bit: the same exact dots, then the shared formula
 * {@code y = Σ_b dot_b · (d_b · scale_b)} in ascending b. The Java matrix on the same bytes is the
 * scalar twin and reads the scales.
 *
 * <p>Each call arranges its columns once ({@code jq_<layout>_arrange}: the activations in the order
 * the code bytes meet them, then each block's sum and scale), then deals out groups of four rows to
 * the pool, each chunk one native call. The C kernels take four rows and four 128-weight blocks at a
 * time and sum the terms of four such row groups side by side (docs/runtime.md). A product of
 * {@value #TILE_COLUMNS} columns or more runs on the prefill tiles where the instruction set has them
 * (AVX-512): sixteen rows in a register's lanes against plain columns, groups of sixteen rows to the pool.
 *
 * <p>T2P where the instruction set has the tiles runs every product on a copy in their form instead
 * ({@code jq_t2p_r16}: sixteen rows' code dwords side by side, made by the first product, which then
 * drops the stored bytes' mapped pages from the process): with the rows in a register's lanes no sum
 * crosses lanes, so a token's product has nothing to fold either and reads the copy at memory speed
 * where the four-row kernels spend as long folding as multiplying (docs/runtime.md); a token's input reaches it
 * quantized by the C library straight into the plain column ({@link #input(float[])}). Only the exact
 * dots ({@link #blockDots}, for the oracles) read the stored bytes then.
 */
public final class NativeTernaryMatrix implements TernaryMatrix {

    private final TernaryLayout layout;
    private final TernaryMatrix twin;
    private final MemorySegment data;
    private final int rows, cols, blocks;
    /** Bytes per row (TQ2_0; T2P stores row groups, not rows) and per group of four rows. */
    private final long rowBytes, quadBytes;
    /** T2P on the sixteen-row copy ({@link #r16}), or on the stored bytes. */
    private final boolean onR16;
    /** The sixteen-row copy, made by the first product that needs it. */
    private final LazyCopy<MemorySegment> r16 = new LazyCopy<>(this::makeR16);
    private final WorkerPool pool;
    private final NativeKernels kernels;
    /**
     * A thread's arranged columns, aligned, one scratch a layout: decode arranges one a matrix, prefill a
     * batch; products prepared together read one input, so those of a layout arrange the same bytes.
     */
    private static final AlignedScratch[] COLUMNS = {new AlignedScratch(), new AlignedScratch()};
    /** A thread's plain columns for the prefill tiles ({@link NativeKernels#tiles}), whatever the layout, and for the sixteen-row copy. */
    private static final AlignedScratch PLAIN = new AlignedScratch();
    /** A worker's gathered codes for the prefill tiles. */
    private static final AlignedScratch GATHERED = new AlignedScratch();
    /** Columns from which a product runs on the prefill tiles where the kernels have them: a tile's width. */
    static final int TILE_COLUMNS = 8;
    /** Rows side by side in a tile, and in a group of the sixteen-row copy: a chunk of the pool's work. */
    private static final int TILE_ROWS = 16;

    /** {@code data} holds the matrix in {@code layout}, read in place (T2P on the sixteen-row copy where the kernels have it). */
    public NativeTernaryMatrix(TernaryLayout layout, MemorySegment data, int rows, int cols, WorkerPool pool, NativeKernels kernels) {
        this(layout, data, rows, cols, pool, kernels, true);
    }

    /** As {@link #NativeTernaryMatrix(TernaryLayout, MemorySegment, int, int, WorkerPool, NativeKernels)}; {@code copy}: whether T2P may run on its sixteen-row copy. */
    public NativeTernaryMatrix(TernaryLayout layout, MemorySegment data, int rows, int cols, WorkerPool pool, NativeKernels kernels, boolean copy) {
        this.layout = layout;
        this.twin = layout == TernaryLayout.T2P ? new T2pMatrix(data, rows, cols, pool) : new Tq2Matrix(data, rows, cols, pool);
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / T2pBlock.WEIGHTS;
        this.rowBytes = layout == TernaryLayout.T2P ? 0 : (long) cols / Tq2Block.WEIGHTS * Tq2Block.BYTES;
        this.quadBytes = layout == TernaryLayout.T2P ? (long) blocks * T2pBlock.BYTES : 4 * rowBytes;
        this.pool = pool;
        this.kernels = kernels;
        this.onR16 = copy && layout == TernaryLayout.T2P && kernels.hasT2pR16();
    }

    @Override public int rows() { return rows; }
    @Override public int cols() { return cols; }
    @Override public DType type() { return twin.type(); }

    @Override public long packedBytes() { return data.byteSize(); }
    @Override public float scale(int row, int block) { return twin.scale(row, block); }

    /** The stored layout. */
    public TernaryLayout layout() { return layout; }

    /** The kernels' instruction set, for logs. */
    public NativeKernels kernels() { return kernels; }

    private AlignedScratch columns() {
        return COLUMNS[layout == TernaryLayout.T2P ? 0 : 1];
    }

    private int columnBytes() { return blocks * NativeKernels.columnBytesPerBlock(layout); }

    /** The columns as the native kernels take them, one after another, in this thread's scratch. */
    private MemorySegment arrange(ActivationBlocks[] xs) {
        MemorySegment all = columns().get((long) xs.length * columnBytes());
        pool.forRange(xs.length, cols, (worker, start, end) -> {
            for (int i = start; i < end; i++) arrange(xs[i], all.asSlice((long) i * columnBytes()));
        });
        return all;
    }

    private void arrange(ActivationBlocks x, MemorySegment column) {
        kernels.arrange(layout, MemorySegment.ofArray(x.values()), MemorySegment.ofArray(x.sums()), MemorySegment.ofArray(x.scales()), blocks, column);
    }

    @Override
    public void matvec(ActivationBlocks x, float[] y, int yOff) {
        if (yOff < 0 || y.length - yOff < rows) throw new IllegalArgumentException("output has room for " + (y.length - yOff) + " rows, matrix " + rows);
        groups(input(x), MemorySegment.ofArray(y).asSlice(4L * yOff)).runOn(pool);
    }

    /**
     * What a token's products of this matrix take its input as: products of one input whose forms are
     * equal share it ({@link LinearWeights#prepare}).
     */
    public Object inputForm() {
        return onR16 ? InputForm.PLAIN : layout;
    }

    /** The plain column of the sixteen-row copy's kernel, a form of its own among the layouts' arranged ones. */
    private enum InputForm { PLAIN }

    /**
     * One quantized column as the kernels take it ({@link #inputForm}), in this thread's scratch for that form,
     * which its next column in that form overwrites ({@link LinearWeights#prepare}: products of one input share it).
     */
    private MemorySegment input(ActivationBlocks x) {
        TernaryMatrix.checkColumns(cols, new ActivationBlocks[] {x});
        if (onR16) return plain(new ActivationBlocks[] {x});
        MemorySegment column = columns().get(columnBytes());
        arrange(x, column);
        return column;
    }

    /**
     * One token's floats ({@code x[0, cols)}) as the kernels take them ({@link #inputForm}), in this thread's scratch for that
     * form, which its next column in that form overwrites ({@link LinearWeights#prepare}: products of one input share it):
     * for the sixteen-row copy quantized by the C library straight into the plain column (the bits of
     * {@link ActivationBlocks#quantize}, without the copy), otherwise quantized here and arranged.
     */
    public MemorySegment input(float[] x) {
        if (x.length < cols) throw new IllegalArgumentException(x.length + " activations for a matrix of " + cols + " columns");
        if (!onR16) return input(ActivationBlocks.quantizeReused(x, 0, cols));
        MemorySegment column = PLAIN.get(NativeKernels.plainColumnBytes(blocks));
        long notFinite = kernels.quantizePlain(MemorySegment.ofArray(x), blocks, column);
        if (notFinite >= 0) throw new IllegalArgumentException("activation " + notFinite + " is " + x[(int) notFinite]);
        return column;
    }

    /** The product of an {@link #input} column into {@code y}, its row groups run later (the sixteen-row copy made now). */
    public RowGroups prepare(MemorySegment column, float[] y) {
        if (y.length < rows) throw new IllegalArgumentException("output has room for " + y.length + " rows, matrix " + rows);
        return groups(column, MemorySegment.ofArray(y));
    }

    private RowGroups groups(MemorySegment column, MemorySegment y) {
        if (!onR16) return new RowGroups(rows, 4L * cols, (r0, r1) -> runRows(r0, r1, column, 1, y, null));
        MemorySegment copy = r16.get();
        return new RowGroups(rows, TILE_ROWS, (long) TILE_ROWS * cols, (r0, r1) -> runR16(copy, r0, r1, column, 1, y), true);
    }

    @Override
    public void multiply(ActivationBlocks[] xs, float[] y) {
        TernaryMatrix.checkColumns(cols, xs);
        TernaryMatrix.checkOutput(rows, xs.length, y);
        if (onR16) {
            MemorySegment copy = r16.get(), act = plain(xs), ys = MemorySegment.ofArray(y);
            pool.forRange((rows + TILE_ROWS - 1) / TILE_ROWS, (long) TILE_ROWS * cols * xs.length,
                    (worker, start, end) -> runR16(copy, TILE_ROWS * start, Math.min(rows, TILE_ROWS * end), act, xs.length, ys));
            return;
        }
        if (kernels.hasTiles() && xs.length >= TILE_COLUMNS) {
            tiles(plain(xs), xs.length, MemorySegment.ofArray(y));
            return;
        }
        run(arrange(xs), xs.length, MemorySegment.ofArray(y), null);
    }

    /** The columns as the prefill tiles take them ({@link NativeKernels#tiles}), one after another, in this thread's scratch. */
    private MemorySegment plain(ActivationBlocks[] xs) {
        long bytes = NativeKernels.plainColumnBytes(blocks);
        MemorySegment all = PLAIN.get(xs.length * bytes);
        pool.forRange(xs.length, cols, (worker, start, end) -> {
            for (int i = start; i < end; i++) {
                ActivationBlocks x = xs[i];
                long at = i * bytes;
                MemorySegment.copy(x.values(), 0, all, ValueLayout.JAVA_BYTE, at, cols);
                MemorySegment.copy(x.sums(), 0, all, ValueLayout.JAVA_INT_UNALIGNED, at + cols, blocks);
                MemorySegment.copy(x.scales(), 0, all, ValueLayout.JAVA_FLOAT_UNALIGNED, at + cols + 4L * blocks, blocks);
            }
        });
        return all;
    }

    /** Groups of sixteen rows dealt out to the pool, one native call per chunk, into y at row stride {@code rows}. */
    private void tiles(MemorySegment act, int n, MemorySegment y) {
        pool.forRange((rows + TILE_ROWS - 1) / TILE_ROWS, (long) TILE_ROWS * cols * n, (worker, start, end) -> {
            int r0 = TILE_ROWS * start, r1 = Math.min(rows, TILE_ROWS * end);
            kernels.tiles(layout, stored(r0, r1), r1 - r0, rowBytes, blocks, n, act, y.asSlice(4L * r0), rows,
                    GATHERED.get(NativeKernels.tileScratchBytes(blocks)));
        });
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

    /** Groups of four rows dealt out to the pool, one native call per chunk: floats into y (at row stride {@code rows}), or dots. */
    private void run(MemorySegment act, int n, MemorySegment y, int[] dots) {
        MemorySegment d = dots == null ? null : MemorySegment.ofArray(dots);
        pool.forRange((rows + 3) / 4, 4L * cols * n, (worker, start, end) -> runRows(4 * start, Math.min(rows, 4 * end), act, n, y, d));
    }

    /** Rows {@code [r0, r1)} ({@code r0} a multiple of sixteen) of a product on the sixteen-row copy against {@code n} plain columns, one native call. */
    private void runR16(MemorySegment copy, int r0, int r1, MemorySegment act, int n, MemorySegment y) {
        long groupBytes = NativeKernels.t2pR16Bytes(TILE_ROWS, blocks);
        kernels.t2pR16Multiply(copy.asSlice(r0 / TILE_ROWS * groupBytes), r1 - r0, blocks, n, act, y.asSlice(4L * r0), rows);
    }

    /**
     * The sixteen-row copy, made by the first product on every thread of the pool (most of its time is the first touch of
     * fresh pages, which the threads share); the stored bytes' pages then leave the process (only the exact dots read them again).
     */
    private MemorySegment makeR16() {
        MemorySegment to = CopyMemory.allocate(NativeKernels.t2pR16Bytes(rows, blocks), 64);
        long groupBytes = NativeKernels.t2pR16Bytes(TILE_ROWS, blocks);
        pool.forRange((rows + TILE_ROWS - 1) / TILE_ROWS, (long) TILE_ROWS * cols, (worker, start, end) -> kernels.t2pR16(
                data.asSlice(start * 4L * quadBytes), Math.min(rows, TILE_ROWS * end) - TILE_ROWS * start, blocks, to.asSlice(start * groupBytes)));
        if (data.isMapped()) data.unload();
        return to;
    }

    /** Rows {@code [r0, r1)} ({@code r0} a multiple of four) of {@link #run}'s product, one native call. */
    private void runRows(int r0, int r1, MemorySegment act, int n, MemorySegment y, MemorySegment d) {
        kernels.multiply(layout, stored(r0, r1), r1 - r0, rowBytes, blocks, n, act,
                y == null ? MemorySegment.NULL : y.asSlice(4L * r0), rows,
                d == null ? MemorySegment.NULL : d.asSlice(4L * r0 * blocks), (long) rows * blocks);
    }

    /** The stored bytes of rows {@code [r0, r1)} ({@code r0} a multiple of four; T2P stores whole groups of four). */
    private MemorySegment stored(int r0, int r1) {
        long from = r0 / 4 * quadBytes, bytes = layout == TernaryLayout.T2P ? ((r1 + 3) / 4 - r0 / 4) * quadBytes : (r1 - r0) * rowBytes;
        return data.asSlice(from, bytes);
    }

    @Override
    public int[][] blockDotsScalar(ActivationBlocks... xs) { return twin.blockDotsScalar(xs); }
}
