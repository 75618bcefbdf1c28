package jquant.runtime.ternary;

import static jdk.incubator.vector.VectorOperators.ASHR;
import static jdk.incubator.vector.VectorOperators.I2F;
import static jdk.incubator.vector.VectorOperators.LSHL;
import static jdk.incubator.vector.VectorOperators.LSHR;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jquant.formats.DType;
import jquant.formats.quant.T2pBlock;
import jquant.core.WorkerPool;

/**
 * Ternary matrix in the T2P row-pair layout ({@link T2pBlock}), computed on the stored bytes (a slice
 * of the mapped file), with the decode (matvec) kernel and the prefill kernel over tiles of
 * {@value #TILE} activation columns.
 *
 * <p>A pair's 64 code bytes are 4 words × (8 bytes of row a, 8 of row b); a vector of {@link Simd#VB}
 * bytes holds {@code VB / 16} words of one pair (all four at 512 bits: one "chunk" per pair). The
 * Vector API has no int8 dot product (no sdot / VNNI), so the kernel views the bytes as short lanes
 * and multiplies in 16 bits. Each short holds two code bytes (lo = even j, hi = odd j), four slots
 * each; the eight slot values come out with masks, and shifts only where a mask alone would not do:
 * every slot is brought to 4u (mask 0x0C as the T2P write-up's slot 1; slots 2 and 3 shifted down
 * to it) or left at u with the activation pre-multiplied by 4. All eight products are then 4·u·y, so
 * one short accumulator holds them (|Σ| ≤ 8·4·3·127 = 12192, exact for u ≤ 3) and
 * <pre>   dot(w, y) = (Σ 4·u·y) / 4 − sum(y)   </pre>
 * is exact. (Per-slot accumulators recombined as a2 + 4·a1 + 16·(a0 + a3) would overflow 16 bits;
 * the scalar twin keeps that recombination of the write-up in int.) Activations are "dup8": the lane
 * of row b of a word carries the same activation as the lane of row a, so one register serves both
 * rows of a pair and both pairs of a block. Per-block, per-row ints come out of a {@link LaneTree};
 * the float epilogue converts each block's four fp16 row scales (8 bytes read beside the codes) in
 * vector lanes and adds the terms block by block, four rows at once.
 *
 * <p>Dup8 activations, multiplication in 16 bits and the masks are what measured fastest against
 * the alternatives tried (permuted activations, mask-and-add, table lookup; bench/RESULTS.md). Table
 * lookup (T-MAC / bitnet.cpp TL) cannot run on this layout for decode: a shuffle indexes one table for
 * all its lanes, and the lanes of a T2P word meet eight different activations.
 */
public final class T2pMatrix implements TernaryMatrix {

    /** Activation columns per prefill tile. */
    public static final int TILE = 8;
    /** Decode: blocks (of 4 rows) per batch of row groups, so the batch's tree ints stay in L1 and its codes in L2. */
    static final int BATCH_BLOCKS = 256;
    /** Prefill: row groups per batch, which pass over a tile's activations a span at a time. */
    static final int PREFILL_GROUPS = 16;
    /** Vectors of one pair's 64 code bytes. */
    private static final int CHUNKS = T2pBlock.PAIR_BYTES / Simd.VB;
    /** Shorts of arranged activations per block: 8 slot vectors per chunk. */
    static final int ACT_PER_BLOCK = 8 * Simd.LS * CHUNKS;
    /** Int partials per row per block after the first tree step, and the tree levels that sum them. */
    private static final int PARTIALS = Simd.LI / 4, LEVELS = Integer.numberOfTrailingZeros(PARTIALS);
    /**
     * Prefill: blocks per span. Every row group of a batch passes over a span before the next, so the
     * tile's arranged activations for it (16 KiB at 512 bits) stay in L1 while all use them, and the
     * span's tree ints are summed into the outputs after every {@link #PARTIALS} row groups, so the
     * tree is 8 KiB (a whole batch's, summed at once, was 32 KiB and slower).
     */
    static final int SPAN_BLOCKS = Math.max(4, PARTIALS);
    private static final ValueLayout.OfLong HEADER = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final LaneTree TREE;
    /** Lane i of slot vector (s, h) of a chunk takes short 16·(i/8) + 4s + i%4 of the chunk's 32 activation shorts. */
    private static final ShortVector[] SLOT_INDEX = new ShortVector[4];

    static {
        int[] rowInPair = new int[Simd.LS];
        for (int l = 0; l < Simd.LS; l++) rowInPair[l] = (l % 8) / 4;   // short lane l holds bytes 2l, 2l+1 of its word
        TREE = new LaneTree(rowInPair);
        for (int s = 0; s < 4; s++) {
            short[] idx = new short[Simd.LS];
            for (int i = 0; i < Simd.LS; i++) idx[i] = (short) (16 * (i / 8) + 4 * s + i % 4);
            SLOT_INDEX[s] = ShortVector.fromArray(Simd.S, idx, 0);
        }
    }

    private final MemorySegment data;
    private final int rows, cols, blocks, paddedBlocks;
    /** Row groups per batch: each phase (kernel, tree, epilogue) runs over a whole batch, so its per-call cost is shared. */
    private final int batch;
    private final WorkerPool pool;

    /** {@code data} holds {@code rows/4 × cols/128} T2P blocks; it is read in place, never copied. */
    public T2pMatrix(MemorySegment data, int rows, int cols, WorkerPool pool) {
        if (rows % T2pBlock.ROWS != 0 || cols % T2pBlock.WEIGHTS != 0 || rows <= 0 || cols <= 0) {
            throw new IllegalArgumentException("T2P needs rows % 4 == 0 and cols % 128 == 0, got " + rows + "×" + cols);
        }
        long expected = (long) rows / T2pBlock.ROWS * (cols / T2pBlock.WEIGHTS) * T2pBlock.BYTES;
        if (data.byteSize() != expected) {
            throw new IllegalArgumentException("T2P " + rows + "×" + cols + " needs " + expected + " bytes, got " + data.byteSize());
        }
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / T2pBlock.WEIGHTS;
        this.paddedBlocks = Simd.roundUp(blocks, PARTIALS);
        this.batch = Math.max(1, BATCH_BLOCKS / paddedBlocks);
        this.pool = pool;
    }

    @Override public int rows() { return rows; }
    @Override public int cols() { return cols; }
    @Override public DType type() { return DType.T2P; }

    @Override public long packedBytes() { return data.byteSize(); }

    @Override
    public float scale(int row, int block) {
        return Float.float16ToFloat(data.get(FP16, T2pBlock.blockOffset(row / 4, block, cols) + T2pBlock.SCALES_OFFSET + 2L * (row % 4)));
    }

    private static final ValueLayout.OfShort FP16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    // ---------------------------------------------------------------- activations, laid out for the kernels

    /** Activations arranged for the kernels, with the per-block sums and scales the epilogue needs. */
    record Prepared(short[] act, int[] sums4, float[] scales4) {}

    /**
     * Chunk c of block b, slot vector vi = 4h + s, lane i meets code byte j = (2i mod 16) + h of word
     * c·(VB/16) + i/8, whose slot s is weight 8·(4·wd + s) + j mod 8 — that is activation short
     * 16·wd + 4s + i%4, byte h. So each slot vector is one two-vector permute of the block's
     * activations viewed as shorts, then the byte taken out by shifts. Slot 0 (both bytes) and slot 3
     * of the odd byte are extracted as u, so their activation is 4y.
     */
    Prepared prepare(ActivationBlocks x) {
        short[] act = new short[paddedBlocks * ACT_PER_BLOCK];
        byte[] q = x.values();
        for (int b = 0; b < blocks; b++) {
            for (int c = 0; c < CHUNKS; c++) {
                int src = b * T2pBlock.WEIGHTS + c * 2 * Simd.VB, dst = (b * CHUNKS + c) * 8 * Simd.LS;
                ShortVector lo = ByteVector.fromArray(Simd.B, q, src).reinterpretAsShorts();
                ShortVector hi = ByteVector.fromArray(Simd.B, q, src + Simd.VB).reinterpretAsShorts();
                for (int s = 0; s < 4; s++) {
                    ShortVector pairs = SLOT_INDEX[s].selectFrom(lo, hi);
                    pairs.lanewise(LSHL, 8).lanewise(ASHR, s == 0 ? 6 : 8).intoArray(act, dst + s * Simd.LS);
                    ShortVector odd = pairs.lanewise(ASHR, 8);
                    (s == 0 || s == 3 ? odd.lanewise(LSHL, 2) : odd).intoArray(act, dst + (4 + s) * Simd.LS);
                }
            }
        }
        int[] sums4 = new int[paddedBlocks * 4];
        float[] scales4 = new float[paddedBlocks * 4];
        for (int b = 0; b < blocks; b++) {
            for (int r = 0; r < 4; r++) {
                sums4[4 * b + r] = x.sum(b);
                scales4[4 * b + r] = x.scale(b);
            }
        }
        return new Prepared(act, sums4, scales4);
    }

    // ---------------------------------------------------------------- decode (matvec)

    @Override
    public void matvec(ActivationBlocks x, float[] y, int yOff) {
        TernaryMatrix.checkColumns(cols, new ActivationBlocks[] {x});
        if (yOff < 0 || y.length - yOff < rows) throw new IllegalArgumentException("output has room for " + (y.length - yOff) + " rows, matrix " + rows);
        Prepared p = prepare(x);
        pool.forRange(rows / 4, 4L * cols, (worker, start, end) -> decodeGroups(p, start, end, y, yOff));
    }

    /** Row groups [start, end) in batches: the integer kernel, the tree, the float epilogue. */
    private void decodeGroups(Prepared p, int start, int end, float[] y, int yOff) {
        Scratch s = Scratch.mine();
        int unit = paddedBlocks * 4;
        int[] tree = s.tree(batch * paddedBlocks * Simd.LI);
        long[] headers = s.headers(batch * paddedBlocks);
        float[] terms = s.terms(batch * unit), d = s.scales(batch * unit);
        for (int g0 = start; g0 < end; g0 += batch) {
            int n = Math.min(batch, end - g0);
            pairSums(data, T2pBlock.blockOffset(g0, 0, cols), n, blocks, paddedBlocks, p.act, tree, headers);
            LaneTree.fp16(headers, n * unit, d);
            LaneTree.epilogue(tree, 0, n, unit, LEVELS, 2, p.sums4, d, p.scales4, terms);
            for (int g = 0; g < n; g++) sumTerms(terms, g * unit, blocks, y, yOff + 4 * (g0 + g));
        }
    }

    /** dots[g·4·paddedBlocks + 4b + r] of row groups g0 .. g0+n−1, and each block's four fp16 scales in headers[g·paddedBlocks + b]. */
    private void groupDots(int g0, int n, Prepared p, int[] tree, long[] headers, int[] dots) {
        pairSums(data, T2pBlock.blockOffset(g0, 0, cols), n, blocks, paddedBlocks, p.act, tree, headers);
        LaneTree.reduce(tree, 0, n * paddedBlocks, LEVELS);
        LaneTree.finish(tree, 0, n, paddedBlocks * 4, 2, p.sums4, dots);
    }

    /**
     * y[yAt + r] = Σ_b terms[from + 4b + r] in ascending b, four rows as the lanes of one vector: the
     * additions of the shared formula, in its order.
     */
    static void sumTerms(float[] terms, int from, int blocks, float[] y, int yAt) {
        FloatVector acc = FloatVector.zero(Simd.F4);
        for (int b = 0; b < blocks; b++) acc = acc.add(FloatVector.fromArray(Simd.F4, terms, from + 4 * b));
        acc.intoArray(y, yAt);
    }

    /**
     * For the {@code groups} row groups from {@code base}: tree[LI·(g·paddedBlocks + b) ..] = first tree
     * step over the two pairs of block b (summed over the block's chunks), whose per-lane sums
     * Σ 4·u·y come from one code load per chunk and pair and the same eight activation vectors;
     * headers[g·paddedBlocks + b] = the block's four fp16 row scales.
     *
     * <p>Each row group is read through a slice made here, at offsets from 0 in an int loop: C2 then
     * keeps the slice's address and size in registers and checks only bounds at a load, where on
     * {@code w} at {@code base + …} it also checked the segment's class and liveness at every load
     * (read from the compiled loops: about 60 scalar instructions a block beside some 80 vector ones,
     * about 25 with the slice). The same slices left the other kernels no faster (bench/RESULTS.md).
     */
    private static void pairSums(MemorySegment w, long base, int groups, int blocks, int paddedBlocks, short[] act, int[] tree, long[] headers) {
        ShortVector e = TREE.firstEven, o = TREE.firstOdd;
        for (int g = 0; g < groups; g++) {
            MemorySegment span = w.asSlice(base + (long) g * blocks * T2pBlock.BYTES, (long) blocks * T2pBlock.BYTES);
            for (int b = 0; b < blocks; b++) {
                int slot = g * paddedBlocks + b;
                long at = (long) b * T2pBlock.BYTES;
                headers[slot] = span.get(HEADER, at);
                IntVector sum = IntVector.zero(Simd.I);
                for (int c = 0; c < CHUNKS; c++) {
                    int a = (b * CHUNKS + c) * 8 * Simd.LS;
                    ShortVector y0 = ShortVector.fromArray(Simd.S, act, a), y1 = ShortVector.fromArray(Simd.S, act, a + Simd.LS);
                    ShortVector y2 = ShortVector.fromArray(Simd.S, act, a + 2 * Simd.LS), y3 = ShortVector.fromArray(Simd.S, act, a + 3 * Simd.LS);
                    ShortVector y4 = ShortVector.fromArray(Simd.S, act, a + 4 * Simd.LS), y5 = ShortVector.fromArray(Simd.S, act, a + 5 * Simd.LS);
                    ShortVector y6 = ShortVector.fromArray(Simd.S, act, a + 6 * Simd.LS), y7 = ShortVector.fromArray(Simd.S, act, a + 7 * Simd.LS);
                    long code = at + T2pBlock.CODES_OFFSET + (long) c * Simd.VB;
                    ShortVector v = ByteVector.fromMemorySegment(Simd.B, span, code, ByteOrder.LITTLE_ENDIAN).reinterpretAsShorts(), vh = v.lanewise(LSHR, 8);
                    ShortVector p0 = v.and((short) 0x03).mul(y0).add(v.and((short) 0x0C).mul(y1))
                            .add(v.lanewise(LSHR, 2).and((short) 0x0C).mul(y2)).add(v.lanewise(LSHR, 4).and((short) 0x0C).mul(y3))
                            .add(vh.and((short) 0x03).mul(y4)).add(vh.and((short) 0x0C).mul(y5))
                            .add(v.lanewise(LSHR, 10).and((short) 0x0C).mul(y6)).add(v.lanewise(LSHR, 14).mul(y7));
                    v = ByteVector.fromMemorySegment(Simd.B, span, code + T2pBlock.PAIR_BYTES, ByteOrder.LITTLE_ENDIAN).reinterpretAsShorts();
                    vh = v.lanewise(LSHR, 8);
                    ShortVector p1 = v.and((short) 0x03).mul(y0).add(v.and((short) 0x0C).mul(y1))
                            .add(v.lanewise(LSHR, 2).and((short) 0x0C).mul(y2)).add(v.lanewise(LSHR, 4).and((short) 0x0C).mul(y3))
                            .add(vh.and((short) 0x03).mul(y4)).add(vh.and((short) 0x0C).mul(y5))
                            .add(v.lanewise(LSHR, 10).and((short) 0x0C).mul(y6)).add(v.lanewise(LSHR, 14).mul(y7));
                    IntVector r = e.selectFrom(p0, p1).add(o.selectFrom(p0, p1)).reinterpretAsInts();
                    sum = sum.add(r.lanewise(LSHL, 16).lanewise(ASHR, 16).add(r.lanewise(ASHR, 16)));
                }
                sum.intoArray(tree, slot * Simd.LI);
            }
        }
    }

    // ---------------------------------------------------------------- prefill

    /**
     * Tiles of {@value #TILE} columns: each pair chunk is decoded once per block into sixteen slot
     * vectors and multiplied against the tile's columns. Batches of {@value #PREFILL_GROUPS} row groups
     * are the outer loop (their codes stay in L2), tiles the next, then spans of {@link #SPAN_BLOCKS}
     * blocks that every row group of the batch passes over (the span's activations stay in L1); the
     * span's products of every {@link #PARTIALS} row groups go to the outputs at once
     * ({@link #spanOutputs}), so the tree stays small (an 8 KiB tree against 32 KiB for all 16 row
     * groups at once, which ran slower and less steadily). A last partial tile is padded with zero
     * columns; only real outputs are kept. The columns are arranged ({@link #prepare}) on all threads.
     */
    private void prefill(ActivationBlocks[] xs, int[][] dotsOut, float[] yOut) {
        int tiles = (xs.length + TILE - 1) / TILE;
        Prepared[] p = new Prepared[tiles * TILE];
        pool.forRange(p.length, cols, (worker, start, end) -> {
            for (int c = start; c < end; c++) p[c] = prepare(c < xs.length ? xs[c] : ActivationBlocks.zeros(cols));
        });
        short[][] acts = new short[p.length][];
        for (int c = 0; c < p.length; c++) acts[c] = p[c].act;
        int groups = rows / 4, batches = (groups + PREFILL_GROUPS - 1) / PREFILL_GROUPS;
        int blockInts = PARTIALS * Simd.LI, column = SPAN_BLOCKS * blockInts;
        pool.forRange(batches, 4L * PREFILL_GROUPS * cols * xs.length, (worker, start, end) -> {
            Scratch s = Scratch.mine();
            int[] tree = s.tree(TILE * column);
            long[] headers = s.headers(paddedBlocks * PREFILL_GROUPS);
            float[] d = s.scales(paddedBlocks * PREFILL_GROUPS * 4);
            for (int g0 = start * PREFILL_GROUPS; g0 < Math.min(groups, end * PREFILL_GROUPS); g0 += PREFILL_GROUPS) {
                int n = Math.min(PREFILL_GROUPS, groups - g0);
                for (int b = 0; b < blocks; b++) {
                    for (int g = 0; g < n; g++) headers[b * PREFILL_GROUPS + g] = data.get(HEADER, T2pBlock.blockOffset(g0 + g, b, cols));
                }
                LaneTree.fp16(headers, blocks * PREFILL_GROUPS * 4, d);
                for (int t = 0; t < tiles; t++) {
                    int first = t * TILE, live = Math.min(TILE, xs.length - first);
                    for (int b0 = 0; b0 < blocks; b0 += SPAN_BLOCKS) {
                        int b1 = Math.min(blocks, b0 + SPAN_BLOCKS);
                        for (int q = 0; q < n; q += PARTIALS) {
                            int m = Math.min(PARTIALS, n - q);
                            for (int g = 0; g < m; g++) {
                                tileSums(data, T2pBlock.blockOffset(g0 + q + g, 0, cols), b0, b1, acts, first, tree, g * Simd.LI - b0 * blockInts, blockInts, column);
                            }
                            if (yOut != null) spanOutputs(tree, column, m, b0, b1, p, first, live, d, q, yOut, rows, 4 * (g0 + q));
                            if (dotsOut != null) spanDots(tree, column, m, b0, b1, p, first, live, dotsOut, 4 * (g0 + q), blocks);
                        }
                    }
                }
            }
        });
    }

    /**
     * Adds one span's terms to the outputs of n ≤ {@link #PARTIALS} row groups (rows from {@code row0},
     * group q of the batch on) against the columns first .. first+columns−1. tree holds the first tree
     * step of block b, row group g, column c at c·column + ((b − b0)·PARTIALS + g)·LI, so its last levels
     * over the row groups leave one vector of their rows' dots, in output order; d holds the batch's
     * row scales at ((b·{@value #PREFILL_GROUPS} + g)·4 + r). The terms dot · (d · xs) are added block by
     * block in ascending order, the additions of the shared formula in its order, the sums held in
     * registers across the span (zero at its first block), so the outputs hold the bits of one sum over
     * all blocks. (Sums kept in a scratch beside the tree and copied out after a tile's last span
     * were no faster.)
     */
    private static void spanOutputs(int[] tree, int column, int n, int b0, int b1, Prepared[] p, int first, int columns,
                                    float[] d, int q, float[] y, int rows, int row0) {
        int w = Simd.LI;
        IntVector even = LaneTree.EVEN, odd = LaneTree.ODD;
        boolean whole = n == PARTIALS;   // else a last batch's partial vector of row groups: masked
        // Never null, though only a partial vector uses it: C2 moved the unboxing of a null mask here out
        // of the branch that needs it and the JVM crashed (SIGSEGV in this method, JDK 25.0.3).
        VectorMask<Float> live = Simd.F.indexInRange(0, 4 * n);
        for (int c = 0; c < columns; c++) {
            Prepared x = p[first + c];
            int yAt = (first + c) * rows + row0;
            FloatVector acc = b0 == 0 ? FloatVector.zero(Simd.F)
                    : whole ? FloatVector.fromArray(Simd.F, y, yAt) : FloatVector.fromArray(Simd.F, y, yAt, live);
            for (int b = b0; b < b1; b++) {
                int in = c * column + (b - b0) * PARTIALS * w;
                if (LEVELS > 2) LaneTree.reduce(tree, in, PARTIALS, LEVELS - 2);
                IntVector dot;
                if (LEVELS >= 2) {
                    IntVector a0 = IntVector.fromArray(Simd.I, tree, in), a1 = IntVector.fromArray(Simd.I, tree, in + w);
                    IntVector a2 = IntVector.fromArray(Simd.I, tree, in + 2 * w), a3 = IntVector.fromArray(Simd.I, tree, in + 3 * w);
                    IntVector lo = even.selectFrom(a0, a1).add(odd.selectFrom(a0, a1)), hi = even.selectFrom(a2, a3).add(odd.selectFrom(a2, a3));
                    dot = even.selectFrom(lo, hi).add(odd.selectFrom(lo, hi));
                } else if (LEVELS == 1) {
                    IntVector a0 = IntVector.fromArray(Simd.I, tree, in), a1 = IntVector.fromArray(Simd.I, tree, in + w);
                    dot = even.selectFrom(a0, a1).add(odd.selectFrom(a0, a1));
                } else {
                    dot = IntVector.fromArray(Simd.I, tree, in);
                }
                dot = dot.lanewise(ASHR, 2).sub(x.sums4[4 * b]);
                acc = acc.add(((FloatVector) dot.convertShape(I2F, Simd.F, 0))
                        .mul(FloatVector.fromArray(Simd.F, d, (b * PREFILL_GROUPS + q) * 4).mul(x.scales4[4 * b])));
            }
            if (whole) acc.intoArray(y, yAt);
            else acc.intoArray(y, yAt, live);
        }
    }

    /** The dots path of {@link #spanOutputs}: each block's integer dots of the same rows and columns, into dots[column][row · blocks + b]. */
    private static void spanDots(int[] tree, int column, int n, int b0, int b1, Prepared[] p, int first, int columns,
                                 int[][] dots, int row0, int blocks) {
        for (int c = 0; c < columns; c++) {
            Prepared x = p[first + c];
            LaneTree.reduce(tree, c * column, (b1 - b0) * PARTIALS, LEVELS);
            for (int b = b0; b < b1; b++) {
                for (int g = 0; g < n; g++) {
                    for (int r = 0; r < 4; r++) {
                        int sixteen = tree[c * column + ((b - b0) * PARTIALS + g) * 4 + r];
                        dots[first + c][(row0 + 4 * g + r) * blocks + b] = (sixteen >> 2) - x.sums4[4 * b + r];
                    }
                }
            }
        }
    }

    /**
     * For blocks b in [from, to): tree[treeAt + c·column + b·blockInts ..] = first tree step over pairs
     * 0 and 1 of block b against column {@code acts[first + c]} (summed over chunks); each pair chunk is
     * decoded once into sixteen slot vectors, kept in registers across the {@value #TILE} columns, and
     * each column's step is stored at once (no accumulator held across columns), which ran faster than
     * four columns with per-column accumulators.
     */
    private static void tileSums(MemorySegment w, long base, int from, int to, short[][] acts, int first,
                                 int[] tree, int treeAt, int blockInts, int column) {
        ShortVector e = TREE.firstEven, o = TREE.firstOdd;
        for (int b = from; b < to; b++) {
            long at = base + (long) b * T2pBlock.BYTES;
            for (int ch = 0; ch < CHUNKS; ch++) {
                int a = (b * CHUNKS + ch) * 8 * Simd.LS;
                long code = at + T2pBlock.CODES_OFFSET + (long) ch * Simd.VB;
                ShortVector v = ByteVector.fromMemorySegment(Simd.B, w, code, ByteOrder.LITTLE_ENDIAN).reinterpretAsShorts();
                ShortVector w0 = v.and((short) 0x03), w1 = v.and((short) 0x0C), w2 = v.lanewise(LSHR, 2).and((short) 0x0C),
                        w3 = v.lanewise(LSHR, 4).and((short) 0x0C), w4 = v.lanewise(LSHR, 8).and((short) 0x03),
                        w5 = v.lanewise(LSHR, 8).and((short) 0x0C), w6 = v.lanewise(LSHR, 10).and((short) 0x0C),
                        w7 = v.lanewise(LSHR, 14);
                v = ByteVector.fromMemorySegment(Simd.B, w, code + T2pBlock.PAIR_BYTES, ByteOrder.LITTLE_ENDIAN).reinterpretAsShorts();
                ShortVector z0 = v.and((short) 0x03), z1 = v.and((short) 0x0C), z2 = v.lanewise(LSHR, 2).and((short) 0x0C),
                        z3 = v.lanewise(LSHR, 4).and((short) 0x0C), z4 = v.lanewise(LSHR, 8).and((short) 0x03),
                        z5 = v.lanewise(LSHR, 8).and((short) 0x0C), z6 = v.lanewise(LSHR, 10).and((short) 0x0C),
                        z7 = v.lanewise(LSHR, 14);
                for (int c = 0; c < TILE; c++) {
                    short[] act = acts[first + c];
                    ShortVector y0 = ShortVector.fromArray(Simd.S, act, a), y1 = ShortVector.fromArray(Simd.S, act, a + Simd.LS);
                    ShortVector y2 = ShortVector.fromArray(Simd.S, act, a + 2 * Simd.LS), y3 = ShortVector.fromArray(Simd.S, act, a + 3 * Simd.LS);
                    ShortVector y4 = ShortVector.fromArray(Simd.S, act, a + 4 * Simd.LS), y5 = ShortVector.fromArray(Simd.S, act, a + 5 * Simd.LS);
                    ShortVector y6 = ShortVector.fromArray(Simd.S, act, a + 6 * Simd.LS), y7 = ShortVector.fromArray(Simd.S, act, a + 7 * Simd.LS);
                    ShortVector p0 = w0.mul(y0).add(w1.mul(y1)).add(w2.mul(y2)).add(w3.mul(y3))
                            .add(w4.mul(y4)).add(w5.mul(y5)).add(w6.mul(y6)).add(w7.mul(y7));
                    ShortVector p1 = z0.mul(y0).add(z1.mul(y1)).add(z2.mul(y2)).add(z3.mul(y3))
                            .add(z4.mul(y4)).add(z5.mul(y5)).add(z6.mul(y6)).add(z7.mul(y7));
                    IntVector r = e.selectFrom(p0, p1).add(o.selectFrom(p0, p1)).reinterpretAsInts();
                    r = r.lanewise(LSHL, 16).lanewise(ASHR, 16).add(r.lanewise(ASHR, 16));
                    int t = treeAt + c * column + b * blockInts;
                    if (ch > 0) r = r.add(IntVector.fromArray(Simd.I, tree, t));
                    r.intoArray(tree, t);
                }
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
            int[] tree = new int[paddedBlocks * Simd.LI], dots = new int[paddedBlocks * 4];
            long[] headers = new long[paddedBlocks];
            for (int g = 0; g < rows / 4; g++) {
                groupDots(g, 1, p, tree, headers, dots);
                for (int r = 0; r < 4; r++) for (int b = 0; b < blocks; b++) out[0][(4 * g + r) * blocks + b] = dots[4 * b + r];
            }
        } else {
            prefill(xs, out, null);
        }
        return out;
    }

    // ---------------------------------------------------------------- scalar twin

    @Override
    public int[][] blockDotsScalar(ActivationBlocks... xs) {
        TernaryMatrix.checkColumns(cols, xs);
        int[][] out = new int[xs.length][rows * blocks];
        for (int c = 0; c < xs.length; c++) {
            for (int g = 0; g < rows / 4; g++) {
                for (int b = 0; b < blocks; b++) {
                    int[] four = scalarBlock(g, b, xs[c]);
                    for (int r = 0; r < 4; r++) out[c][(4 * g + r) * blocks + b] = four[r];
                }
            }
        }
        return out;
    }

    /**
     * The T2P write-up's decode for one block, one int accumulator per (row, slot): masks 0x03, 0x0C,
     * 0x30 leave u, 4u, 16u in place, slot 3 is shifted by 6; then a2 + 4·a1 + 16·(a0 + a3) −
     * 16·sum(y) is 16 · dot(w, y).
     */
    private int[] scalarBlock(int g, int b, ActivationBlocks x) {
        long off = T2pBlock.blockOffset(g, b, cols);
        int[][] acc = new int[4][4];
        for (int p = 0; p < 2; p++) {
            for (int wd = 0; wd < 4; wd++) {
                for (int j = 0; j < 16; j++) {
                    int v = data.get(ValueLayout.JAVA_BYTE, off + T2pBlock.codeByte(p, wd, j)) & 0xFF, row = T2pBlock.rowOf(p, j);
                    int q0 = x.q(b * 128 + T2pBlock.weightOf(wd, 0, j)), q1 = x.q(b * 128 + T2pBlock.weightOf(wd, 1, j));
                    int q2 = x.q(b * 128 + T2pBlock.weightOf(wd, 2, j)), q3 = x.q(b * 128 + T2pBlock.weightOf(wd, 3, j));
                    acc[row][0] += (v & 0x03) * q0;
                    acc[row][1] += (v & 0x0C) * q1;
                    acc[row][2] += (v & 0x30) * q2;
                    acc[row][3] += (v >>> 6) * q3;
                }
            }
        }
        int[] dots = new int[4];
        for (int r = 0; r < 4; r++) {
            int sixteenDot = acc[r][2] + 4 * acc[r][1] + 16 * (acc[r][0] + acc[r][3]) - 16 * x.sum(b);
            dots[r] = sixteenDot / 16;
        }
        return dots;
    }
}
