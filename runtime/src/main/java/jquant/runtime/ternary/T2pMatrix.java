package jquant.runtime.ternary;

import static jdk.incubator.vector.VectorOperators.ASHR;
import static jdk.incubator.vector.VectorOperators.I2F;
import static jdk.incubator.vector.VectorOperators.LSHL;
import static jdk.incubator.vector.VectorOperators.LSHR;
import static jdk.incubator.vector.VectorOperators.S2I;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;
import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.T2pBlock;

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
 * the scalar twin keeps that recombination of the seed in int.) Activations are "dup8": the lane of
 * row b of a word carries the same activation as the lane of row a, so one register serves both
 * rows of a pair, and both pairs of a block; decode stores the 16 distinct values per vector and
 * duplicates them with one permute, prefill (compute-bound) keeps them pre-duplicated. Per-block,
 * per-row ints come out of a {@link LaneTree}; the float epilogue handles the block's four rows as
 * one vector.
 */
public final class T2pMatrix implements TernaryMatrix {

    /** Activation columns per prefill tile. */
    public static final int TILE = 4;
    /** Shorts of arranged activations per block: 8 slot vectors × 32 lanes. */
    static final int ACT_PER_BLOCK = 256;
    /**
     * Decode works on batches of {@value #GROUP_BATCH} row groups × {@value #CHUNK_BLOCKS} blocks (4096
     * columns), so that the working set per row group stays what measured fast and steady.
     */
    static final int CHUNK_BLOCKS = 32, GROUP_BATCH = 16;

    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_512;
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_512;
    private static final VectorSpecies<Short> S4 = ShortVector.SPECIES_64;
    private static final VectorSpecies<Integer> I4 = IntVector.SPECIES_128;
    private static final VectorSpecies<Float> F4 = FloatVector.SPECIES_128;
    /** 2^112: fp16 bits moved to float position, times this, are the fp16 value (normal or subnormal). */
    private static final float FP16_REBIAS = 0x1p112f;
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
        for (int off = 0; off < data.length; off += T2pBlock.BYTES) {
            for (int r = 0; r < T2pBlock.ROWS; r++) {
                if ((Pq2Block.scaleBits(data, off + 2 * r) & 0x7C00) == 0x7C00) {
                    throw new IllegalArgumentException("T2P block at byte " + off + " has a non-finite scale for row " + r);
                }
            }
        }
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.blocks = cols / T2pBlock.WEIGHTS;
        this.pool = pool;
    }

    @Override public int rows() { return rows; }
    @Override public int cols() { return cols; }

    @Override
    public float scale(int row, int block) {
        return Float.float16ToFloat(Pq2Block.scaleBits(data, (row / 4) * blocks * T2pBlock.BYTES + block * T2pBlock.BYTES + 2 * (row % 4)));
    }
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

    /** Shorts of decode activations per block: 8 slot vectors × the 16 distinct lanes of each. */
    static final int UNIQUE_PER_BLOCK = 128;
    /** dup8 in a register: lane i of a slot vector takes distinct activation 4·(i / 8) + i mod 4 (rows a and b alike). */
    private static final VectorShuffle<Short> DUP8 = VectorShuffle.fromOp(S, i -> 4 * (i / 8) + i % 4);

    /**
     * The decode layout: {@link #arrange}'s vectors without their row-b duplicates, 16 shorts each, plus
     * 16 of padding for the last 512-bit load. Half the footprint: measured, the duplicated layout
     * (32 KiB for 8192 columns) pushed the code stream out of L1 and streamed at half the speed.
     */
    static short[] arrangeUnique(ActivationBlocks x) {
        short[] full = arrange(x), out = new short[x.blocks() * UNIQUE_PER_BLOCK + 16];
        for (int v = 0; v < x.blocks() * 8; v++) {
            for (int u = 0; u < 16; u++) out[16 * v + u] = full[32 * v + 8 * (u / 4) + u % 4];
        }
        return out;
    }

    private static int chunked(int blocks) { return (blocks + 3) / 4 * 4; }

    // ---------------------------------------------------------------- decode (matvec)

    @Override
    public void matvec(ActivationBlocks x, float[] y) {
        TernaryMatrix.checkColumns(cols, new ActivationBlocks[] {x});
        if (y.length != rows) throw new IllegalArgumentException("output has " + y.length + " rows, matrix " + rows);
        short[] act = arrangeUnique(x);
        int[] ysum = decodeSums(x);
        float[] xs = scales(x);
        pool.forEach(rows / 4, (from, to) -> {
            int[] tree = new int[CHUNK_BLOCKS * 16], dots = new int[CHUNK_BLOCKS * 4];
            for (int g0 = from; g0 < to; g0 += GROUP_BATCH) {
                int g1 = Math.min(to, g0 + GROUP_BATCH);
                java.util.Arrays.fill(y, 4 * g0, 4 * g1, 0f);
                for (int b0 = 0; b0 < blocks; b0 += CHUNK_BLOCKS) {
                    int n = Math.min(CHUNK_BLOCKS, blocks - b0);
                    for (int g = g0; g < g1; g++) {
                        pairSums(g * blocks * T2pBlock.BYTES, b0, n, act, tree);
                        LaneTree.last(tree, chunked(n) / 4, 2, ysum, 4 * b0, dots, 0);
                        outputs(g, b0, n, dots, 0, 4, xs, y, 4 * g);
                    }
                }
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
        final int[] tree, dots;

        Scratch(int blocks) {
            tree = new int[chunked(blocks) * 64];
            dots = new int[chunked(blocks) * 16];
        }
    }

    /** s.dots[4b + r] of row group g: both pairs of each block and the first tree step in one loop, then the last. */
    private void groupDots(int g, short[] act, int[] ysum, Scratch s) {
        pairSums(g * blocks * T2pBlock.BYTES, 0, blocks, act, s.tree);
        LaneTree.last(s.tree, chunked(blocks) / 4, 2, ysum, 0, s.dots, 0);
    }

    /**
     * tree[16b ..] = first tree step over the two pairs of block b, whose per-lane sums Σ 4·u·y come
     * from one code load each and the same eight activation vectors, each made by one permute from
     * its 16 distinct values (dup8 done in a register).
     */
    private void pairSums(int base, int b0, int n, short[] act, int[] tree) {
        ShortVector e = TREE.firstEven, o = TREE.firstOdd;
        java.util.Arrays.fill(tree, 16 * n, 16 * chunked(n), 0);
        for (int b = b0; b < b0 + n; b++) {
            int a = b * UNIQUE_PER_BLOCK, at = base + b * T2pBlock.BYTES + T2pBlock.CODES_OFFSET;
            ShortVector y0 = ShortVector.fromArray(S, act, a).rearrange(DUP8), y1 = ShortVector.fromArray(S, act, a + 16).rearrange(DUP8);
            ShortVector y2 = ShortVector.fromArray(S, act, a + 32).rearrange(DUP8), y3 = ShortVector.fromArray(S, act, a + 48).rearrange(DUP8);
            ShortVector y4 = ShortVector.fromArray(S, act, a + 64).rearrange(DUP8), y5 = ShortVector.fromArray(S, act, a + 80).rearrange(DUP8);
            ShortVector y6 = ShortVector.fromArray(S, act, a + 96).rearrange(DUP8), y7 = ShortVector.fromArray(S, act, a + 112).rearrange(DUP8);
            ShortVector v = ByteVector.fromArray(B, data, at).reinterpretAsShorts(), vh = v.lanewise(LSHR, 8);
            ShortVector p0 = v.and((short) 0x03).mul(y0).add(v.and((short) 0x0C).mul(y1))
                    .add(v.lanewise(LSHR, 2).and((short) 0x0C).mul(y2)).add(v.lanewise(LSHR, 4).and((short) 0x0C).mul(y3))
                    .add(vh.and((short) 0x03).mul(y4)).add(vh.and((short) 0x0C).mul(y5))
                    .add(v.lanewise(LSHR, 10).and((short) 0x0C).mul(y6)).add(v.lanewise(LSHR, 14).mul(y7));
            v = ByteVector.fromArray(B, data, at + T2pBlock.PAIR_BYTES).reinterpretAsShorts();
            vh = v.lanewise(LSHR, 8);
            ShortVector p1 = v.and((short) 0x03).mul(y0).add(v.and((short) 0x0C).mul(y1))
                    .add(v.lanewise(LSHR, 2).and((short) 0x0C).mul(y2)).add(v.lanewise(LSHR, 4).and((short) 0x0C).mul(y3))
                    .add(vh.and((short) 0x03).mul(y4)).add(vh.and((short) 0x0C).mul(y5))
                    .add(v.lanewise(LSHR, 10).and((short) 0x0C).mul(y6)).add(v.lanewise(LSHR, 14).mul(y7));
            IntVector r = e.selectFrom(p0, p1).add(o.selectFrom(p0, p1)).reinterpretAsInts();
            r.lanewise(LSHL, 16).lanewise(ASHR, 16).add(r.lanewise(ASHR, 16)).intoArray(tree, 16 * (b - b0));
        }
    }

    /** The x scale of each block, padded like the tree. */
    private float[] scales(ActivationBlocks x) {
        float[] xs = new float[chunked(blocks)];
        for (int b = 0; b < blocks; b++) xs[b] = x.scale(b);
        return xs;
    }

    /**
     * The shared float formula for the four rows of group g at once (lane = row, blocks in order, the
     * same multiplications and additions per lane as {@link ActivationBlocks#term}), continued over
     * blocks b0 .. b0+n−1 from the sums already in y: y[at + r] +=
     * Σ_b (float) dots[(b − b0) · stride + lane + r] · (d[r][b] · xs[b]), added one block at a time. The block's four fp16 row scales sit
     * together, so they convert as one vector: bits (h &amp; 0x7FFF) &lt;&lt; 13 with the sign on top are a
     * float 2^112 times too small, exact for normal and subnormal h (the constructor refuses inf/NaN).
     */
    private void outputs(int g, int b0, int n, int[] dots, int lane, int stride, float[] xs, float[] y, int at) {
        int base = g * blocks * T2pBlock.BYTES + T2pBlock.SCALES_OFFSET;
        FloatVector acc = FloatVector.fromArray(F4, y, at);
        for (int b = b0; b < b0 + n; b++) {
            IntVector h = (IntVector) ByteVector.fromArray(ByteVector.SPECIES_64, data, base + b * T2pBlock.BYTES)
                    .reinterpretAsShorts().convertShape(S2I, I4, 0);
            FloatVector d = h.and(0x7FFF).lanewise(LSHL, 13).or(h.and(0x8000).lanewise(LSHL, 16))
                    .reinterpretAsFloats().mul(FP16_REBIAS);
            FloatVector dot = (FloatVector) IntVector.fromArray(I4, dots, (b - b0) * stride + lane).convertShape(I2F, F4, 0);
            acc = acc.add(dot.mul(d.mul(xs[b])));
        }
        acc.intoArray(y, at);
    }

    // ---------------------------------------------------------------- prefill

    /**
     * Tiles of {@value #TILE} columns: each pair is decoded once per block into eight slot vectors and
     * multiplied against the four columns; the tree turns the 2 pairs × 4 columns into the 16 ints of
     * the block. Batches of {@value #GROUP_BATCH} row groups are the outer loop and tiles the next, so a
     * batch's codes (139 KiB) and a tile's activations (128 KiB) both stay in L2. A last partial tile
     * is padded with zero columns; only real outputs are copied out.
     */
    private void prefill(ActivationBlocks[] xs0, int[][] dotsOut, float[][] yOut) {
        int tiles = (xs0.length + TILE - 1) / TILE;
        ActivationBlocks[] padded = new ActivationBlocks[tiles * TILE];
        short[][] act = new short[padded.length][];
        for (int c = 0; c < padded.length; c++) {
            padded[c] = c < xs0.length ? xs0[c] : ActivationBlocks.zeros(cols);
            act[c] = arrange(padded[c]);
        }
        int[][] ysum = new int[tiles][blocks * 16];
        float[][] xs = new float[xs0.length][];
        for (int c = 0; c < xs0.length; c++) xs[c] = scales(xs0[c]);
        for (int t = 0; t < tiles; t++) {
            for (int b = 0; b < blocks; b++) for (int k = 0; k < 16; k++) ysum[t][b * 16 + k] = padded[t * TILE + k / 4].sum(b);
        }
        pool.forEach(rows / 4, (from, to) -> {
            Scratch s = new Scratch(blocks);
            float[] four = new float[4];
            for (int g0 = from; g0 < to; g0 += GROUP_BATCH) {
                for (int t = 0; t < tiles; t++) {
                    for (int g = g0; g < Math.min(to, g0 + GROUP_BATCH); g++) {
                        int first = t * TILE;
                        tilePartials(g * blocks * T2pBlock.BYTES, act[first], act[first + 1], act[first + 2], act[first + 3], s.tree);
                        LaneTree.last(s.tree, blocks, 2, ysum[t], 0, s.dots, 0);
                        for (int c = 0; c < Math.min(TILE, xs0.length - first); c++) {
                            if (yOut != null) {
                                java.util.Arrays.fill(four, 0f);
                                outputs(g, 0, blocks, s.dots, 4 * c, 16, xs[first + c], four, 0);
                                System.arraycopy(four, 0, yOut[first + c], 4 * g, 4);
                            }
                            if (dotsOut != null) {
                                for (int r = 0; r < 4; r++) {
                                    for (int b = 0; b < blocks; b++) dotsOut[first + c][(4 * g + r) * blocks + b] = s.dots[b * 16 + 4 * c + r];
                                }
                            }
                        }
                    }
                }
            }
        });
    }

    /**
     * tree[64b + 16c ..] = first tree step over pairs 0 and 1 of block b against column c, so that the
     * last step leaves block b's dots at [16b + 4c + r]. Each pair is decoded once into eight slot
     * vectors, kept in registers across the four columns.
     */
    private void tilePartials(int base, short[] a0, short[] a1, short[] a2, short[] a3, int[] tree) {
        ShortVector e = TREE.firstEven, o = TREE.firstOdd;
        for (int b = 0; b < blocks; b++) {
            int a = b * ACT_PER_BLOCK, at = base + b * T2pBlock.BYTES + T2pBlock.CODES_OFFSET;
            ShortVector v = ByteVector.fromArray(B, data, at).reinterpretAsShorts();
            ShortVector w0 = v.and((short) 0x03), w1 = v.and((short) 0x0C), w2 = v.lanewise(LSHR, 2).and((short) 0x0C),
                    w3 = v.lanewise(LSHR, 4).and((short) 0x0C), w4 = v.lanewise(LSHR, 8).and((short) 0x03),
                    w5 = v.lanewise(LSHR, 8).and((short) 0x0C), w6 = v.lanewise(LSHR, 10).and((short) 0x0C),
                    w7 = v.lanewise(LSHR, 14);
            v = ByteVector.fromArray(B, data, at + T2pBlock.PAIR_BYTES).reinterpretAsShorts();
            ShortVector z0 = v.and((short) 0x03), z1 = v.and((short) 0x0C), z2 = v.lanewise(LSHR, 2).and((short) 0x0C),
                    z3 = v.lanewise(LSHR, 4).and((short) 0x0C), z4 = v.lanewise(LSHR, 8).and((short) 0x03),
                    z5 = v.lanewise(LSHR, 8).and((short) 0x0C), z6 = v.lanewise(LSHR, 10).and((short) 0x0C),
                    z7 = v.lanewise(LSHR, 14);
            for (int c = 0; c < TILE; c++) {
                short[] act = c == 0 ? a0 : c == 1 ? a1 : c == 2 ? a2 : a3;
                ShortVector y0 = ShortVector.fromArray(S, act, a), y1 = ShortVector.fromArray(S, act, a + 32);
                ShortVector y2 = ShortVector.fromArray(S, act, a + 64), y3 = ShortVector.fromArray(S, act, a + 96);
                ShortVector y4 = ShortVector.fromArray(S, act, a + 128), y5 = ShortVector.fromArray(S, act, a + 160);
                ShortVector y6 = ShortVector.fromArray(S, act, a + 192), y7 = ShortVector.fromArray(S, act, a + 224);
                ShortVector p0 = w0.mul(y0).add(w1.mul(y1)).add(w2.mul(y2)).add(w3.mul(y3))
                        .add(w4.mul(y4)).add(w5.mul(y5)).add(w6.mul(y6)).add(w7.mul(y7));
                ShortVector p1 = z0.mul(y0).add(z1.mul(y1)).add(z2.mul(y2)).add(z3.mul(y3))
                        .add(z4.mul(y4)).add(z5.mul(y5)).add(z6.mul(y6)).add(z7.mul(y7));
                IntVector r = e.selectFrom(p0, p1).add(o.selectFrom(p0, p1)).reinterpretAsInts();
                r.lanewise(LSHL, 16).lanewise(ASHR, 16).add(r.lanewise(ASHR, 16)).intoArray(tree, 64 * b + 16 * c);
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
            short[] act = arrangeUnique(xs[0]);
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

}
