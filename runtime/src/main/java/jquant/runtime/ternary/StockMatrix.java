package jquant.runtime.ternary;

import static jdk.incubator.vector.VectorOperators.ASHR;
import static jdk.incubator.vector.VectorOperators.LSHL;
import static jdk.incubator.vector.VectorOperators.LSHR;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jquant.core.WorkerPool;

/**
 * The stock row-major 2-bit layouts (PQ2_0, TQ2_0): each row a run of blocks whose 32 code bytes per
 * 128 weights hold four 2-bit codes u = w + 1 per byte, computed on the stored bytes. The layouts
 * differ only in where a block's codes and scale sit and which weight each 2-bit slot holds; the
 * kernel is shared.
 *
 * <p>The kernel sees a row as a stream of its blocks' code bytes, 32 per block, cut into chunks of
 * one vector ({@link Simd#VB} bytes: two blocks at 512 bits, gathered by two loads and a blend when
 * the layout puts a scale between them). Viewed as short lanes, lane i of a chunk holds stream bytes
 * 2i and 2i+1; slots are extracted and multiplied exactly as in {@link T2pMatrix} (every product
 * 4·u·y, the activation pre-arranged per lane and slot), so one short accumulator per chunk holds
 * eight products and {@code dot(w, y) = (Σ 4·u·y) / 4 − sum(y)}. Two chunks go through the first
 * {@link LaneTree} step (groups: the halves of a chunk), leaving 4 int partials per block.
 *
 * <p>They are slower than T2P (bench/RESULTS.md), and why: eight activation loads per code vector
 * where T2P shares them between a block's two row pairs, a scale read per row and block instead of
 * four rows' scales in one 8-byte read, and for PQ2_0 at 512 bits two loads and a blend.
 */
abstract sealed class StockMatrix implements TernaryMatrix permits Pq2Matrix, Tq2Matrix {

    /** Activation columns per prefill tile (as T2P). */
    public static final int TILE = 4;
    /** Blocks per batch of rows: the batch's tree ints stay in L1, its codes in L2. */
    static final int BATCH_BLOCKS = 256;
    private static final int CODE_BYTES = 32;
    /** Blocks per first-step vector (two chunks, 4 int partials per block). */
    private static final int BLOCKS_PER_PAIR = Simd.LI / 4;
    private static final VectorMask<Byte> UPPER = Simd.B.indexInRange(0, Simd.VB / 2).not();
    private static final ValueLayout.OfShort FP16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final LaneTree TREE = LaneTree.halves();

    final MemorySegment data;
    final int rows, cols, blocks;
    final long rowBytes;
    private final WorkerPool pool;
    /** Rows per batch: each phase (kernel, tree, epilogue) runs over a whole batch, so its per-call cost is shared. */
    private final int batch;
    /** Chunk pairs per row, padded so the tree's two levels see whole groups of four. */
    private final int pairs, treeVectors, paddedBlocks;
    /** Row-relative offsets of each chunk's load, and of the upper half's load when two blocks are blended. */
    private final int[] lower, upper;
    private final boolean blend;
    /** Whether the last row's loads run past the end of the data (then it is read from a padded copy). */
    private final boolean padLastRow;
    /** Offset within a row of each block's scale. */
    private final int[] scaleAt;
    /** Arranged activation slot m takes activation map[m] (−1: zero) shifted left by shift[m]. */
    private final int[] map;
    private final byte[] shift;

    StockMatrix(String format, MemorySegment data, int rows, int cols, int blockWeights, long rowBytes, WorkerPool pool) {
        if (rows <= 0 || cols <= 0 || cols % blockWeights != 0 || data.byteSize() != rows * rowBytes) {
            throw new IllegalArgumentException(format + " " + rows + "×" + cols + " needs cols % " + blockWeights + " == 0 and "
                    + (cols % blockWeights == 0 ? rows * rowBytes : "?") + " bytes, got " + data.byteSize());
        }
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / 128;
        this.rowBytes = rowBytes;
        this.pool = pool;
        this.pairs = (blocks + BLOCKS_PER_PAIR - 1) / BLOCKS_PER_PAIR;
        this.treeVectors = Simd.roundUp(pairs, 4);
        this.paddedBlocks = treeVectors * BLOCKS_PER_PAIR;
        this.batch = Math.max(1, BATCH_BLOCKS / paddedBlocks);
        int chunks = 2 * pairs;
        this.lower = new int[chunks];
        this.upper = new int[chunks];
        this.blend = Simd.VB > CODE_BYTES && !contiguous();
        long lastEnd = 0;
        for (int c = 0; c < chunks; c++) {
            long stream = (long) c * Simd.VB;
            int b = (int) (stream / CODE_BYTES);
            if (b >= blocks) b = 0;   // a padding chunk: any valid bytes, its activations are zero
            lower[c] = Math.toIntExact(codeOffset(b) + stream % CODE_BYTES);
            // at 512 bits the upper half is the next block's codes, loaded 32 bytes early; past the last block, any valid bytes
            upper[c] = b + 1 < blocks ? Math.toIntExact(codeOffset(b + 1) - CODE_BYTES) : lower[c];
            lastEnd = Math.max(lastEnd, lower[c] + Simd.VB);
            if (blend) lastEnd = Math.max(lastEnd, upper[c] + Simd.VB);
        }
        this.padLastRow = (rows - 1) * rowBytes + lastEnd > data.byteSize();
        this.scaleAt = new int[blocks];
        for (int b = 0; b < blocks; b++) scaleAt[b] = Math.toIntExact(scaleOffset(b));
        this.map = new int[chunks * 8 * Simd.LS];
        this.shift = new byte[map.length];
        for (int c = 0; c < chunks; c++) {
            for (int vi = 0; vi < 8; vi++) {
                int h = vi / 4, s = vi % 4;
                for (int i = 0; i < Simd.LS; i++) {
                    long p = (long) c * Simd.VB + 2 * i + h;
                    int b = (int) (p / CODE_BYTES), m = (c * 8 + vi) * Simd.LS + i;
                    map[m] = b < blocks ? weightOf(b, (int) (p % CODE_BYTES), s) : -1;
                    shift[m] = (byte) (s == 0 || (h == 1 && s == 3) ? 2 : 0);
                }
            }
        }
    }

    /** Offset within a row of block b's first code byte. */
    abstract long codeOffset(int block);

    /** Offset within a row of block b's fp16 scale. */
    abstract long scaleOffset(int block);

    /** Whether blocks 2k and 2k+1 have their codes side by side (one load fills a 512-bit vector). */
    abstract boolean contiguous();

    /** Row-relative weight held by slot s (bits 2s) of code byte j of block b. */
    abstract int weightOf(int block, int j, int slot);

    /** Stored 2-bit code of (row, col), read the way the layout defines it: the scalar twin's reader. */
    abstract int storedCode(int row, int col);

    @Override public int rows() { return rows; }
    @Override public int cols() { return cols; }
    @Override public long packedBytes() { return data.byteSize(); }

    @Override
    public float scale(int row, int block) {
        return Float.float16ToFloat(data.get(FP16, row * rowBytes + scaleOffset(block)));
    }

    // ---------------------------------------------------------------- activations

    record Prepared(short[] act, int[] sums, float[] scales) {}

    Prepared prepare(ActivationBlocks x) {
        byte[] q = x.values();
        short[] act = new short[map.length];
        for (int m = 0; m < map.length; m++) if (map[m] >= 0) act[m] = (short) (q[map[m]] << shift[m]);
        int[] sums = new int[paddedBlocks];
        float[] scales = new float[paddedBlocks];
        for (int b = 0; b < blocks; b++) {
            sums[b] = x.sum(b);
            scales[b] = x.scale(b);
        }
        return new Prepared(act, sums, scales);
    }

    // ---------------------------------------------------------------- decode (matvec)

    @Override
    public void matvec(ActivationBlocks x, float[] y, int yOff) {
        TernaryMatrix.checkColumns(cols, new ActivationBlocks[] {x});
        if (yOff < 0 || y.length - yOff < rows) throw new IllegalArgumentException("output has room for " + (y.length - yOff) + " rows, matrix " + rows);
        Prepared p = prepare(x);
        pool.forRange(rows, cols, (worker, start, end) -> {
            Scratch s = Scratch.mine();
            int[] tree = s.tree(batch * treeVectors * Simd.LI);
            short[] halves = s.shorts(batch * paddedBlocks);
            float[] terms = s.terms(batch * paddedBlocks), d = s.scales(batch * paddedBlocks);
            for (int r0 = start; r0 < end; r0 += batch) {
                int n = Math.min(batch, end - r0);
                rowSums(r0, n, p.act, tree, s);
                rowScales(r0, n, halves, d);
                LaneTree.epilogue(tree, 0, n, paddedBlocks, 2, 2, p.sums, d, p.scales, terms);
                sumRows(terms, n, y, yOff + r0);
            }
        });
    }

    /** The first tree step of rows r0 .. r0+n−1 at tree[(r − r0)·treeVectors·LI ..]. */
    private void rowSums(int r0, int n, short[] act, int[] tree, Scratch s) {
        int stride = treeVectors * Simd.LI;
        boolean last = padLastRow && r0 + n == rows;
        pairSums(data, r0 * rowBytes, last ? n - 1 : n, rowBytes, pairs, stride, 0, lower, upper, blend, act, tree);
        if (last) {
            MemorySegment w = s.padded(rowBytes + 2L * Simd.VB);
            MemorySegment.copy(data, (rows - 1) * rowBytes, w, 0, rowBytes);
            pairSums(w, 0, 1, rowBytes, pairs, stride, (n - 1) * stride, lower, upper, blend, act, tree);
        }
    }

    /** d[(r − r0)·paddedBlocks + b] = the fp16 scale of row r's block b, rows r0 .. r0+n−1. */
    private void rowScales(int r0, int n, short[] halves, float[] d) {
        for (int i = 0; i < n; i++) {
            long base = (r0 + i) * rowBytes;
            for (int b = 0; b < blocks; b++) halves[i * paddedBlocks + b] = data.get(FP16, base + scaleAt[b]);
        }
        LaneTree.fp16(halves, n * paddedBlocks, d);
    }

    /**
     * y[at + i] = Σ_b terms[i·paddedBlocks + b] in ascending b: the additions of the shared formula, in
     * its order. Four rows at a time, so that four chains of dependent additions run side by side.
     */
    private void sumRows(float[] terms, int n, float[] y, int at) {
        int i = 0;
        for (; i + 4 <= n; i += 4) {
            float a0 = 0f, a1 = 0f, a2 = 0f, a3 = 0f;
            for (int b = 0, t = i * paddedBlocks; b < blocks; b++, t++) {
                a0 += terms[t];
                a1 += terms[t + paddedBlocks];
                a2 += terms[t + 2 * paddedBlocks];
                a3 += terms[t + 3 * paddedBlocks];
            }
            y[at + i] = a0;
            y[at + i + 1] = a1;
            y[at + i + 2] = a2;
            y[at + i + 3] = a3;
        }
        for (; i < n; i++) {
            float acc = 0f;
            for (int b = 0; b < blocks; b++) acc += terms[i * paddedBlocks + b];
            y[at + i] = acc;
        }
    }

    /**
     * tree[at + i·stride + LI·k ..] for chunk pairs k &lt; pairs of the n rows from base: each chunk
     * loaded (and, at 512 bits where the layout separates blocks, blended from two loads), unpacked
     * into eight 4u slot values, multiplied, summed per lane, then the first tree step over the pair.
     */
    private static void pairSums(MemorySegment w, long base, int n, long rowBytes, int pairs, int stride, int at, int[] lower, int[] upper,
                                 boolean blend, short[] act, int[] tree) {
        ShortVector e = TREE.firstEven, o = TREE.firstOdd;
        for (int i = 0; i < n; i++, base += rowBytes, at += stride) for (int k = 0; k < pairs; k++) {
            int a = 2 * k * 8 * Simd.LS;
            ByteVector bytes = ByteVector.fromMemorySegment(Simd.B, w, base + lower[2 * k], ByteOrder.LITTLE_ENDIAN);
            if (blend) bytes = bytes.blend(ByteVector.fromMemorySegment(Simd.B, w, base + upper[2 * k], ByteOrder.LITTLE_ENDIAN), UPPER);
            ShortVector v = bytes.reinterpretAsShorts(), vh = v.lanewise(LSHR, 8);
            ShortVector px = v.and((short) 0x03).mul(ShortVector.fromArray(Simd.S, act, a))
                    .add(v.and((short) 0x0C).mul(ShortVector.fromArray(Simd.S, act, a + Simd.LS)))
                    .add(v.lanewise(LSHR, 2).and((short) 0x0C).mul(ShortVector.fromArray(Simd.S, act, a + 2 * Simd.LS)))
                    .add(v.lanewise(LSHR, 4).and((short) 0x0C).mul(ShortVector.fromArray(Simd.S, act, a + 3 * Simd.LS)))
                    .add(vh.and((short) 0x03).mul(ShortVector.fromArray(Simd.S, act, a + 4 * Simd.LS)))
                    .add(vh.and((short) 0x0C).mul(ShortVector.fromArray(Simd.S, act, a + 5 * Simd.LS)))
                    .add(v.lanewise(LSHR, 10).and((short) 0x0C).mul(ShortVector.fromArray(Simd.S, act, a + 6 * Simd.LS)))
                    .add(v.lanewise(LSHR, 14).mul(ShortVector.fromArray(Simd.S, act, a + 7 * Simd.LS)));
            a += 8 * Simd.LS;
            bytes = ByteVector.fromMemorySegment(Simd.B, w, base + lower[2 * k + 1], ByteOrder.LITTLE_ENDIAN);
            if (blend) bytes = bytes.blend(ByteVector.fromMemorySegment(Simd.B, w, base + upper[2 * k + 1], ByteOrder.LITTLE_ENDIAN), UPPER);
            v = bytes.reinterpretAsShorts();
            vh = v.lanewise(LSHR, 8);
            ShortVector py = v.and((short) 0x03).mul(ShortVector.fromArray(Simd.S, act, a))
                    .add(v.and((short) 0x0C).mul(ShortVector.fromArray(Simd.S, act, a + Simd.LS)))
                    .add(v.lanewise(LSHR, 2).and((short) 0x0C).mul(ShortVector.fromArray(Simd.S, act, a + 2 * Simd.LS)))
                    .add(v.lanewise(LSHR, 4).and((short) 0x0C).mul(ShortVector.fromArray(Simd.S, act, a + 3 * Simd.LS)))
                    .add(vh.and((short) 0x03).mul(ShortVector.fromArray(Simd.S, act, a + 4 * Simd.LS)))
                    .add(vh.and((short) 0x0C).mul(ShortVector.fromArray(Simd.S, act, a + 5 * Simd.LS)))
                    .add(v.lanewise(LSHR, 10).and((short) 0x0C).mul(ShortVector.fromArray(Simd.S, act, a + 6 * Simd.LS)))
                    .add(v.lanewise(LSHR, 14).mul(ShortVector.fromArray(Simd.S, act, a + 7 * Simd.LS)));
            IntVector r = e.selectFrom(px, py).add(o.selectFrom(px, py)).reinterpretAsInts();
            r.lanewise(LSHL, 16).lanewise(ASHR, 16).add(r.lanewise(ASHR, 16)).intoArray(tree, at + k * Simd.LI);
        }
    }

    // ---------------------------------------------------------------- prefill

    /**
     * Tiles of {@value #TILE} columns: each chunk is unpacked once and multiplied against the four
     * columns; batches of rows ({@value #BATCH_BLOCKS} blocks) are the outer loop and tiles the next. A last
     * partial tile is padded with zero columns; only real outputs are kept.
     */
    private void prefill(ActivationBlocks[] xs, int[][] dotsOut, float[] yOut) {
        int tiles = (xs.length + TILE - 1) / TILE;
        Prepared[] p = new Prepared[tiles * TILE];
        pool.forRange(p.length, cols, (worker, start, end) -> {
            for (int c = start; c < end; c++) p[c] = prepare(c < xs.length ? xs[c] : ActivationBlocks.zeros(cols));
        });
        int stride = treeVectors * Simd.LI;
        pool.forRange((rows + batch - 1) / batch, (long) batch * cols * xs.length, (worker, start, end) -> {
            Scratch s = Scratch.mine();
            int[] tree = s.tree(TILE * batch * stride), dots = s.dots(batch * paddedBlocks);
            short[] halves = s.shorts(batch * paddedBlocks);
            float[] terms = s.terms(batch * paddedBlocks), d = s.scales(batch * paddedBlocks);
            for (int r0 = start * batch; r0 < Math.min(rows, end * batch); r0 += batch) {
                int n = Math.min(batch, rows - r0), column = n * stride;
                if (yOut != null) rowScales(r0, n, halves, d);
                for (int t = 0; t < tiles; t++) {
                    int first = t * TILE;
                    for (int i = 0; i < n; i++) {
                        int r = r0 + i;
                        MemorySegment w = data;
                        long base = r * rowBytes;
                        if (padLastRow && r == rows - 1) {
                            w = s.padded(rowBytes + 2L * Simd.VB);
                            MemorySegment.copy(data, base, w, 0, rowBytes);
                            base = 0;
                        }
                        tileSums(w, base, pairs, lower, upper, blend, p[first].act, p[first + 1].act, p[first + 2].act,
                                p[first + 3].act, tree, i * stride, column);
                    }
                    for (int c = 0; c < Math.min(TILE, xs.length - first); c++) {
                        if (yOut != null) {
                            LaneTree.epilogue(tree, c * column, n, paddedBlocks, 2, 2, p[first + c].sums, d, p[first + c].scales, terms);
                            sumRows(terms, n, yOut, (first + c) * rows + r0);
                        }
                        if (dotsOut != null) {
                            LaneTree.reduce(tree, c * column, n * treeVectors, 2);
                            LaneTree.finish(tree, c * column, n, paddedBlocks, 2, p[first + c].sums, dots);
                            for (int i = 0; i < n; i++) System.arraycopy(dots, i * paddedBlocks, dotsOut[first + c], (r0 + i) * blocks, blocks);
                        }
                    }
                }
            }
        });
    }

    /** tree[at + c·column + k·LI ..]: first tree step of column c over chunk pair k, each chunk unpacked once for all columns. */
    private static void tileSums(MemorySegment w, long base, int pairs, int[] lower, int[] upper, boolean blend,
                                 short[] a0, short[] a1, short[] a2, short[] a3, int[] tree, int at, int column) {
        ShortVector e = TREE.firstEven, o = TREE.firstOdd;
        for (int k = 0; k < pairs; k++) {
            int ax = 2 * k * 8 * Simd.LS, ay = ax + 8 * Simd.LS;
            ByteVector bytes = ByteVector.fromMemorySegment(Simd.B, w, base + lower[2 * k], ByteOrder.LITTLE_ENDIAN);
            if (blend) bytes = bytes.blend(ByteVector.fromMemorySegment(Simd.B, w, base + upper[2 * k], ByteOrder.LITTLE_ENDIAN), UPPER);
            ShortVector v = bytes.reinterpretAsShorts();
            ShortVector x0 = v.and((short) 0x03), x1 = v.and((short) 0x0C), x2 = v.lanewise(LSHR, 2).and((short) 0x0C),
                    x3 = v.lanewise(LSHR, 4).and((short) 0x0C), x4 = v.lanewise(LSHR, 8).and((short) 0x03),
                    x5 = v.lanewise(LSHR, 8).and((short) 0x0C), x6 = v.lanewise(LSHR, 10).and((short) 0x0C),
                    x7 = v.lanewise(LSHR, 14);
            bytes = ByteVector.fromMemorySegment(Simd.B, w, base + lower[2 * k + 1], ByteOrder.LITTLE_ENDIAN);
            if (blend) bytes = bytes.blend(ByteVector.fromMemorySegment(Simd.B, w, base + upper[2 * k + 1], ByteOrder.LITTLE_ENDIAN), UPPER);
            v = bytes.reinterpretAsShorts();
            ShortVector z0 = v.and((short) 0x03), z1 = v.and((short) 0x0C), z2 = v.lanewise(LSHR, 2).and((short) 0x0C),
                    z3 = v.lanewise(LSHR, 4).and((short) 0x0C), z4 = v.lanewise(LSHR, 8).and((short) 0x03),
                    z5 = v.lanewise(LSHR, 8).and((short) 0x0C), z6 = v.lanewise(LSHR, 10).and((short) 0x0C),
                    z7 = v.lanewise(LSHR, 14);
            for (int c = 0; c < TILE; c++) {
                short[] y = c == 0 ? a0 : c == 1 ? a1 : c == 2 ? a2 : a3;
                ShortVector px = x0.mul(ShortVector.fromArray(Simd.S, y, ax)).add(x1.mul(ShortVector.fromArray(Simd.S, y, ax + Simd.LS)))
                        .add(x2.mul(ShortVector.fromArray(Simd.S, y, ax + 2 * Simd.LS))).add(x3.mul(ShortVector.fromArray(Simd.S, y, ax + 3 * Simd.LS)))
                        .add(x4.mul(ShortVector.fromArray(Simd.S, y, ax + 4 * Simd.LS))).add(x5.mul(ShortVector.fromArray(Simd.S, y, ax + 5 * Simd.LS)))
                        .add(x6.mul(ShortVector.fromArray(Simd.S, y, ax + 6 * Simd.LS))).add(x7.mul(ShortVector.fromArray(Simd.S, y, ax + 7 * Simd.LS)));
                ShortVector py = z0.mul(ShortVector.fromArray(Simd.S, y, ay)).add(z1.mul(ShortVector.fromArray(Simd.S, y, ay + Simd.LS)))
                        .add(z2.mul(ShortVector.fromArray(Simd.S, y, ay + 2 * Simd.LS))).add(z3.mul(ShortVector.fromArray(Simd.S, y, ay + 3 * Simd.LS)))
                        .add(z4.mul(ShortVector.fromArray(Simd.S, y, ay + 4 * Simd.LS))).add(z5.mul(ShortVector.fromArray(Simd.S, y, ay + 5 * Simd.LS)))
                        .add(z6.mul(ShortVector.fromArray(Simd.S, y, ay + 6 * Simd.LS))).add(z7.mul(ShortVector.fromArray(Simd.S, y, ay + 7 * Simd.LS)));
                IntVector r = e.selectFrom(px, py).add(o.selectFrom(px, py)).reinterpretAsInts();
                r.lanewise(LSHL, 16).lanewise(ASHR, 16).add(r.lanewise(ASHR, 16)).intoArray(tree, at + c * column + k * Simd.LI);
            }
        }
    }

    // ---------------------------------------------------------------- public entry points

    @Override
    public void multiply(ActivationBlocks[] xs, float[] y) {
        TernaryMatrix.checkColumns(cols, xs);
        TernaryMatrix.checkOutput(rows, xs.length, y);
        if (xs.length == 1) matvec(xs[0], y, 0);
        else prefill(xs, null, y);
    }

    @Override
    public int[][] blockDots(ActivationBlocks... xs) {
        TernaryMatrix.checkColumns(cols, xs);
        int[][] out = new int[xs.length][rows * blocks];
        if (xs.length == 1) {
            Prepared p = prepare(xs[0]);
            int[] tree = new int[treeVectors * Simd.LI], dots = new int[paddedBlocks];
            for (int r = 0; r < rows; r++) {
                rowSums(r, 1, p.act, tree, Scratch.mine());
                LaneTree.reduce(tree, 0, treeVectors, 2);
                LaneTree.finish(tree, 0, 1, paddedBlocks, 2, p.sums, dots);
                System.arraycopy(dots, 0, out[0], r * blocks, blocks);
            }
        } else {
            prefill(xs, out, null);
        }
        return out;
    }

    /** Scalar twin: each stored code minus one times its activation, block by block. */
    @Override
    public int[][] blockDotsScalar(ActivationBlocks... xs) {
        TernaryMatrix.checkColumns(cols, xs);
        int[][] out = new int[xs.length][rows * blocks];
        for (int c = 0; c < xs.length; c++) {
            for (int r = 0; r < rows; r++) {
                for (int b = 0; b < blocks; b++) {
                    int dot = 0;
                    for (int j = 0; j < 128; j++) dot += (storedCode(r, b * 128 + j) - 1) * xs[c].q(b * 128 + j);
                    out[c][r * blocks + b] = dot;
                }
            }
        }
        return out;
    }

    /** Byte at {@code off} of the data, unsigned. */
    int byteAt(long off) { return data.get(ValueLayout.JAVA_BYTE, off) & 0xFF; }
}
