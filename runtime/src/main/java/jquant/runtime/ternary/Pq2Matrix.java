package jquant.runtime.ternary;

import static jdk.incubator.vector.VectorOperators.LSHR;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import jquant.pack.ternary.Pq2Block;

/**
 * Ternary matrix in the stock PQ2_0 layout ({@link Pq2Block}), with the stock way to unpack it: shift,
 * mask, subtract 1, multiply. Two consecutive blocks of a row fill one 512-bit register (two loads
 * and a blend, since 2 scale bytes sit between their codes); viewed as 32 short lanes, lane i of a
 * block holds weights 8i..8i+3 (lo byte) and 8i+4..8i+7 (hi byte), slot s of a byte at bits 2s.
 * Products (w ∈ {−1..+2}) are at most 254, eight per lane; a {@link LaneTree} turns 16 blocks of a
 * row into 16 ints. This is the baseline the T2P layout is measured against, on the same species.
 */
public final class Pq2Matrix implements TernaryMatrix {

    /** Activation columns per prefill tile (as T2P). */
    public static final int TILE = 4;
    /** Shorts of arranged activations per block pair: 8 slot vectors × 32 lanes. */
    static final int ACT_PER_PAIR = 256;

    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_512;
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_512;
    private static final VectorMask<Byte> UPPER = VectorMask.fromLong(B, 0xFFFF_FFFF_0000_0000L);
    private static final VectorMask<Byte> LOWER = B.indexInRange(0, 32);
    private static final LaneTree TREE = LaneTree.halves();

    private final byte[] data;
    private final int rows, cols, blocks, pairs;
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

    // ---------------------------------------------------------------- decode (matvec)

    @Override
    public void matvec(ActivationBlocks x, float[] y) {
        TernaryMatrix.checkColumns(cols, new ActivationBlocks[] {x});
        if (y.length != rows) throw new IllegalArgumentException("output has " + y.length + " rows, matrix " + rows);
        short[] act = arrange(x);
        pool.forEach(rows, (from, to) -> {
            int[] dots = new int[chunked(blocks)];
            for (int r = from; r < to; r++) {
                rowDots(r, act, dots);
                y[r] = output(r, dots, 1, 0, x);
            }
        });
    }

    /** dots[b] of row r, sixteen blocks (eight pairs) per tree. */
    private void rowDots(int r, short[] act, int[] dots) {
        int base = (int) (r * Pq2Block.rowBytes(cols));
        for (int p0 = 0; p0 < pairs; p0 += 8) {
            TREE.reduce(pairDot(base, p0, act), pairDot(base, p0 + 1, act), pairDot(base, p0 + 2, act),
                    pairDot(base, p0 + 3, act), pairDot(base, p0 + 4, act), pairDot(base, p0 + 5, act),
                    pairDot(base, p0 + 6, act), pairDot(base, p0 + 7, act)).intoArray(dots, 2 * p0);
        }
    }

    /** Codes of blocks 2p and 2p+1 in one register (upper half zero if 2p is the row's last block). */
    private ShortVector codes(int base, int p) {
        int off = base + 2 * p * Pq2Block.BYTES + Pq2Block.CODES_OFFSET;
        ByteVector lo = 2 * p + 1 < blocks ? ByteVector.fromArray(B, data, off) : ByteVector.fromArray(B, data, off, LOWER);
        if (2 * p + 1 < blocks) lo = lo.blend(ByteVector.fromArray(B, data, off + Pq2Block.CODES_OFFSET), UPPER);
        return lo.reinterpretAsShorts();
    }

    private ShortVector pairDot(int base, int p, short[] act) {
        if (p >= pairs) return (ShortVector) S.zero();
        ShortVector v = codes(base, p);
        int a = p * ACT_PER_PAIR;
        return dot8(weight(v, 0), weight(v, 2), weight(v, 4), weight(v, 6),
                weight(v, 8), weight(v, 10), weight(v, 12), weight(v, 14), act, a);
    }

    /** w = ((v >>> shift) & 3) − 1: the stock unpack of one slot. */
    private static ShortVector weight(ShortVector v, int shift) {
        ShortVector u = shift == 0 ? v : v.lanewise(LSHR, shift);
        return (shift == 14 ? u : u.and((short) 3)).sub((short) 1);
    }

    private static ShortVector dot8(ShortVector w0, ShortVector w1, ShortVector w2, ShortVector w3,
                                    ShortVector w4, ShortVector w5, ShortVector w6, ShortVector w7, short[] act, int a) {
        return w0.mul(ShortVector.fromArray(S, act, a))
                .add(w1.mul(ShortVector.fromArray(S, act, a + 32)))
                .add(w2.mul(ShortVector.fromArray(S, act, a + 64)))
                .add(w3.mul(ShortVector.fromArray(S, act, a + 96)))
                .add(w4.mul(ShortVector.fromArray(S, act, a + 128)))
                .add(w5.mul(ShortVector.fromArray(S, act, a + 160)))
                .add(w6.mul(ShortVector.fromArray(S, act, a + 192)))
                .add(w7.mul(ShortVector.fromArray(S, act, a + 224)));
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
     * columns; a tree takes 2 pairs × 4 columns. dots[(p/2)·16 + k] with k = 8·(p mod 2) + 2c + (b mod 2).
     */
    private void prefill(ActivationBlocks[] xs, int[][] dotsOut, float[][] yOut) {
        int tiles = (xs.length + TILE - 1) / TILE;
        short[][] act = new short[tiles * TILE][];
        for (int c = 0; c < act.length; c++) act[c] = arrange(c < xs.length ? xs[c] : ActivationBlocks.zeros(cols));
        int tileDotsLength = (pairs + 1) / 2 * 16;
        pool.forEach(rows, (from, to) -> {
            int[] dots = new int[tileDotsLength];
            for (int r = from; r < to; r++) {
                for (int t = 0; t < tiles; t++) {
                    int first = t * TILE;
                    tileDots(r, act[first], act[first + 1], act[first + 2], act[first + 3], dots);
                    for (int c = 0; c < Math.min(TILE, xs.length - first); c++) {
                        int[] mine = new int[blocks];
                        for (int b = 0; b < blocks; b++) mine[b] = dots[(b / 4) * 16 + 8 * ((b / 2) % 2) + 2 * c + b % 2];
                        if (yOut != null) yOut[first + c][r] = output(r, mine, 1, 0, xs[first + c]);
                        if (dotsOut != null) System.arraycopy(mine, 0, dotsOut[first + c], r * blocks, blocks);
                    }
                }
            }
        });
    }

    private void tileDots(int r, short[] a0, short[] a1, short[] a2, short[] a3, int[] dots) {
        int base = (int) (r * Pq2Block.rowBytes(cols));
        for (int p = 0; p < pairs; p += 2) {
            ShortVector v = codes(base, p);
            int a = p * ACT_PER_PAIR;
            ShortVector w0 = weight(v, 0), w1 = weight(v, 2), w2 = weight(v, 4), w3 = weight(v, 6),
                    w4 = weight(v, 8), w5 = weight(v, 10), w6 = weight(v, 12), w7 = weight(v, 14);
            ShortVector c0 = dot8(w0, w1, w2, w3, w4, w5, w6, w7, a0, a), c1 = dot8(w0, w1, w2, w3, w4, w5, w6, w7, a1, a),
                    c2 = dot8(w0, w1, w2, w3, w4, w5, w6, w7, a2, a), c3 = dot8(w0, w1, w2, w3, w4, w5, w6, w7, a3, a);
            ShortVector d0, d1, d2, d3;
            if (p + 1 < pairs) {
                v = codes(base, p + 1);
                a += ACT_PER_PAIR;
                w0 = weight(v, 0); w1 = weight(v, 2); w2 = weight(v, 4); w3 = weight(v, 6);
                w4 = weight(v, 8); w5 = weight(v, 10); w6 = weight(v, 12); w7 = weight(v, 14);
                d0 = dot8(w0, w1, w2, w3, w4, w5, w6, w7, a0, a);
                d1 = dot8(w0, w1, w2, w3, w4, w5, w6, w7, a1, a);
                d2 = dot8(w0, w1, w2, w3, w4, w5, w6, w7, a2, a);
                d3 = dot8(w0, w1, w2, w3, w4, w5, w6, w7, a3, a);
            } else {
                d0 = d1 = d2 = d3 = (ShortVector) S.zero();
            }
            TREE.reduce(c0, c1, c2, c3, d0, d1, d2, d3).intoArray(dots, (p / 2) * 16);
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
            int[] dots = new int[chunked(blocks)];
            for (int r = 0; r < rows; r++) {
                rowDots(r, act, dots);
                System.arraycopy(dots, 0, out[0], r * blocks, blocks);
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
        for (int c = 0; c < xs.length; c++) {
            for (int r = 0; r < rows; r++) {
                int[] mine = new int[blocks];
                System.arraycopy(dots[c], r * blocks, mine, 0, blocks);
                y[c][r] = output(r, mine, 1, 0, xs[c]);
            }
        }
        return y;
    }
}
