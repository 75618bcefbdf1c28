package jquant.runtime.ternary;

import static jdk.incubator.vector.VectorOperators.LSHR;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import jquant.pack.ternary.Pq2Block;

/**
 * Ternary matrix in the stock PQ2_0 layout ({@link Pq2Block}), with the stock way to unpack it: shift,
 * mask, subtract 1, multiply. Two consecutive blocks of a row fill one 512-bit register (two loads
 * and a blend, since 2 scale bytes sit between their codes); viewed as 32 short lanes, lane i of a
 * block holds weights 8i..8i+3 (lo byte) and 8i+4..8i+7 (hi byte), slot s of a byte at bits 2s.
 * Products (w ∈ {−1..+2}) are at most 254, eight per lane; a {@link LaneTree} turns the partial
 * sums into per-block ints. This is the baseline the T2P layout is measured against, with the same
 * species, the same activation precomputation and the same reduction.
 */
public final class Pq2Matrix implements TernaryMatrix {

    /** Activation columns per prefill tile (as T2P). */
    public static final int TILE = 4;
    /** Shorts of arranged activations per block pair: 8 slot vectors × 32 lanes. */
    static final int ACT_PER_PAIR = 256;
    /** Stride of block pairs in the row, and of the padded copy of an odd last block. */
    private static final int PAIR_STRIDE = 2 * Pq2Block.BYTES;

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
        short[] out = new short[pairs * ACT_PER_PAIR];
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
        final short[] partial = new short[chunked(blocks) * 64];
        final int[] tree = new int[chunked(blocks) * 16], dots = new int[chunked(blocks) * 4], mine = new int[blocks];
        /** The odd last block of a row copied with zero padding, so it reads like a full pair. */
        final byte[] tail = new byte[PAIR_STRIDE];

        /** Where pair p of row r starts reading: the matrix, or the padded tail copy. */
        byte[] source(int r, int p) {
            if (2 * p + 1 < blocks) return data;
            System.arraycopy(data, (int) (r * Pq2Block.rowBytes(cols)) + 2 * p * Pq2Block.BYTES, tail, 0, Pq2Block.BYTES);
            return tail;
        }

        int offset(int r, int p) {
            return 2 * p + 1 < blocks ? (int) (r * Pq2Block.rowBytes(cols)) + p * PAIR_STRIDE + Pq2Block.CODES_OFFSET : Pq2Block.CODES_OFFSET;
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

    /** s.dots[b] of row r: block-pair partial sums, then the two halves of the tree. */
    private void rowDots(int r, short[] act, Scratch s) {
        int full = blocks / 2;
        pairSums(data, (int) (r * Pq2Block.rowBytes(cols)) + Pq2Block.CODES_OFFSET, 0, full, act, s.partial);
        if (full < pairs) pairSums(s.source(r, full), s.offset(r, full), full, 1, act, s.partial);
        TREE.first(s.partial, (pairs + 1) / 2, s.tree);
        LaneTree.last(s.tree, chunked(blocks) / 16, 0, noOffset, 0, s.dots, 0);
    }

    /** partial[32p ..] for pairs p0 .. p0+count−1 whose codes start at src[off + (p − p0)·68]. */
    private static void pairSums(byte[] src, int off, int p0, int count, short[] act, short[] partial) {
        for (int i = 0; i < count; i++) {
            int at = off + i * PAIR_STRIDE, a = (p0 + i) * ACT_PER_PAIR;
            ShortVector v = ByteVector.fromArray(B, src, at).blend(ByteVector.fromArray(B, src, at + Pq2Block.CODES_OFFSET), UPPER)
                    .reinterpretAsShorts();
            v.and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a))
                    .add(v.lanewise(LSHR, 2).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 32)))
                    .add(v.lanewise(LSHR, 4).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 64)))
                    .add(v.lanewise(LSHR, 6).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 96)))
                    .add(v.lanewise(LSHR, 8).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 128)))
                    .add(v.lanewise(LSHR, 10).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 160)))
                    .add(v.lanewise(LSHR, 12).and((short) 3).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 192)))
                    .add(v.lanewise(LSHR, 14).sub((short) 1).mul(ShortVector.fromArray(S, act, a + 224)))
                    .intoArray(partial, 32 * (p0 + i));
        }
    }

    private float output(int r, int[] dots, int stride, int lane, ActivationBlocks x) {
        int base = (int) (r * Pq2Block.rowBytes(cols));
        float acc = 0f;
        for (int b = 0; b < blocks; b++) {
            float d = Float.float16ToFloat(Pq2Block.scaleBits(data, base + b * Pq2Block.BYTES));
            acc = ActivationBlocks.term(acc, dots[b * stride + lane], d, x.scale(b));
        }
        return acc;
    }

    // ---------------------------------------------------------------- prefill

    /**
     * Tiles of {@value #TILE} columns: a block pair is unpacked once and multiplied against the four
     * columns; the tree takes 2 pairs × 4 columns at a time. dots[(b/4)·16 + tileLane(c, b mod 4)].
     */
    private void prefill(ActivationBlocks[] xs, int[][] dotsOut, float[][] yOut) {
        int tiles = (xs.length + TILE - 1) / TILE;
        short[][] act = new short[tiles * TILE][];
        for (int c = 0; c < act.length; c++) act[c] = arrange(c < xs.length ? xs[c] : ActivationBlocks.zeros(cols));
        pool.forEach(rows, (from, to) -> {
            Scratch s = new Scratch();
            for (int r = from; r < to; r++) {
                for (int t = 0; t < tiles; t++) {
                    int first = t * TILE;
                    tileDots(r, act[first], act[first + 1], act[first + 2], act[first + 3], s);
                    for (int c = 0; c < Math.min(TILE, xs.length - first); c++) {
                        for (int b = 0; b < blocks; b++) s.mine[b] = s.dots[(b / 4) * 16 + tileLane(c, b % 4)];
                        if (yOut != null) yOut[first + c][r] = output(r, s.mine, 1, 0, xs[first + c]);
                        if (dotsOut != null) System.arraycopy(s.mine, 0, dotsOut[first + c], r * blocks, blocks);
                    }
                }
            }
        });
    }

    /** Lane of (column c, block b within its group of four) in a prefill chunk of 16 dots. */
    static int tileLane(int c, int b) { return 8 * (b / 2) + 4 * (c / 2) + 2 * (c % 2) + b % 2; }

    private void tileDots(int r, short[] a0, short[] a1, short[] a2, short[] a3, Scratch s) {
        int full = blocks / 2;
        tilePartials(data, (int) (r * Pq2Block.rowBytes(cols)) + Pq2Block.CODES_OFFSET, 0, full, a0, a1, a2, a3, s.partial);
        if (full < pairs) tilePartials(s.source(r, full), s.offset(r, full), full, 1, a0, a1, a2, a3, s.partial);
        TREE.first(s.partial, 2 * pairs, s.tree);
        LaneTree.last(s.tree, (pairs + 1) / 2, 0, noOffset, 0, s.dots, 0);
    }

    /** partial[128p + 32c ..]: pair p against column c, pairs p0 .. p0+count−1 read from src[off + (p − p0)·68]. */
    private static void tilePartials(byte[] src, int off, int p0, int count, short[] a0, short[] a1, short[] a2, short[] a3,
                                     short[] partial) {
        for (int i = 0; i < count; i++) {
            int at = off + i * PAIR_STRIDE, a = (p0 + i) * ACT_PER_PAIR, out = 128 * (p0 + i);
            ShortVector v = ByteVector.fromArray(B, src, at).blend(ByteVector.fromArray(B, src, at + Pq2Block.CODES_OFFSET), UPPER)
                    .reinterpretAsShorts();
            ShortVector w0 = v.and((short) 3).sub((short) 1), w1 = v.lanewise(LSHR, 2).and((short) 3).sub((short) 1),
                    w2 = v.lanewise(LSHR, 4).and((short) 3).sub((short) 1), w3 = v.lanewise(LSHR, 6).and((short) 3).sub((short) 1),
                    w4 = v.lanewise(LSHR, 8).and((short) 3).sub((short) 1), w5 = v.lanewise(LSHR, 10).and((short) 3).sub((short) 1),
                    w6 = v.lanewise(LSHR, 12).and((short) 3).sub((short) 1), w7 = v.lanewise(LSHR, 14).sub((short) 1);
            for (int c = 0; c < TILE; c++) {
                short[] y = c == 0 ? a0 : c == 1 ? a1 : c == 2 ? a2 : a3;
                w0.mul(ShortVector.fromArray(S, y, a))
                        .add(w1.mul(ShortVector.fromArray(S, y, a + 32)))
                        .add(w2.mul(ShortVector.fromArray(S, y, a + 64)))
                        .add(w3.mul(ShortVector.fromArray(S, y, a + 96)))
                        .add(w4.mul(ShortVector.fromArray(S, y, a + 128)))
                        .add(w5.mul(ShortVector.fromArray(S, y, a + 160)))
                        .add(w6.mul(ShortVector.fromArray(S, y, a + 192)))
                        .add(w7.mul(ShortVector.fromArray(S, y, a + 224)))
                        .intoArray(partial, out + 32 * c);
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

    @Override
    public float[][] multiplyScalar(ActivationBlocks... xs) {
        int[][] dots = blockDotsScalar(xs);
        float[][] y = new float[xs.length][rows];
        int[] mine = new int[blocks];
        for (int c = 0; c < xs.length; c++) {
            for (int r = 0; r < rows; r++) {
                System.arraycopy(dots[c], r * blocks, mine, 0, blocks);
                y[c][r] = output(r, mine, 1, 0, xs[c]);
            }
        }
        return y;
    }
}
