package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * T2P, jquant's ternary row-pair layout (GGUF id 1000, from the T2P write-up): 4 rows × 128 weights in
 * 136 bytes — four fp16 row scales, then 128 code bytes as 2 row pairs × 4 words × 16 bytes, the size of
 * four PQ2_0 blocks — arranged so that one AND mask extracts 16 weights that a dot product wants side by
 * side, 8 of one row then the same 8 of the next. Codes are {@code u = t + 1} in 2 bits,
 * {@code w = (u − 1) · d}.
 *
 * <pre>
 * byte  0    2    4    6    8                  72                 136
 *       ├────┼────┼────┼────┼──────────────────┼──────────────────┤
 *       │ d0 │ d1 │ d2 │ d3 │ pair 0 (rows 0,1)│ pair 1 (rows 2,3)│   d_r: fp16 scale of row r
 *       └────┴────┴────┴────┴──────────────────┴──────────────────┘
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
    public static final int SCALES_OFFSET = 0;
    public static final int CODES_OFFSET = SCALES_OFFSET + 2 * ROWS;
    public static final int PAIRS = 2;
    public static final int WORDS = 4;
    public static final int WORD_BYTES = 16;
    public static final int SLOTS = 4;
    public static final int PAIR_BYTES = WORDS * WORD_BYTES;
    public static final int BYTES = CODES_OFFSET + PAIRS * PAIR_BYTES;

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

    /**
     * Decodes {@code count} weights, whole row groups of rows of {@code cols} weights (a positive
     * multiple of 128), from {@code src} into row-major {@code dst[offset..]}; code 3 decodes as
     * {@code +2·d}, as in PQ2_0.
     */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count, int cols) {
        if (cols <= 0 || cols % WEIGHTS != 0) {
            throw new IllegalArgumentException("T2P needs a row length that is a positive multiple of " + WEIGHTS + ", got " + cols);
        }
        int groups = Blocks.blocks(count, ROWS * cols, "T2P (4 rows of " + cols + ")");
        int blocksPerRow = cols / WEIGHTS;
        for (int g = 0; g < groups; g++) {
            for (int b = 0; b < blocksPerRow; b++) {
                long base = ((long) g * blocksPerRow + b) * BYTES;
                for (int p = 0; p < PAIRS; p++) {
                    for (int wd = 0; wd < WORDS; wd++) {
                        for (int j = 0; j < WORD_BYTES; j++) {
                            int row = rowOf(p, j);
                            float d = Blocks.half(src, base + SCALES_OFFSET + 2L * row);
                            int codes = Blocks.unsignedByte(src, base + codeByte(p, wd, j));
                            for (int s = 0; s < SLOTS; s++) {
                                int u = (codes >>> (2 * s)) & 3;
                                dst[offset + (g * ROWS + row) * cols + b * WEIGHTS + weightOf(wd, s, j)] = (u - 1) * d;
                            }
                        }
                    }
                }
            }
        }
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
