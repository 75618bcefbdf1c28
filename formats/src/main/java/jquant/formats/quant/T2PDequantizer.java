package jquant.formats.quant;

import java.lang.foreign.MemorySegment;
import jquant.formats.Dequantizer;

/**
 * T2P, jquant's ternary row-pair layout (GGUF id 1000, seed 000): one block holds 4 rows × 128
 * weights in 136 bytes — four fp16 row scales, then 128 code bytes as 2 row pairs × 4 words × 16
 * bytes — the size of four PQ2_0 blocks. Codes are {@code u = t + 1} in 2 bits, {@code w = (u − 1) · d}
 * (code 3 decodes as {@code +2·d}, as in {@link PQ2_0Dequantizer}).
 *
 * <pre>
 * byte  0    2    4    6    8                 72                136
 *       ├────┼────┼────┼────┼─────────────────┼─────────────────┤
 *       │ d0 │ d1 │ d2 │ d3 │ pair 0 (rows 0,1)│ pair 1 (rows 2,3)│   d_r: fp16 scale of row r
 *       └────┴────┴────┴────┴─────────────────┴─────────────────┘
 * code byte (pair p, word wd, byte j) at 8 + 64·p + 16·wd + j:
 *     row = 2p + (j ≥ 8);  bits 2s..2s+1 (slot s) = u of weight 8·(4·wd + s) + (j mod 8)
 * </pre>
 *
 * <p>A tensor is a run of row groups (4 consecutive rows), each {@code cols / 128} blocks in column
 * order, so block b of group g starts at byte {@code (g · cols/128 + b) · 136}. This decoder is
 * therefore bound to a row length and decodes whole row groups into row-major floats.
 */
public final class T2PDequantizer implements Dequantizer {
    public static final int ROWS = 4;
    public static final int BLOCK_WEIGHTS = 128;
    public static final int SCALES_OFFSET = 0;
    public static final int CODES_OFFSET = 2 * ROWS;
    public static final int PAIR_BYTES = 64;
    public static final int WORD_BYTES = 16;
    public static final int BLOCK_BYTES = CODES_OFFSET + ROWS * BLOCK_WEIGHTS / 4;

    private final int cols;

    /** A decoder for rows of {@code cols} weights (a positive multiple of 128). */
    public T2PDequantizer(int cols) {
        if (cols <= 0 || cols % BLOCK_WEIGHTS != 0) {
            throw new IllegalArgumentException("T2P needs a row length that is a positive multiple of " + BLOCK_WEIGHTS + ", got " + cols);
        }
        this.cols = cols;
    }

    @Override
    public void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int groups = Blocks.blocks(count, ROWS * cols, "T2P (4 rows of " + cols + ")");
        int blocksPerRow = cols / BLOCK_WEIGHTS;
        for (int g = 0; g < groups; g++) {
            for (int b = 0; b < blocksPerRow; b++) {
                long base = ((long) g * blocksPerRow + b) * BLOCK_BYTES;
                for (int p = 0; p < 2; p++) {
                    for (int wd = 0; wd < 4; wd++) {
                        for (int j = 0; j < WORD_BYTES; j++) {
                            int row = 2 * p + (j >= 8 ? 1 : 0);
                            float d = Blocks.half(src, base + SCALES_OFFSET + 2L * row);
                            int codes = Blocks.unsignedByte(src, base + CODES_OFFSET + (long) PAIR_BYTES * p + WORD_BYTES * wd + j);
                            for (int s = 0; s < 4; s++) {
                                int k = 8 * (4 * wd + s) + j % 8;
                                int u = (codes >>> (2 * s)) & 3;
                                dst[offset + (g * ROWS + row) * cols + b * BLOCK_WEIGHTS + k] = (u - 1) * d;
                            }
                        }
                    }
                }
            }
        }
    }
}
