package jquant.runtime.ternary;

import static jdk.incubator.vector.VectorOperators.I2F;
import static jdk.incubator.vector.VectorOperators.LSHR;
import static jdk.incubator.vector.VectorOperators.S2I;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorSpecies;
import jquant.formats.DType;
import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.T2pBlock;
import jquant.core.WorkerPool;

/**
 * A ternary matrix repacked at load into a table-lookup layout (T-MAC, EuroSys 2025; bitnet.cpp's
 * TL kernels): per token, each pair of activations (x0, x1) gets a table of the sixteen sums
 * {@code (u0 − 1)·x0 + (u1 − 1)·x1} over the stored codes u0, u1 ∈ 0..3, shared by every row; a row's
 * two codes of that pair, a 4-bit index, pick its sum. A 512-bit {@code vpermw}
 * ({@link ShortVector#selectFrom}) looks up 32 rows at once, so 64 weights cost a shift, a lookup and
 * an add in 16-bit lanes, where {@link T2pMatrix} multiplies eight slot values per 32 weights. The
 * sums are exact: a table entry is at most 2·127 + 2·127 = 508 in magnitude, so a block's 64
 * lookups stay within ±32,512 in a short; each block's sums then widen to int and enter the shared
 * formula {@code y = Σ_b dot_b · (d_b · scale_b)} in ascending b, so the floats are T2P's bit for bit.
 *
 * <p>The layout (a copy made at load from T2P blocks, 36 bytes per 128 weights per row: the codes'
 * 2 bits and a float32 scale), rows padded with zero codes to a multiple of {@value #GROUP_ROWS}:
 * <pre>
 *   for each group of 256 rows (8 tiles of 32), for each block b of 128 columns:
 *     256 float32 row scales                                       1,024 bytes
 *     for v = 0..15, for tile t = 0..7: 32 shorts                   16 × 8 × 64 bytes
 *        short lane l = row 32t + l; its bits 4n..4n+3 (n = 0..3) = u0 + 4·u1, the stored codes
 *        of columns 128b + 8v + 2n and + 1 (pair p = 4v + n of the block)
 * </pre>
 * The kernel holds the eight tiles' accumulators in registers and walks the pairs of a block: per
 * four pairs, eight index loads (one per tile) and per pair one table load shared by the eight
 * lookups. A table is 32 shorts, the sixteen sums twice: {@code selectFrom} takes an index modulo
 * 32, so the bit above a nibble (the next pair's) picks the same sum and needs no mask.
 *
 * <p>Runs at any vector width: the tiles are 32 rows, which a 512-bit short vector holds; at 256
 * and 128 bits each tile is two or four vectors, and at 128 bits a table is two vectors. Prefill takes the columns one after another through
 * the same kernel (the weights are read once per column): this layout is for decode.
 */
public final class LutMatrix implements TernaryMatrix {

    /** Rows per tile (the lanes of a 512-bit short vector) and per group of eight tiles. */
    static final int TILE_ROWS = 32, TILES = 8, GROUP_ROWS = TILE_ROWS * TILES;
    /** Index vectors (of 4 pairs each) per block per tile. */
    static final int INDEX_VECTORS = 16;
    static final int SCALE_BYTES = 4 * GROUP_ROWS, TILE_BYTES = 2 * TILE_ROWS;
    /** Bytes of one (group, block): the scales, then 16 × 8 index tiles. */
    static final int BLOCK_BYTES = SCALE_BYTES + INDEX_VECTORS * TILES * TILE_BYTES;
    /** Shorts of one pair's table (its sixteen sums twice). */
    static final int TABLE = 32;

    private static final VectorSpecies<Short> S = Simd.S;
    private static final VectorSpecies<Integer> I = Simd.I;
    private static final VectorSpecies<Float> F = Simd.F;
    /** Short vectors per tile (1 at 512 bits). */
    private static final int PARTS = TILE_ROWS / S.length();
    /** Whether a vector holds fewer than the sixteen sums of a table (128 bits). */
    private static final boolean NARROW = S.length() < 16;
    private static final ValueLayout.OfFloat SCALE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** (u0 − 1) and (u1 − 1) of table entry i, for i and i + 16. */
    private static final short[] W0 = new short[TABLE], W1 = new short[TABLE];

    static {
        for (int i = 0; i < TABLE; i++) {
            W0[i] = (short) ((i & 3) - 1);
            W1[i] = (short) (((i >> 2) & 3) - 1);
        }
    }

    private final MemorySegment data;
    private final int rows, cols, blocks, groups;
    private final WorkerPool pool;

    /** Repacks the T2P blocks of {@code t2p} ({@code rows/4 × cols/128}) into an off-heap copy in this layout. */
    public LutMatrix(MemorySegment t2p, int rows, int cols, WorkerPool pool) {
        T2pMatrix check = new T2pMatrix(t2p, rows, cols, pool);   // validates the shape and size
        this.rows = check.rows();
        this.cols = cols;
        this.blocks = cols / T2pBlock.WEIGHTS;
        this.groups = (rows + GROUP_ROWS - 1) / GROUP_ROWS;
        this.pool = pool;
        this.data = Arena.ofAuto().allocate((long) groups * blocks * BLOCK_BYTES, 64);
        repack(t2p);
    }

    private void repack(MemorySegment t2p) {
        byte[] block = new byte[T2pBlock.BYTES];
        for (int g4 = 0; g4 < rows / 4; g4++) {
            for (int b = 0; b < blocks; b++) {
                MemorySegment.copy(t2p, ValueLayout.JAVA_BYTE, T2pBlock.blockOffset(g4, b, cols), block, 0, T2pBlock.BYTES);
                for (int r = 0; r < 4; r++) {
                    int row = 4 * g4 + r;
                    long at = blockAt(row / GROUP_ROWS, b);
                    data.set(SCALE, at + 4L * (row % GROUP_ROWS), Float.float16ToFloat(Pq2Block.scaleBits(block, T2pBlock.SCALES_OFFSET + 2 * r)));
                    for (int p = 0; p < 64; p++) {
                        int u0 = T2pBlock.storedCode(block, 0, r, 2 * p), u1 = T2pBlock.storedCode(block, 0, r, 2 * p + 1);
                        long idx = indexAt(at, row % GROUP_ROWS, p);
                        short v = data.get(ValueLayout.JAVA_SHORT_UNALIGNED, idx);
                        data.set(ValueLayout.JAVA_SHORT_UNALIGNED, idx, (short) (v | (u0 + 4 * u1) << (4 * (p % 4))));
                    }
                }
            }
        }
        // padding rows: code 1 (weight 0) in every nibble, scale 0
        for (int row = rows; row < groups * GROUP_ROWS; row++) {
            for (int b = 0; b < blocks; b++) {
                long at = blockAt(row / GROUP_ROWS, b);
                for (int v = 0; v < INDEX_VECTORS; v++) data.set(ValueLayout.JAVA_SHORT_UNALIGNED, indexAt(at, row % GROUP_ROWS, 4 * v), (short) 0x5555);
            }
        }
    }

    private long blockAt(int group, int block) { return ((long) group * blocks + block) * BLOCK_BYTES; }

    /** The short holding pair p's nibble for row r (0..255) of the (group, block) at {@code at}. */
    private static long indexAt(long at, int r, int p) {
        return at + SCALE_BYTES + ((long) (p / 4) * TILES + r / TILE_ROWS) * TILE_BYTES + 2L * (r % TILE_ROWS);
    }

    @Override public int rows() { return rows; }
    @Override public int cols() { return cols; }
    /** T2P: the table-lookup layout is a repack of T2P's bytes at load. */
    @Override public DType type() { return DType.T2P; }

    @Override public long packedBytes() { return data.byteSize(); }

    @Override
    public float scale(int row, int block) { return data.get(SCALE, blockAt(row / GROUP_ROWS, block) + 4L * (row % GROUP_ROWS)); }

    /** The column's tables: pair p's at {@code p · 32}. */
    private short[] tables(ActivationBlocks x) {
        short[] t = new short[cols / 2 * TABLE];
        byte[] q = x.values();
        for (int part = 0; part < TABLE; part += S.length()) {
            ShortVector w0 = ShortVector.fromArray(S, W0, part), w1 = ShortVector.fromArray(S, W1, part);
            for (int p = 0; p < cols / 2; p++) w0.mul(q[2 * p]).add(w1.mul(q[2 * p + 1])).intoArray(t, p * TABLE + part);
        }
        return t;
    }

    // ---------------------------------------------------------------- decode

    @Override
    public void matvec(ActivationBlocks x, float[] y, int yOff) {
        TernaryMatrix.checkColumns(cols, new ActivationBlocks[] {x});
        if (yOff < 0 || y.length - yOff < rows) throw new IllegalArgumentException("output has room for " + (y.length - yOff) + " rows, matrix " + rows);
        short[] tables = tables(x);
        pool.forRange(groups, (long) GROUP_ROWS * cols, (worker, start, end) -> {
            Scratch s = Scratch.mine();
            short[] sums = s.shorts(GROUP_ROWS);
            float[] acc = s.terms(GROUP_ROWS);
            for (int g = start; g < end; g++) {
                java.util.Arrays.fill(acc, 0, GROUP_ROWS, 0f);
                for (int b = 0; b < blocks; b++) {
                    long at = blockAt(g, b);
                    blockSums(data.asSlice(at + SCALE_BYTES, BLOCK_BYTES - SCALE_BYTES), tables, b * 64 * TABLE, sums);
                    terms(sums, data, at, x.scale(b), acc);
                }
                int n = Math.min(GROUP_ROWS, rows - g * GROUP_ROWS);
                System.arraycopy(acc, 0, y, yOff + g * GROUP_ROWS, n);
            }
        });
    }

    /**
     * sums[r] = Σ over the block's 64 pairs of table[pair][index of row r] for the group's 256 rows
     * (exact: at most ±32,512), from the block's index tiles {@code codes} and the tables from
     * {@code t0}. At 512 bits the eight tiles' sums stay in registers across the block.
     */
    private static void blockSums(MemorySegment codes, short[] tables, int t0, short[] sums) {
        for (int part = 0; part < PARTS; part++) {
            int lane = part * S.vectorByteSize();
            ShortVector s0 = ShortVector.zero(S), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
            for (int v = 0; v < INDEX_VECTORS; v++) {
                long at = (long) v * TILES * TILE_BYTES + lane;
                ShortVector i0 = ShortVector.fromMemorySegment(S, codes, at, ByteOrder.LITTLE_ENDIAN);
                ShortVector i1 = ShortVector.fromMemorySegment(S, codes, at + TILE_BYTES, ByteOrder.LITTLE_ENDIAN);
                ShortVector i2 = ShortVector.fromMemorySegment(S, codes, at + 2 * TILE_BYTES, ByteOrder.LITTLE_ENDIAN);
                ShortVector i3 = ShortVector.fromMemorySegment(S, codes, at + 3 * TILE_BYTES, ByteOrder.LITTLE_ENDIAN);
                ShortVector i4 = ShortVector.fromMemorySegment(S, codes, at + 4 * TILE_BYTES, ByteOrder.LITTLE_ENDIAN);
                ShortVector i5 = ShortVector.fromMemorySegment(S, codes, at + 5 * TILE_BYTES, ByteOrder.LITTLE_ENDIAN);
                ShortVector i6 = ShortVector.fromMemorySegment(S, codes, at + 6 * TILE_BYTES, ByteOrder.LITTLE_ENDIAN);
                ShortVector i7 = ShortVector.fromMemorySegment(S, codes, at + 7 * TILE_BYTES, ByteOrder.LITTLE_ENDIAN);
                for (int n = 0; n < 4; n++) {
                    int t = t0 + (4 * v + n) * TABLE, shift = 4 * n;
                    ShortVector table = ShortVector.fromArray(S, tables, t);
                    if (NARROW) {   // 8 lanes: the sixteen sums are two vectors, looked up by a two-vector select (modulo 16)
                        ShortVector high = ShortVector.fromArray(S, tables, t + S.length());
                        s0 = s0.add(i0.lanewise(LSHR, shift).selectFrom(table, high));
                        s1 = s1.add(i1.lanewise(LSHR, shift).selectFrom(table, high));
                        s2 = s2.add(i2.lanewise(LSHR, shift).selectFrom(table, high));
                        s3 = s3.add(i3.lanewise(LSHR, shift).selectFrom(table, high));
                        s4 = s4.add(i4.lanewise(LSHR, shift).selectFrom(table, high));
                        s5 = s5.add(i5.lanewise(LSHR, shift).selectFrom(table, high));
                        s6 = s6.add(i6.lanewise(LSHR, shift).selectFrom(table, high));
                        s7 = s7.add(i7.lanewise(LSHR, shift).selectFrom(table, high));
                    } else {
                        s0 = s0.add(i0.lanewise(LSHR, shift).selectFrom(table));
                        s1 = s1.add(i1.lanewise(LSHR, shift).selectFrom(table));
                        s2 = s2.add(i2.lanewise(LSHR, shift).selectFrom(table));
                        s3 = s3.add(i3.lanewise(LSHR, shift).selectFrom(table));
                        s4 = s4.add(i4.lanewise(LSHR, shift).selectFrom(table));
                        s5 = s5.add(i5.lanewise(LSHR, shift).selectFrom(table));
                        s6 = s6.add(i6.lanewise(LSHR, shift).selectFrom(table));
                        s7 = s7.add(i7.lanewise(LSHR, shift).selectFrom(table));
                    }
                }
            }
            s0.intoArray(sums, lane / 2);
            s1.intoArray(sums, TILE_ROWS + lane / 2);
            s2.intoArray(sums, 2 * TILE_ROWS + lane / 2);
            s3.intoArray(sums, 3 * TILE_ROWS + lane / 2);
            s4.intoArray(sums, 4 * TILE_ROWS + lane / 2);
            s5.intoArray(sums, 5 * TILE_ROWS + lane / 2);
            s6.intoArray(sums, 6 * TILE_ROWS + lane / 2);
            s7.intoArray(sums, 7 * TILE_ROWS + lane / 2);
        }
    }

    /** acc[r] += (float) sums[r] · (d[r] · xs) for the group's rows, the shared formula's term of this block. */
    private static void terms(short[] sums, MemorySegment data, long at, float xs, float[] acc) {
        int h = Simd.S_HALF.length();
        for (int r = 0; r < GROUP_ROWS; r += h) {
            IntVector dot = (IntVector) ShortVector.fromArray(Simd.S_HALF, sums, r).convertShape(S2I, I, 0);
            FloatVector d = FloatVector.fromMemorySegment(F, data, at + 4L * r, ByteOrder.LITTLE_ENDIAN);
            FloatVector t = ((FloatVector) dot.convertShape(I2F, F, 0)).mul(d.mul(xs));
            FloatVector.fromArray(F, acc, r).add(t).intoArray(acc, r);
        }
    }

    // ---------------------------------------------------------------- prefill, dots, the scalar twin

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
        short[] sums = new short[GROUP_ROWS];
        for (int c = 0; c < xs.length; c++) {
            short[] tables = tables(xs[c]);
            for (int g = 0; g < groups; g++) {
                for (int b = 0; b < blocks; b++) {
                    blockSums(data.asSlice(blockAt(g, b) + SCALE_BYTES, BLOCK_BYTES - SCALE_BYTES), tables, b * 64 * TABLE, sums);
                    for (int r = 0; r < Math.min(GROUP_ROWS, rows - g * GROUP_ROWS); r++) out[c][(g * GROUP_ROWS + r) * blocks + b] = sums[r];
                }
            }
        }
        return out;
    }

    /** Scalar twin: each row's nibble of each pair read from the layout, and the pair's two products summed as the table holds them. */
    @Override
    public int[][] blockDotsScalar(ActivationBlocks... xs) {
        TernaryMatrix.checkColumns(cols, xs);
        int[][] out = new int[xs.length][rows * blocks];
        for (int c = 0; c < xs.length; c++) {
            for (int row = 0; row < rows; row++) {
                for (int b = 0; b < blocks; b++) {
                    long at = blockAt(row / GROUP_ROWS, b);
                    int dot = 0;
                    for (int p = 0; p < 64; p++) {
                        int nibble = data.get(ValueLayout.JAVA_SHORT_UNALIGNED, indexAt(at, row % GROUP_ROWS, p)) >> (4 * (p % 4)) & 0xF;
                        dot += ((nibble & 3) - 1) * xs[c].q(b * 128 + 2 * p) + ((nibble >> 2) - 1) * xs[c].q(b * 128 + 2 * p + 1);
                    }
                    out[c][row * blocks + b] = dot;
                }
            }
        }
        return out;
    }
}
