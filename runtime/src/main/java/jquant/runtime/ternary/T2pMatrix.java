package jquant.runtime.ternary;

import static jdk.incubator.vector.VectorOperators.LSHR;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorSpecies;
import jquant.pack.ternary.Pq2Block;
import jquant.pack.ternary.T2pBlock;

/**
 * Ternary matrix in the T2P row-pair layout ({@link T2pBlock}), with the decode (matvec) kernel and
 * the prefill kernel over tiles of {@value #TILE} activation columns.
 *
 * <p>One 512-bit load holds a whole row pair of a block: 4 words × (8 bytes of row a, 8 of row b).
 * The Vector API has no int8 dot product (no sdot / VNNI), so the kernel views the bytes as 32 short
 * lanes and multiplies in 16 bits. Each short holds two code bytes (lo = even j, hi = odd j), four
 * slots each; the eight slot values come out with masks, and shifts only where a mask alone would not
 * do: every slot is brought to 4u (mask 0x0C as the seed's slot 1; slots 2 and 3 shifted down to it)
 * or left at u with the activation pre-multiplied by 4. All eight products are then 4·u·y, so one
 * short accumulator holds them (|Σ| ≤ 8·4·3·127 = 12192, exact for u ≤ 3) and
 * <pre>   dot(w, y) = (Σ 4·u·y) / 4 − sum(y)   </pre>
 * is exact. (Per-slot accumulators recombined as a2 + 4·a1 + 16·(a0 + a3) would overflow 16 bits;
 * the scalar twin keeps that recombination of the seed in int.) The activations are laid out once
 * per call "dup8" style: the lane of row b of a word carries the same activation as the lane of
 * row a, so one register serves both rows of a pair, and both pairs of a block. Per-block, per-row
 * ints come out of a {@link LaneTree}.
 */
public final class T2pMatrix implements TernaryMatrix {

    /** Activation columns per prefill tile. */
    public static final int TILE = 4;
    /** Shorts of arranged activations per block: 8 slot vectors × 32 lanes. */
    static final int ACT_PER_BLOCK = 256;

    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_512;
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_512;
    private static final LaneTree TREE;

    static {
        int[] rowInPair = new int[32];
        for (int l = 0; l < 32; l++) rowInPair[l] = (l % 8) / 4;   // short lane l holds bytes 2l, 2l+1 of its word
        TREE = new LaneTree(rowInPair);
    }

    private final byte[] data;
    private final int rows, cols, blocks;
    private final RowPool pool;

    public T2pMatrix(byte[] data, int rows, int cols, RowPool pool) {
        if (rows % T2pBlock.ROWS != 0 || cols % T2pBlock.WEIGHTS != 0 || rows <= 0 || cols <= 0) {
            throw new IllegalArgumentException("T2P needs rows % 4 == 0 and cols % 128 == 0, got " + rows + "×" + cols);
        }
        if (data.length != (long) rows / T2pBlock.ROWS * (cols / T2pBlock.WEIGHTS) * T2pBlock.BYTES) {
            throw new IllegalArgumentException("T2P " + rows + "×" + cols + " needs "
                    + (long) rows / 4 * (cols / 128) * T2pBlock.BYTES + " bytes, got " + data.length);
        }
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / T2pBlock.WEIGHTS;
        this.pool = pool;
    }

    @Override public int rows() { return rows; }
    @Override public int cols() { return cols; }
    @Override public long packedBytes() { return data.length; }

    // ---------------------------------------------------------------- activations, laid out per kernel

    /**
     * Short lane i of slot vector vi (half h = vi / 4: 0 = even byte, 1 = odd byte; slot s = vi % 4)
     * meets code byte j = (2i mod 16) + h of word i / 8, whose slot s is weight 8·(4·wd + s) + j mod 8.
     * Slot 0 (both halves) and slot 3 of the odd byte are extracted as u, so their activation is 4y.
     */
    static short[] arrange(ActivationBlocks x) {
        short[] out = new short[x.blocks() * ACT_PER_BLOCK];
        for (int b = 0; b < x.blocks(); b++) {
            for (int vi = 0; vi < 8; vi++) {
                int h = vi / 4, s = vi % 4, factor = s == 0 || (h == 1 && s == 3) ? 4 : 1;
                for (int i = 0; i < 32; i++) {
                    int k = T2pBlock.weightOf(i / 8, s, (2 * i) % 16 + h);
                    out[b * ACT_PER_BLOCK + vi * 32 + i] = (short) (factor * x.q(b * 128 + k));
                }
            }
        }
        return out;
    }

    private static int chunked(int blocks) { return (blocks + 3) / 4 * 4; }

    // ---------------------------------------------------------------- decode (matvec)

    @Override
    public void matvec(ActivationBlocks x, float[] y) {
        TernaryMatrix.checkColumns(cols, new ActivationBlocks[] {x});
        if (y.length != rows) throw new IllegalArgumentException("output has " + y.length + " rows, matrix " + rows);
        short[] act = arrange(x);
        int[] ysum = decodeSums(x);
        pool.forEach(rows / 4, (from, to) -> {
            Scratch s = new Scratch(blocks);
            for (int g = from; g < to; g++) {
                groupDots(g, act, ysum, s);
                for (int r = 0; r < 4; r++) y[4 * g + r] = output(g, r, s.dots, 4, r, x);
            }
        });
    }

    /** sum(y) of block b at [4b + r] for each row r, zero past the last block. */
    private int[] decodeSums(ActivationBlocks x) {
        int[] out = new int[chunked(blocks) * 4];
        for (int b = 0; b < blocks; b++) for (int r = 0; r < 4; r++) out[4 * b + r] = x.sum(b);
        return out;
    }

    /** Per-thread scratch, sized for a prefill tile (decode uses the first quarter), zero past the last block. */
    private static final class Scratch {
        final short[] partial;
        final int[] tree, dots;

        Scratch(int blocks) {
            partial = new short[chunked(blocks) * 256];
            tree = new int[chunked(blocks) * 64];
            dots = new int[chunked(blocks) * 16];
        }
    }

    /** s.dots[4b + r] of row group g: pair partial sums, then the two halves of the tree. */
    private void groupDots(int g, short[] act, int[] ysum, Scratch s) {
        pairSums(g * blocks * T2pBlock.BYTES, act, s.partial);
        TREE.first(s.partial, blocks, s.tree);
        LaneTree.last(s.tree, chunked(blocks) / 4, 2, ysum, 0, s.dots, 0);
    }

    /** partial[32i ..] = Σ 4·u·y per short lane of pair i mod 2 of block i / 2. */
    private void pairSums(int base, short[] act, short[] partial) {
        for (int i = 0; i < 2 * blocks; i++) {
            int a = (i >> 1) * ACT_PER_BLOCK;
            ShortVector v = ByteVector.fromArray(B, data, base + (i >> 1) * T2pBlock.BYTES + T2pBlock.CODES_OFFSET
                    + (i & 1) * T2pBlock.PAIR_BYTES).reinterpretAsShorts();
            ShortVector vh = v.lanewise(LSHR, 8);
            v.and((short) 0x03).mul(ShortVector.fromArray(S, act, a))
                    .add(v.and((short) 0x0C).mul(ShortVector.fromArray(S, act, a + 32)))
                    .add(v.lanewise(LSHR, 2).and((short) 0x0C).mul(ShortVector.fromArray(S, act, a + 64)))
                    .add(v.lanewise(LSHR, 4).and((short) 0x0C).mul(ShortVector.fromArray(S, act, a + 96)))
                    .add(vh.and((short) 0x03).mul(ShortVector.fromArray(S, act, a + 128)))
                    .add(vh.and((short) 0x0C).mul(ShortVector.fromArray(S, act, a + 160)))
                    .add(v.lanewise(LSHR, 10).and((short) 0x0C).mul(ShortVector.fromArray(S, act, a + 192)))
                    .add(v.lanewise(LSHR, 14).mul(ShortVector.fromArray(S, act, a + 224)))
                    .intoArray(partial, 32 * i);
        }
    }

    /** The shared float formula over one row's block dots (dots[b · stride + lane]). */
    private float output(int g, int r, int[] dots, int stride, int lane, ActivationBlocks x) {
        int base = g * blocks * T2pBlock.BYTES + T2pBlock.SCALES_OFFSET + 2 * r;
        float acc = 0f;
        for (int b = 0; b < blocks; b++) {
            float d = Float.float16ToFloat(Pq2Block.scaleBits(data, base + b * T2pBlock.BYTES));
            acc = ActivationBlocks.term(acc, dots[b * stride + lane], d, x.scale(b));
        }
        return acc;
    }

    // ---------------------------------------------------------------- prefill

    /**
     * Tiles of {@value #TILE} columns: each pair is decoded once per block into eight slot vectors and
     * multiplied against the four columns; the tree turns the 2 pairs × 4 columns into the 16 ints of
     * the block. Row groups are the outer loop (a group's codes stay in L1 across all tiles). A last
     * partial tile is padded with zero columns; only real outputs are copied out.
     */
    private void prefill(ActivationBlocks[] xs, int[][] dotsOut, float[][] yOut) {
        int tiles = (xs.length + TILE - 1) / TILE;
        ActivationBlocks[] padded = new ActivationBlocks[tiles * TILE];
        short[][] act = new short[padded.length][];
        for (int c = 0; c < padded.length; c++) {
            padded[c] = c < xs.length ? xs[c] : ActivationBlocks.zeros(cols);
            act[c] = arrange(padded[c]);
        }
        int[][] ysum = new int[tiles][blocks * 16];
        for (int t = 0; t < tiles; t++) {
            for (int b = 0; b < blocks; b++) {
                for (int c = 0; c < TILE; c++) for (int r = 0; r < 4; r++) ysum[t][b * 16 + tileLane(c, r)] = padded[t * TILE + c].sum(b);
            }
        }
        pool.forEach(rows / 4, (from, to) -> {
            Scratch s = new Scratch(blocks);
            for (int g = from; g < to; g++) {
                for (int t = 0; t < tiles; t++) {
                    int first = t * TILE;
                    tileDots(g, act[first], act[first + 1], act[first + 2], act[first + 3], ysum[t], s);
                    for (int c = 0; c < Math.min(TILE, xs.length - first); c++) {
                        for (int r = 0; r < 4; r++) {
                            int row = 4 * g + r;
                            if (yOut != null) yOut[first + c][row] = output(g, r, s.dots, 16, tileLane(c, r), xs[first + c]);
                            if (dotsOut != null) {
                                for (int b = 0; b < blocks; b++) dotsOut[first + c][row * blocks + b] = s.dots[b * 16 + tileLane(c, r)];
                            }
                        }
                    }
                }
            }
        });
    }

    /** Lane of (column c, row r) in a prefill block's 16 dots: the order {@link #tileDots} leaves them in. */
    static int tileLane(int c, int r) { return 8 * (r / 2) + 4 * (c / 2) + 2 * (c % 2) + r % 2; }

    /** s.dots[16b + tileLane(c, r)] for row group g against four arranged columns. */
    private void tileDots(int g, short[] a0, short[] a1, short[] a2, short[] a3, int[] ysum, Scratch s) {
        tilePartials(g * blocks * T2pBlock.BYTES, a0, a1, a2, a3, s.partial);
        TREE.first(s.partial, 4 * blocks, s.tree);
        LaneTree.last(s.tree, blocks, 2, ysum, 0, s.dots, 0);
    }

    /** partial[256b + 32·(4p + c) ..] = Σ 4·u·y per lane of pair p of block b against column c. */
    private void tilePartials(int base, short[] a0, short[] a1, short[] a2, short[] a3, short[] partial) {
        for (int i = 0; i < 2 * blocks; i++) {
            int a = (i >> 1) * ACT_PER_BLOCK, out = 128 * i;
            ShortVector v = ByteVector.fromArray(B, data, base + (i >> 1) * T2pBlock.BYTES + T2pBlock.CODES_OFFSET
                    + (i & 1) * T2pBlock.PAIR_BYTES).reinterpretAsShorts();
            ShortVector w0 = v.and((short) 0x03), w1 = v.and((short) 0x0C), w2 = v.lanewise(LSHR, 2).and((short) 0x0C),
                    w3 = v.lanewise(LSHR, 4).and((short) 0x0C), w4 = v.lanewise(LSHR, 8).and((short) 0x03),
                    w5 = v.lanewise(LSHR, 8).and((short) 0x0C), w6 = v.lanewise(LSHR, 10).and((short) 0x0C),
                    w7 = v.lanewise(LSHR, 14);
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
            int[] ysum = decodeSums(xs[0]);
            Scratch s = new Scratch(blocks);
            for (int g = 0; g < rows / 4; g++) {
                groupDots(g, act, ysum, s);
                for (int r = 0; r < 4; r++) for (int b = 0; b < blocks; b++) out[0][(4 * g + r) * blocks + b] = s.dots[4 * b + r];
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
     * The seed's decode for one block, one int accumulator per (row, slot): masks 0x03, 0x0C, 0x30
     * leave u, 4u, 16u in place, slot 3 is shifted by 6; then a2 + 4·a1 + 16·(a0 + a3) − 16·sum(y)
     * is 16 · dot(w, y).
     */
    private int[] scalarBlock(int g, int b, ActivationBlocks x) {
        int off = g * blocks * T2pBlock.BYTES + b * T2pBlock.BYTES;
        int[][] acc = new int[4][4];
        for (int p = 0; p < 2; p++) {
            for (int wd = 0; wd < 4; wd++) {
                for (int j = 0; j < 16; j++) {
                    int v = data[off + T2pBlock.codeByte(p, wd, j)] & 0xFF, row = T2pBlock.rowOf(p, j);
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

    @Override
    public float[][] multiplyScalar(ActivationBlocks... xs) {
        int[][] dots = blockDotsScalar(xs);
        float[][] y = new float[xs.length][rows];
        for (int c = 0; c < xs.length; c++) {
            for (int row = 0; row < rows; row++) {
                float acc = 0f;
                for (int b = 0; b < blocks; b++) {
                    float d = Float.float16ToFloat(Pq2Block.scaleBits(data, (row / 4) * blocks * T2pBlock.BYTES + b * T2pBlock.BYTES + 2 * (row % 4)));
                    acc = ActivationBlocks.term(acc, dots[c][row * blocks + b], d, xs[c].scale(b));
                }
                y[c][row] = acc;
            }
        }
        return y;
    }
}
