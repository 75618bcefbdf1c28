package jquant.runtime.ternary;

import static jdk.incubator.vector.VectorOperators.ASHR;
import static jdk.incubator.vector.VectorOperators.GE;
import static jdk.incubator.vector.VectorOperators.LSHL;
import static jdk.incubator.vector.VectorOperators.ZERO_EXTEND_B2S;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import jquant.formats.quant.Ptq1Block;

/**
 * Ternary matrix in PrismML's 1.75-bit PTQ1_0 layout ({@link Ptq1Block}), decode only (a batch runs
 * one matvec per column). The 26 code bytes of a block are zero-extended into 32 short lanes; digit
 * n of every byte is found from v = b·3^n mod 256 by two thresholds, trit = (v ≥ 86) + (v ≥ 171), so
 * no multiply by the activation is needed: Σ w·y = Σ_{v≥86} y + Σ_{v≥171} y − sum(y), two masked adds
 * per digit. v advances by v ← 3v mod 256.
 */
public final class Ptq1Matrix implements TernaryMatrix {

    /** Shorts of arranged activations per block: 5 digit vectors × 32 lanes. */
    static final int ACT_PER_BLOCK = 160;

    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_256;
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_512;
    private static final VectorMask<Byte> CODE_BYTES = B.indexInRange(0, Ptq1Block.QS_BYTES + Ptq1Block.QH_BYTES);
    private static final VectorMask<Byte> NONE = B.maskAll(false);
    private static final ShortVector ZERO = ShortVector.zero(S);
    private static final LaneTree TREE = LaneTree.halves();

    private final byte[] data;
    private final int rows, cols, blocks;
    private final int[] noOffset;
    private final RowPool pool;

    public Ptq1Matrix(byte[] data, int rows, int cols, RowPool pool) {
        if (rows <= 0 || cols <= 0 || cols % Ptq1Block.WEIGHTS != 0
                || data.length != (long) rows * (cols / Ptq1Block.WEIGHTS) * Ptq1Block.BYTES) {
            throw new IllegalArgumentException("PTQ1_0 " + rows + "×" + cols + " needs cols % 128 == 0 and "
                    + (long) rows * (cols / 128) * Ptq1Block.BYTES + " bytes, got " + data.length);
        }
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / Ptq1Block.WEIGHTS;
        this.noOffset = new int[chunked(blocks) * 2];
        this.pool = pool;
    }

    @Override public int rows() { return rows; }
    @Override public int cols() { return cols; }
    @Override public long packedBytes() { return data.length; }

    /** Lane l of digit vector n meets the weight that digit n of code byte l holds (0 if none). */
    static short[] arrange(ActivationBlocks x) {
        short[] out = new short[(x.blocks() + 1) / 2 * 2 * ACT_PER_BLOCK];
        for (int b = 0; b < x.blocks(); b++) {
            for (int k = 0; k < Ptq1Block.WEIGHTS; k++) {
                out[b * ACT_PER_BLOCK + Ptq1Block.digitOf(k) * 32 + Ptq1Block.byteOf(k)] = x.q(b * 128 + k);
            }
        }
        return out;
    }

    private static int chunked(int blocks) { return (blocks + 7) / 8 * 8; }

    @Override
    public void matvec(ActivationBlocks x, float[] y) {
        TernaryMatrix.checkColumns(cols, new ActivationBlocks[] {x});
        if (y.length != rows) throw new IllegalArgumentException("output has " + y.length + " rows, matrix " + rows);
        short[] act = arrange(x);
        pool.forEach(rows, (from, to) -> {
            int[] halves = new int[chunked(blocks) * 2], tree = new int[chunked(blocks) * 8], dots = new int[blocks];
            for (int r = from; r < to; r++) {
                rowDots(r, act, x, tree, halves, dots);
                y[r] = output(r, dots, x);
            }
        });
    }

    /**
     * dots[b] of row r: two blocks and the first tree step per iteration, the last step over eight
     * blocks × two half-vectors, then each block's two half-sums added and sum(y) taken off.
     */
    private void rowDots(int r, short[] act, ActivationBlocks x, int[] tree, int[] halves, int[] dots) {
        int base = r * blocks * Ptq1Block.BYTES;
        blockSums(base, 0, blocks / 2, act, tree);
        if (blocks % 2 == 1) blockSums(base, blocks / 2, 1, act, tree);
        LaneTree.last(tree, chunked(blocks) / 8, 0, noOffset, 0, halves, 0);
        for (int i = 0; i < blocks; i++) dots[i] = halves[2 * i] + halves[2 * i + 1] - x.sum(i);
    }

    /**
     * tree[16i ..] for block pairs i0 .. i0+count−1: per code byte, Σ over the five digits of
     * [v ≥ 86]·y + [v ≥ 171]·y with v = byte · 3^n mod 256 — the digit (0, 1, 2) times y without a
     * multiply. A block past the last one (odd count) reads nothing and adds zero.
     */
    private void blockSums(int base, int i0, int count, short[] act, int[] tree) {
        ShortVector e = TREE.firstEven, o = TREE.firstOdd;
        for (int i = i0; i < i0 + count; i++) {
            int b = 2 * i, a = b * ACT_PER_BLOCK;
            ShortVector v0 = (ShortVector) ByteVector.fromArray(B, data, base + b * Ptq1Block.BYTES, CODE_BYTES)
                    .convertShape(ZERO_EXTEND_B2S, S, 0);
            ShortVector v1 = v0.mul((short) 3).and((short) 0xFF), v2 = v1.mul((short) 3).and((short) 0xFF);
            ShortVector v3 = v2.mul((short) 3).and((short) 0xFF), v4 = v3.mul((short) 3).and((short) 0xFF);
            ShortVector y0 = ShortVector.fromArray(S, act, a), y1 = ShortVector.fromArray(S, act, a + 32);
            ShortVector y2 = ShortVector.fromArray(S, act, a + 64), y3 = ShortVector.fromArray(S, act, a + 96);
            ShortVector y4 = ShortVector.fromArray(S, act, a + 128);
            ShortVector p0 = ZERO.add(y0, v0.compare(GE, (short) 86)).add(y0, v0.compare(GE, (short) 171))
                    .add(y1, v1.compare(GE, (short) 86)).add(y1, v1.compare(GE, (short) 171))
                    .add(y2, v2.compare(GE, (short) 86)).add(y2, v2.compare(GE, (short) 171))
                    .add(y3, v3.compare(GE, (short) 86)).add(y3, v3.compare(GE, (short) 171))
                    .add(y4, v4.compare(GE, (short) 86)).add(y4, v4.compare(GE, (short) 171));
            boolean second = b + 1 < blocks;
            a += ACT_PER_BLOCK;
            v0 = (ShortVector) ByteVector.fromArray(B, data, base + (b + 1) * Ptq1Block.BYTES, second ? CODE_BYTES : NONE)
                    .convertShape(ZERO_EXTEND_B2S, S, 0);
            v1 = v0.mul((short) 3).and((short) 0xFF);
            v2 = v1.mul((short) 3).and((short) 0xFF);
            v3 = v2.mul((short) 3).and((short) 0xFF);
            v4 = v3.mul((short) 3).and((short) 0xFF);
            y0 = ShortVector.fromArray(S, act, a);
            y1 = ShortVector.fromArray(S, act, a + 32);
            y2 = ShortVector.fromArray(S, act, a + 64);
            y3 = ShortVector.fromArray(S, act, a + 96);
            y4 = ShortVector.fromArray(S, act, a + 128);
            ShortVector p1 = ZERO.add(y0, v0.compare(GE, (short) 86)).add(y0, v0.compare(GE, (short) 171))
                    .add(y1, v1.compare(GE, (short) 86)).add(y1, v1.compare(GE, (short) 171))
                    .add(y2, v2.compare(GE, (short) 86)).add(y2, v2.compare(GE, (short) 171))
                    .add(y3, v3.compare(GE, (short) 86)).add(y3, v3.compare(GE, (short) 171))
                    .add(y4, v4.compare(GE, (short) 86)).add(y4, v4.compare(GE, (short) 171));
            IntVector r = e.selectFrom(p0, p1).add(o.selectFrom(p0, p1)).reinterpretAsInts();
            r.lanewise(LSHL, 16).lanewise(ASHR, 16).add(r.lanewise(ASHR, 16)).intoArray(tree, 16 * i);
        }
    }

    @Override
    public float scale(int row, int block) {
        int off = (row * blocks + block) * Ptq1Block.BYTES + Ptq1Block.SCALE_OFFSET;
        return Float.float16ToFloat((short) ((data[off] & 0xFF) | (data[off + 1] << 8)));
    }

    private float output(int r, int[] dots, ActivationBlocks x) {
        float acc = 0f;
        for (int b = 0; b < blocks; b++) acc = ActivationBlocks.term(acc, dots[b], scale(r, b), x.scale(b));
        return acc;
    }

    @Override
    public float[][] multiply(ActivationBlocks... xs) {
        TernaryMatrix.checkColumns(cols, xs);
        float[][] y = new float[xs.length][rows];
        for (int c = 0; c < xs.length; c++) matvec(xs[c], y[c]);
        return y;
    }

    @Override
    public int[][] blockDots(ActivationBlocks... xs) {
        TernaryMatrix.checkColumns(cols, xs);
        int[][] out = new int[xs.length][rows * blocks];
        int[] halves = new int[chunked(blocks) * 2], tree = new int[chunked(blocks) * 8], dots = new int[blocks];
        for (int c = 0; c < xs.length; c++) {
            short[] act = arrange(xs[c]);
            for (int r = 0; r < rows; r++) {
                rowDots(r, act, xs[c], tree, halves, dots);
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
                    int off = (r * blocks + b) * Ptq1Block.BYTES, dot = -xs[c].sum(b);
                    for (int k = 0; k < Ptq1Block.WEIGHTS; k++) {
                        int v = data[off + Ptq1Block.byteOf(k)] & 0xFF;
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
