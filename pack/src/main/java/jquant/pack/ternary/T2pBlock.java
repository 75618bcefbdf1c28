package jquant.pack.ternary;

/**
 * T2P, the ternary row-pair layout (seed 000): 4 rows × 128 weights in 136 bytes — the size of four
 * PQ2_0 blocks — arranged so that one AND mask extracts 16 weights that a dot product wants side by
 * side, 8 of one row then the same 8 of the next.
 *
 * <pre>
 *   byte 0 1 | 2 3 | 4 5 | 6 7 | 8 ........................................ 135
 *       [d r0][d r1][d r2][d r3][ pair 0: word 0..3 ][ pair 1: word 0..3 ]   (fp16, LE)
 *
 *   code byte of (pair p, word wd, byte j) = 8 + 64·p + 16·wd + j,   j = 0..15
 *       row  = 2p + (j ≥ 8)
 *       slot s (bits 2s..2s+1) = u = w + 1 of weight k = 8·(4·wd + s) + (j mod 8)
 *
 *   one word:   j = 0 ......... 7 | 8 ......... 15
 *               row 2p            | row 2p+1
 *   slot s  ->  weights 32wd+8s+0..7 of both rows
 * </pre>
 *
 * <p>A tensor is row groups of 4 rows, each a run of blocks in column order: block (g, b) starts at
 * byte {@code (g · cols/128 + b) · 136}. The row scale is per row per 128 weights, exactly PQ2_0's
 * granularity, so a repack copies the fp16 bits unchanged. Codes 0..3 are stored as given (3 = +2,
 * as in PQ2_0); the kernels are exact for all four.
 */
public final class T2pBlock {

    public static final int ROWS = 4;
    public static final int WEIGHTS = 128;
    public static final int BYTES = 136;
    public static final int SCALES_OFFSET = 0;
    public static final int CODES_OFFSET = 8;
    public static final int PAIRS = 2;
    public static final int WORDS = 4;
    public static final int WORD_BYTES = 16;
    public static final int SLOTS = 4;
    public static final int PAIR_BYTES = WORDS * WORD_BYTES;

    private T2pBlock() {}

    /** Offset of block {@code b} of row group {@code g} in a tensor of {@code cols} columns. */
    public static long blockOffset(int group, int block, int cols) {
        return ((long) group * (cols / WEIGHTS) + block) * BYTES;
    }

    /** Offset within a block of the code byte (pair p, word wd, byte j). */
    public static int codeByte(int pair, int word, int j) { return CODES_OFFSET + PAIR_BYTES * pair + WORD_BYTES * word + j; }

    /** Row (0..3 within the group) of code byte j of pair p. */
    public static int rowOf(int pair, int j) { return 2 * pair + (j >= 8 ? 1 : 0); }

    /** Weight (0..127 within the block) held by slot s of byte j of word wd. */
    public static int weightOf(int word, int slot, int j) { return 8 * (4 * word + slot) + (j % 8); }

    /** Packs one block: {@code u[r][k]} are stored codes (0..3) of row r, weight k. */
    public static void pack(int[][] u, short[] scaleBits, byte[] out, int off) {
        for (int r = 0; r < ROWS; r++) Pq2Block.putScale(out, off + SCALES_OFFSET + 2 * r, scaleBits[r]);
        for (int p = 0; p < PAIRS; p++) {
            for (int wd = 0; wd < WORDS; wd++) {
                for (int j = 0; j < WORD_BYTES; j++) {
                    int row = rowOf(p, j), b = 0;
                    for (int s = 0; s < SLOTS; s++) b |= u[row][weightOf(wd, s, j)] << (2 * s);
                    out[off + codeByte(p, wd, j)] = (byte) b;
                }
            }
        }
    }

    /** Stored code of (row, weight k) in the block at {@code off}, the inverse of {@link #pack}. */
    public static int storedCode(byte[] data, int off, int row, int k) {
        int wd = k / 32, s = (k / 8) % 4, j = k % 8 + 8 * (row % 2);
        return (data[off + codeByte(row / 2, wd, j)] >> (2 * s)) & 3;
    }

    public static byte[] encode(TernaryTensor t) throws T2pShapeException {
        T2pShapeException.check(t.name(), t.rows(), t.cols());
        int nb = t.blocksPerRow();
        byte[] out = new byte[Math.toIntExact((long) t.rows() / ROWS * nb * BYTES)];
        int[][] u = new int[ROWS][WEIGHTS];
        short[] scales = new short[ROWS];
        for (int g = 0; g < t.rows() / ROWS; g++) {
            for (int b = 0; b < nb; b++) {
                for (int r = 0; r < ROWS; r++) {
                    scales[r] = t.fp16Scale(4 * g + r, b);
                    for (int k = 0; k < WEIGHTS; k++) u[r][k] = t.code(4 * g + r, b * WEIGHTS + k) + 1;
                }
                pack(u, scales, out, (int) blockOffset(g, b, t.cols()));
            }
        }
        return out;
    }

    public static TernaryTensor decode(String name, byte[] data, int rows, int cols) throws T2pShapeException {
        T2pShapeException.check(name, rows, cols);
        int nb = cols / WEIGHTS;
        if (data.length != (long) rows / ROWS * nb * BYTES) {
            throw new IllegalArgumentException(name + ": T2P " + rows + "×" + cols + " needs " + (long) rows / ROWS * nb * BYTES
                    + " bytes, got " + data.length);
        }
        float[] scales = new float[rows * nb];
        byte[] codes = new byte[rows * cols];
        for (int g = 0; g < rows / ROWS; g++) {
            for (int b = 0; b < nb; b++) {
                int off = (int) blockOffset(g, b, cols);
                for (int r = 0; r < ROWS; r++) {
                    int row = 4 * g + r;
                    scales[row * nb + b] = Float.float16ToFloat(Pq2Block.scaleBits(data, off + SCALES_OFFSET + 2 * r));
                    for (int k = 0; k < WEIGHTS; k++) codes[row * cols + b * WEIGHTS + k] = (byte) (storedCode(data, off, r, k) - 1);
                }
            }
        }
        return new TernaryTensor(name, rows, cols, scales, codes);
    }
}
