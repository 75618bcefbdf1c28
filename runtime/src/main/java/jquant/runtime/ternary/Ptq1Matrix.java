package jquant.runtime.ternary;

import static jdk.incubator.vector.VectorOperators.ASHR;
import static jdk.incubator.vector.VectorOperators.GE;
import static jdk.incubator.vector.VectorOperators.LSHL;
import static jdk.incubator.vector.VectorOperators.ZERO_EXTEND_B2S;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jquant.formats.DType;
import jquant.formats.quant.Ptq1Block;
import jquant.core.WorkerPool;

/**
 * Ternary matrix in PrismML's 1.75-bit PTQ1_0 layout ({@link Ptq1Block}), computed in place, decode
 * only (a batch runs one matvec per column). The 26 code bytes of a block are zero-extended into
 * short lanes (one vector at 512 bits, 2 or 4 at 256 or 128, masked past the codes); digit n of every
 * byte is found from v = b·3^n mod 256 by two thresholds, trit = (v ≥ 86) + (v ≥ 171), so no multiply
 * by the activation is needed: Σ w·y = Σ_{v≥86} y + Σ_{v≥171} y − sum(y), two masked adds per digit.
 * v advances by v ← 3v mod 256.
 */
public final class Ptq1Matrix implements TernaryMatrix {

    private static final int CODE_BYTES = Ptq1Block.QS_BYTES + Ptq1Block.QH_BYTES;
    /** Vectors of short lanes per block (32 lanes cover the 26 code bytes). */
    private static final int CHUNKS = Math.max(1, 32 / Simd.LS);
    /** Shorts of arranged activations per block: 5 digit vectors per chunk. */
    static final int ACT_PER_BLOCK = 5 * Simd.LS * CHUNKS;
    /** Tree levels from LI/2 partials per block (after the first step over two blocks) to one. */
    private static final int LEVELS = Integer.numberOfTrailingZeros(Simd.LI / 2);
    private static final ValueLayout.OfShort FP16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final LaneTree TREE = LaneTree.halves();

    private final MemorySegment data;
    private final int rows, cols, blocks, pairs, treeVectors, paddedBlocks;
    private final WorkerPool pool;

    /** {@code data} holds {@code rows} rows of {@code cols/128} PTQ1_0 blocks; it is read in place, never copied. */
    public Ptq1Matrix(MemorySegment data, int rows, int cols, WorkerPool pool) {
        if (rows <= 0 || cols <= 0 || cols % Ptq1Block.WEIGHTS != 0
                || data.byteSize() != (long) rows * (cols / Ptq1Block.WEIGHTS) * Ptq1Block.BYTES) {
            throw new IllegalArgumentException("PTQ1_0 " + rows + "×" + cols + " needs cols % 128 == 0 and "
                    + (long) rows * (cols / 128) * Ptq1Block.BYTES + " bytes, got " + data.byteSize());
        }
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / Ptq1Block.WEIGHTS;
        this.pairs = (blocks + 1) / 2;
        this.treeVectors = Simd.roundUp(pairs, 1 << LEVELS);
        this.paddedBlocks = 2 * treeVectors;
        this.pool = pool;
    }

    @Override public int rows() { return rows; }
    @Override public int cols() { return cols; }
    @Override public DType type() { return DType.PTQ1_0; }

    @Override public long packedBytes() { return data.byteSize(); }

    /** Lane l of chunk c, digit vector n, meets the weight that digit n of code byte c·LS + l holds (0 if none). */
    short[] arrange(ActivationBlocks x) {
        short[] out = new short[paddedBlocks * ACT_PER_BLOCK];
        for (int b = 0; b < x.blocks(); b++) {
            for (int k = 0; k < Ptq1Block.WEIGHTS; k++) {
                int pos = Ptq1Block.byteOf(k);
                out[b * ACT_PER_BLOCK + (pos / Simd.LS * 5 + Ptq1Block.digitOf(k)) * Simd.LS + pos % Simd.LS] = x.q(b * 128 + k);
            }
        }
        return out;
    }

    @Override
    public void matvec(ActivationBlocks x, float[] y, int yOff) {
        TernaryMatrix.checkColumns(cols, new ActivationBlocks[] {x});
        if (yOff < 0 || y.length - yOff < rows) throw new IllegalArgumentException("output has room for " + (y.length - yOff) + " rows, matrix " + rows);
        short[] act = arrange(x);
        int[] sums = new int[paddedBlocks];
        float[] scales = new float[paddedBlocks];
        for (int b = 0; b < blocks; b++) {
            sums[b] = x.sum(b);
            scales[b] = x.scale(b);
        }
        pool.forRange(rows, cols, (worker, start, end) -> {
            Scratch s = Scratch.mine();
            int[] tree = s.tree(treeVectors * Simd.LI);
            short[] halves = s.shorts(paddedBlocks);
            float[] terms = s.terms(paddedBlocks), d = s.scales(paddedBlocks);
            for (int r = start; r < end; r++) {
                blockSums(data, (long) r * blocks * Ptq1Block.BYTES, blocks, pairs, act, tree);
                long base = (long) r * blocks * Ptq1Block.BYTES + Ptq1Block.SCALE_OFFSET;
                for (int b = 0; b < blocks; b++) halves[b] = data.get(FP16, base + (long) b * Ptq1Block.BYTES);
                LaneTree.fp16(halves, paddedBlocks, d);
                LaneTree.epilogue(tree, 0, 1, paddedBlocks, LEVELS, 0, sums, d, scales, terms);
                float acc = 0f;
                for (int b = 0; b < blocks; b++) acc += terms[b];
                y[yOff + r] = acc;
            }
        });
    }

    /** dots[b] of row r: two blocks and the first tree step per iteration, then the levels down to one int per block. */
    private void rowDots(int r, short[] act, int[] sums, int[] tree, int[] dots) {
        blockSums(data, (long) r * blocks * Ptq1Block.BYTES, blocks, pairs, act, tree);
        LaneTree.reduce(tree, 0, treeVectors, LEVELS);
        LaneTree.finish(tree, 0, 1, paddedBlocks, 0, sums, dots);
    }

    /**
     * tree[LI·i ..] for block pairs i &lt; pairs: per code byte, Σ over the five digits of
     * [v ≥ 86]·y + [v ≥ 171]·y with v = byte · 3^n mod 256 — the digit (0, 1, 2) times y without a
     * multiply. Loads are masked to the code bytes; a block past the last one reads nothing.
     */
    private static void blockSums(MemorySegment w, long base, int blocks, int pairs, short[] act, int[] tree) {
        ShortVector e = TREE.firstEven, o = TREE.firstOdd;
        for (int i = 0; i < pairs; i++) {
            // the chunks of a block are other bytes of it: summing them lane by lane keeps per-block totals
            ShortVector p0 = ShortVector.zero(Simd.S), p1 = p0;
            for (int c = 0; c < CHUNKS; c++) {
                int b = 2 * i + 0, first = c * Simd.LS, a = (b * CHUNKS + c) * 5 * Simd.LS;
                ShortVector v0 = (ShortVector) ByteVector.fromMemorySegment(Simd.B_HALF, w, base + (long) b * Ptq1Block.BYTES + first,
                        ByteOrder.LITTLE_ENDIAN, Simd.B_HALF.indexInRange(first, b < blocks ? CODE_BYTES : 0)).convertShape(ZERO_EXTEND_B2S, Simd.S, 0);
                ShortVector v1 = v0.mul((short) 3).and((short) 0xFF), v2 = v1.mul((short) 3).and((short) 0xFF);
                ShortVector v3 = v2.mul((short) 3).and((short) 0xFF), v4 = v3.mul((short) 3).and((short) 0xFF);
                ShortVector y0 = ShortVector.fromArray(Simd.S, act, a), y1 = ShortVector.fromArray(Simd.S, act, a + Simd.LS);
                ShortVector y2 = ShortVector.fromArray(Simd.S, act, a + 2 * Simd.LS), y3 = ShortVector.fromArray(Simd.S, act, a + 3 * Simd.LS);
                ShortVector y4 = ShortVector.fromArray(Simd.S, act, a + 4 * Simd.LS);
                p0 = p0.add(y0, v0.compare(GE, (short) 86)).add(y0, v0.compare(GE, (short) 171))
                        .add(y1, v1.compare(GE, (short) 86)).add(y1, v1.compare(GE, (short) 171))
                        .add(y2, v2.compare(GE, (short) 86)).add(y2, v2.compare(GE, (short) 171))
                        .add(y3, v3.compare(GE, (short) 86)).add(y3, v3.compare(GE, (short) 171))
                        .add(y4, v4.compare(GE, (short) 86)).add(y4, v4.compare(GE, (short) 171));
            }
            for (int c = 0; c < CHUNKS; c++) {
                int b = 2 * i + 1, first = c * Simd.LS, a = (b * CHUNKS + c) * 5 * Simd.LS;
                ShortVector v0 = (ShortVector) ByteVector.fromMemorySegment(Simd.B_HALF, w, base + (long) b * Ptq1Block.BYTES + first,
                        ByteOrder.LITTLE_ENDIAN, Simd.B_HALF.indexInRange(first, b < blocks ? CODE_BYTES : 0)).convertShape(ZERO_EXTEND_B2S, Simd.S, 0);
                ShortVector v1 = v0.mul((short) 3).and((short) 0xFF), v2 = v1.mul((short) 3).and((short) 0xFF);
                ShortVector v3 = v2.mul((short) 3).and((short) 0xFF), v4 = v3.mul((short) 3).and((short) 0xFF);
                ShortVector y0 = ShortVector.fromArray(Simd.S, act, a), y1 = ShortVector.fromArray(Simd.S, act, a + Simd.LS);
                ShortVector y2 = ShortVector.fromArray(Simd.S, act, a + 2 * Simd.LS), y3 = ShortVector.fromArray(Simd.S, act, a + 3 * Simd.LS);
                ShortVector y4 = ShortVector.fromArray(Simd.S, act, a + 4 * Simd.LS);
                p1 = p1.add(y0, v0.compare(GE, (short) 86)).add(y0, v0.compare(GE, (short) 171))
                        .add(y1, v1.compare(GE, (short) 86)).add(y1, v1.compare(GE, (short) 171))
                        .add(y2, v2.compare(GE, (short) 86)).add(y2, v2.compare(GE, (short) 171))
                        .add(y3, v3.compare(GE, (short) 86)).add(y3, v3.compare(GE, (short) 171))
                        .add(y4, v4.compare(GE, (short) 86)).add(y4, v4.compare(GE, (short) 171));
            }
            IntVector r = e.selectFrom(p0, p1).add(o.selectFrom(p0, p1)).reinterpretAsInts();
            r.lanewise(LSHL, 16).lanewise(ASHR, 16).add(r.lanewise(ASHR, 16)).intoArray(tree, i * Simd.LI);
        }
    }

    @Override
    public float scale(int row, int block) {
        return Float.float16ToFloat(data.get(FP16, ((long) row * blocks + block) * Ptq1Block.BYTES + Ptq1Block.SCALE_OFFSET));
    }

    @Override
    public void multiply(ActivationBlocks[] xs, float[] y) {
        TernaryMatrix.checkColumns(cols, xs);
        TernaryMatrix.checkOutput(rows, xs.length, y);
        for (int c = 0; c < xs.length; c++) matvec(xs[c], y, c * rows);
    }

    @Override
    public int[][] blockDots(ActivationBlocks... xs) {
        TernaryMatrix.checkColumns(cols, xs);
        int[][] out = new int[xs.length][rows * blocks];
        int[] tree = new int[treeVectors * Simd.LI], dots = new int[paddedBlocks], sums = new int[paddedBlocks];
        for (int c = 0; c < xs.length; c++) {
            short[] act = arrange(xs[c]);
            for (int b = 0; b < blocks; b++) sums[b] = xs[c].sum(b);
            for (int r = 0; r < rows; r++) {
                rowDots(r, act, sums, tree, dots);
                System.arraycopy(dots, 0, out[c], r * blocks, blocks);
            }
        }
        return out;
    }

    /** Scalar twin: the same thresholds on the same running product, one byte at a time. */
    @Override
    public int[][] blockDotsScalar(ActivationBlocks... xs) {
        TernaryMatrix.checkColumns(cols, xs);
        int[][] out = new int[xs.length][rows * blocks];
        for (int c = 0; c < xs.length; c++) {
            for (int r = 0; r < rows; r++) {
                for (int b = 0; b < blocks; b++) {
                    long off = ((long) r * blocks + b) * Ptq1Block.BYTES;
                    int dot = -xs[c].sum(b);
                    for (int k = 0; k < Ptq1Block.WEIGHTS; k++) {
                        int v = data.get(ValueLayout.JAVA_BYTE, off + Ptq1Block.byteOf(k)) & 0xFF;
                        for (int n = 0; n < Ptq1Block.digitOf(k); n++) v = v * 3 & 0xFF;
                        int y = xs[c].q(b * 128 + k);
                        dot += (v >= 86 ? y : 0) + (v >= 171 ? y : 0);
                    }
                    out[c][r * blocks + b] = dot;
                }
            }
        }
        return out;
    }
}
