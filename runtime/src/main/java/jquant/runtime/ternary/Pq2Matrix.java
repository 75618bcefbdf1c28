package jquant.runtime.ternary;

import static jdk.incubator.vector.VectorOperators.ASHR;
import static jdk.incubator.vector.VectorOperators.LSHL;
import static jdk.incubator.vector.VectorOperators.LSHR;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import jquant.formats.quant.Pq2Block;

/**
 * Ternary matrix in the stock PQ2_0 layout ({@link Pq2Block}), with the stock way to unpack it: shift,
 * mask, subtract 1, multiply. Two consecutive blocks of a row fill one 512-bit register (two loads
 * and a blend, since 2 scale bytes sit between their codes); viewed as 32 short lanes, lane i of a
 * block holds weights 8i..8i+3 (lo byte) and 8i+4..8i+7 (hi byte), slot s of a byte at bits 2s.
 * Products (w ∈ {−1..+2}) are at most 254, eight per lane; a {@link LaneTree} turns the partial
 * sums into per-block ints. Each loop iteration takes four blocks (two pair registers), as the T2P
 * kernel takes the two pairs of a block. This is the baseline the T2P layout is measured against, with the same
 * species, the same activation precomputation and the same reduction.
 */
public final class Pq2Matrix implements TernaryMatrix {

    /** Activation columns per prefill tile (as T2P). */
    public static final int TILE = 4;
    /** Prefill rows per batch (as T2P's 16 row groups): the batch's codes and a tile's activations stay in L2. */
    static final int ROW_BATCH = 64;
    /** Shorts of arranged activations per block pair: 8 slot vectors × 32 lanes. */
    static final int ACT_PER_PAIR = 256;
    /** Stride of block pairs in the row. */
    private static final int PAIR_STRIDE = 2 * Pq2Block.BYTES;
    /** Bytes of four blocks, the unit of one loop iteration (two pairs). */
    private static final int QUAD_BYTES = 4 * Pq2Block.BYTES;

    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_512;
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_512;
    private static final VectorMask<Byte> UPPER = VectorMask.fromLong(B, 0xFFFF_FFFF_0000_0000L);
    private static final LaneTree TREE = LaneTree.halves();

    private final byte[] data;
    private final int rows, cols, blocks, pairs;
    private final int[] noOffset;
    private final RowPool pool;

    public Pq2Matrix(byte[] data, int rows, int cols, RowPool pool) {
        if (rows <= 0 || cols <= 0 || cols % Pq2Block.WEIGHTS != 0 || data.length != rows * Pq2Block.rowBytes(cols)) {
            throw new IllegalArgumentException("PQ2_0 " + rows + "×" + cols + " needs cols % 128 == 0 and "
                    + (cols % 128 == 0 ? rows * Pq2Block.rowBytes(cols) : "?") + " bytes, got " + data.length);
        }
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / Pq2Block.WEIGHTS;
        this.pairs = (blocks + 1) / 2;
        this.noOffset = new int[chunked(blocks) * 4];
        this.pool = pool;
    }

    @Override public int rows() { return rows; }
    @Override public int cols() { return cols; }
    @Override public long packedBytes() { return data.length; }

    /** Lane l of slot vector vi (half h = vi / 4, slot s = vi % 4) of pair P: block 2P + l/16, weight 8·(l mod 16) + 4h + s. */
    static short[] arrange(ActivationBlocks x) {
        int pairs = (x.blocks() + 1) / 2;
        short[] out = new short[(pairs + 1) / 2 * 2 * ACT_PER_PAIR];
        for (int p = 0; p < pairs; p++) {
            for (int vi = 0; vi < 8; vi++) {
                for (int l = 0; l < 32; l++) {
                    int b = 2 * p + l / 16, k = 8 * (l % 16) + 4 * (vi / 4) + vi % 4;
                    if (b < x.blocks()) out[p * ACT_PER_PAIR + vi * 32 + l] = x.q(b * 128 + k);
                }
            }
        }
        return out;
    }

    private static int chunked(int blocks) { return (blocks + 15) / 16 * 16; }

    /** Per-thread scratch, sized for a prefill tile, zero past the last block. */
    private final class Scratch {
        final int[] tree = new int[chunked(blocks) * 16], dots = new int[chunked(blocks) * 4], mine = new int[blocks];
        /** The row's last blocks (when not a multiple of four) copied with zero padding, so they read like a full quad. */
        final byte[] tail = new byte[QUAD_BYTES];

        /** Copies row r's last blocks % 4 blocks into {@link #tail}. */
        byte[] tail(int r) {
            int full = blocks / 4 * 4;
            System.arraycopy(data, (int) (r * Pq2Block.rowBytes(cols)) + full * Pq2Block.BYTES, tail, 0, (blocks - full) * Pq2Block.BYTES);
            return tail;
        }
    }

    // ---------------------------------------------------------------- decode (matvec)

    @Override
    public void matvec(ActivationBlocks x, float[] y) {
        TernaryMatrix.checkColumns(cols, new ActivationBlocks[] {x});
        if (y.length != rows) throw new IllegalArgumentException("output has " + y.length + " rows, matrix " + rows);
        short[] act = arrange(x);
        pool.forEach(rows, (from, to) -> {
            Scratch s = new Scratch();
            for (int r = from; r < to; r++) {
                rowDots(r, act, s);
                y[r] = output(r, s.dots, 1, 0, x);
            }
        });
    }

    /** s.dots[b] of row r: four blocks (two pairs) and the first tree step per iteration, then the last step. */
    private void rowDots(int r, short[] act, Scratch s) {
        int quads = blocks / 4;
        quadSums(data, (int) (r * Pq2Block.rowBytes(cols)) + Pq2Block.CODES_OFFSET, 0, quads, act, s.tree);
        if (quads * 4 < blocks) quadSums(s.tail(r), Pq2Block.CODES_OFFSET, quads, 1, act, s.tree);
        LaneTree.last(s.tree, chunked(blocks) / 16, 0, noOffset, 0, s.dots, 0);
    }

    /**
     * tree[16q ..] for quads q0 .. q0+count−1 read from src[off + (q − q0)·136]: blocks 4q .. 4q+3 as two
     * pair registers (two loads and a blend each), unpacked the stock way, through the first tree step.
     */
    private static void quadSums(byte[] src, int off, int q0, int count, short[] act, int[] tree) {
        ShortVector e = TREE.firstEven, o = TREE.firstOdd;
        for (int i = 0; i < count; i++) {
            int at = off + i * QUAD_BYTES, a = 2 * (q0 + i) * ACT_PER_PAIR;
            ShortVector v = ByteVector.fromArray(B, src, at).blend(ByteVector.fromArray(B, src, at + Pq2Block.CODES_OFFSET), UPPER)
                    .reinterpretAsShorts();
            ShortVector p0 = v.and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a))
                    .add(v.lanewise(LSHR, 2).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 32)))
                    .add(v.lanewise(LSHR, 4).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 64)))
                    .add(v.lanewise(LSHR, 6).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 96)))
                    .add(v.lanewise(LSHR, 8).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 128)))
                    .add(v.lanewise(LSHR, 10).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 160)))
                    .add(v.lanewise(LSHR, 12).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 192)))
                    .add(v.lanewise(LSHR, 14).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 224)));
            at += PAIR_STRIDE;
            a += ACT_PER_PAIR;
            v = ByteVector.fromArray(B, src, at).blend(ByteVector.fromArray(B, src, at + Pq2Block.CODES_OFFSET), UPPER)
                    .reinterpretAsShorts();
            ShortVector p1 = v.and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a))
                    .add(v.lanewise(LSHR, 2).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 32)))
                    .add(v.lanewise(LSHR, 4).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 64)))
                    .add(v.lanewise(LSHR, 6).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 96)))
                    .add(v.lanewise(LSHR, 8).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 128)))
                    .add(v.lanewise(LSHR, 10).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 160)))
                    .add(v.lanewise(LSHR, 12).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 192)))
                    .add(v.lanewise(LSHR, 14).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 224)));
            IntVector r = e.selectFrom(p0, p1).add(o.selectFrom(p0, p1)).reinterpretAsInts();
            r.lanewise(LSHL, 16).lanewise(ASHR, 16).add(r.lanewise(ASHR, 16)).intoArray(tree, 16 * (q0 + i));
        }
    }

    @Override
    public float scale(int row, int block) {
        return Float.float16ToFloat(Pq2Block.scaleBits(data, (int) (row * Pq2Block.rowBytes(cols)) + block * Pq2Block.BYTES));
    }

    private float output(int r, int[] dots, int stride, int lane, ActivationBlocks x) {
        float acc = 0f;
        for (int b = 0; b < blocks; b++) acc = ActivationBlocks.term(acc, dots[b * stride + lane], scale(r, b), x.scale(b));
        return acc;
    }

    // ---------------------------------------------------------------- prefill

    /**
     * Tiles of {@value #TILE} columns: two block pairs are unpacked once per iteration and multiplied
     * against the four columns, each column through the first tree step; dots[16q + 4c + b mod 4].
     */
    private void prefill(ActivationBlocks[] xs, int[][] dotsOut, float[][] yOut) {
        int tiles = (xs.length + TILE - 1) / TILE;
        short[][] act = new short[tiles * TILE][];
        for (int c = 0; c < act.length; c++) act[c] = arrange(c < xs.length ? xs[c] : ActivationBlocks.zeros(cols));
        pool.forEach(rows, (from, to) -> {
            Scratch s = new Scratch();
            int quads = blocks / 4;
            for (int r0 = from; r0 < to; r0 += ROW_BATCH) {
                for (int t = 0; t < tiles; t++) {
                    for (int r = r0; r < Math.min(to, r0 + ROW_BATCH); r++) {
                        int first = t * TILE;
                        short[] a0 = act[first], a1 = act[first + 1], a2 = act[first + 2], a3 = act[first + 3];
                        tileQuads(data, (int) (r * Pq2Block.rowBytes(cols)) + Pq2Block.CODES_OFFSET, 0, quads, a0, a1, a2, a3, s.tree);
                        if (quads * 4 < blocks) tileQuads(s.tail(r), Pq2Block.CODES_OFFSET, quads, 1, a0, a1, a2, a3, s.tree);
                        LaneTree.last(s.tree, (blocks + 3) / 4, 0, noOffset, 0, s.dots, 0);
                        for (int c = 0; c < Math.min(TILE, xs.length - first); c++) {
                            for (int b = 0; b < blocks; b++) s.mine[b] = s.dots[(b / 4) * 16 + 4 * c + b % 4];
                            if (yOut != null) yOut[first + c][r] = output(r, s.mine, 1, 0, xs[first + c]);
                            if (dotsOut != null) System.arraycopy(s.mine, 0, dotsOut[first + c], r * blocks, blocks);
                        }
                    }
                }
            }
        });
    }

    /** tree[64q + 16c ..]: first tree step of column c over quad q's two pairs, unpacked once for all columns. */
    private static void tileQuads(byte[] src, int off, int q0, int count, short[] a0, short[] a1, short[] a2, short[] a3,
                                  int[] tree) {
        ShortVector e = TREE.firstEven, o = TREE.firstOdd;
        for (int i = 0; i < count; i++) {
            int at = off + i * QUAD_BYTES, a = 2 * (q0 + i) * ACT_PER_PAIR;
            ShortVector v = ByteVector.fromArray(B, src, at).blend(ByteVector.fromArray(B, src, at + Pq2Block.CODES_OFFSET), UPPER)
                    .reinterpretAsShorts();
            ShortVector w0 = v.and((short) 3).sub((short) 1), w1 = v.lanewise(LSHR, 2).and((short) 3).sub((short) 1),
                    w2 = v.lanewise(LSHR, 4).and((short) 3).sub((short) 1), w3 = v.lanewise(LSHR, 6).and((short) 3).sub((short) 1),
                    w4 = v.lanewise(LSHR, 8).and((short) 3).sub((short) 1), w5 = v.lanewise(LSHR, 10).and((short) 3).sub((short) 1),
                    w6 = v.lanewise(LSHR, 12).and((short) 3).sub((short) 1), w7 = v.lanewise(LSHR, 14).sub((short) 1);
            v = ByteVector.fromArray(B, src, at + PAIR_STRIDE)
                    .blend(ByteVector.fromArray(B, src, at + PAIR_STRIDE + Pq2Block.CODES_OFFSET), UPPER).reinterpretAsShorts();
            ShortVector z0 = v.and((short) 3).sub((short) 1), z1 = v.lanewise(LSHR, 2).and((short) 3).sub((short) 1),
                    z2 = v.lanewise(LSHR, 4).and((short) 3).sub((short) 1), z3 = v.lanewise(LSHR, 6).and((short) 3).sub((short) 1),
                    z4 = v.lanewise(LSHR, 8).and((short) 3).sub((short) 1), z5 = v.lanewise(LSHR, 10).and((short) 3).sub((short) 1),
                    z6 = v.lanewise(LSHR, 12).and((short) 3).sub((short) 1), z7 = v.lanewise(LSHR, 14).sub((short) 1);
            for (int c = 0; c < TILE; c++) {
                short[] y = c == 0 ? a0 : c == 1 ? a1 : c == 2 ? a2 : a3;
                ShortVector p0 = w0.mul(ShortVector.fromArray(S, y, a)).add(w1.mul(ShortVector.fromArray(S, y, a + 32)))
                        .add(w2.mul(ShortVector.fromArray(S, y, a + 64))).add(w3.mul(ShortVector.fromArray(S, y, a + 96)))
                        .add(w4.mul(ShortVector.fromArray(S, y, a + 128))).add(w5.mul(ShortVector.fromArray(S, y, a + 160)))
                        .add(w6.mul(ShortVector.fromArray(S, y, a + 192))).add(w7.mul(ShortVector.fromArray(S, y, a + 224)));
                int a1x = a + ACT_PER_PAIR;
                ShortVector p1 = z0.mul(ShortVector.fromArray(S, y, a1x)).add(z1.mul(ShortVector.fromArray(S, y, a1x + 32)))
                        .add(z2.mul(ShortVector.fromArray(S, y, a1x + 64))).add(z3.mul(ShortVector.fromArray(S, y, a1x + 96)))
                        .add(z4.mul(ShortVector.fromArray(S, y, a1x + 128))).add(z5.mul(ShortVector.fromArray(S, y, a1x + 160)))
                        .add(z6.mul(ShortVector.fromArray(S, y, a1x + 192))).add(z7.mul(ShortVector.fromArray(S, y, a1x + 224)));
                IntVector r = e.selectFrom(p0, p1).add(o.selectFrom(p0, p1)).reinterpretAsInts();
                r.lanewise(LSHL, 16).lanewise(ASHR, 16).add(r.lanewise(ASHR, 16)).intoArray(tree, 64 * (q0 + i) + 16 * c);
            }
        }
    }

    // ---------------------------------------------------------------- public entry points

    @Override
    public float[][] multiply(ActivationBlocks... xs) {
        TernaryMatrix.checkColumns(cols, xs);
        float[][] y = new float[xs.length][rows];
        if (xs.length == 1) matvec(xs[0], y[0]);
        else prefill(xs, null, y);
        return y;
    }

    @Override
    public int[][] blockDots(ActivationBlocks... xs) {
        TernaryMatrix.checkColumns(cols, xs);
        int[][] out = new int[xs.length][rows * blocks];
        if (xs.length == 1) {
            short[] act = arrange(xs[0]);
            Scratch s = new Scratch();
            for (int r = 0; r < rows; r++) {
                rowDots(r, act, s);
                System.arraycopy(s.dots, 0, out[0], r * blocks, blocks);
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
            for (int r = 0; r < rows; r++) {
                for (int b = 0; b < blocks; b++) {
                    int off = (int) (r * Pq2Block.rowBytes(cols)) + b * Pq2Block.BYTES, dot = 0;
                    for (int j = 0; j < 128; j++) dot += (Pq2Block.storedCode(data, off, j) - 1) * xs[c].q(b * 128 + j);
                    out[c][r * blocks + b] = dot;
                }
            }
        }
        return out;
    }

}
