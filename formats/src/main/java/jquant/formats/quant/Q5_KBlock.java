package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * ggml Q5_K (type 13): Q4_K with a fifth code bit. 256 weights in 8 sub-blocks of 32, 6-bit scales
 * and mins ({@link KScales}) times fp16 {@code d}, {@code dmin}; unsigned 5-bit codes:
 * {@code w = d·sc·q − dmin·m}.
 *
 * <pre>
 * byte  0      2         4              16          48                          176
 *       ├──────┼─────────┼──────────────┼───────────┼───────────────────────────┤
 *       │ d f16│ dmin f16│ scales[12]   │ qh[32]    │ qs[128]                   │
 *       └──────┴─────────┴──────────────┴───────────┴───────────────────────────┘
 * weight e = 64c + 32t + l (c &lt; 4, t &lt; 2, l &lt; 32):
 *   q = nibble t (low first) of qs[32c + l]  |  bit e/32 of qh[l] &lt;&lt; 4
 * sub-block of weight e: e / 32
 * </pre>
 *
 * Definition: {@code block_q5_K} in ggml's {@code ggml/src/ggml-common.h}, {@code dequantize_row_q5_K}
 * in {@code ggml/src/ggml-quants.c}.
 */
public final class Q5_KBlock {
    public static final int WEIGHTS = 256;
    public static final int SUB_BLOCK_WEIGHTS = 32;
    public static final int SCALE_OFFSET = 0;
    public static final int MIN_SCALE_OFFSET = 2;
    public static final int SCALES_OFFSET = 4;
    public static final int QH_OFFSET = SCALES_OFFSET + KScales.BYTES;
    public static final int QH_BYTES = WEIGHTS / 8;
    public static final int QS_OFFSET = QH_OFFSET + QH_BYTES;
    public static final int QS_BYTES = WEIGHTS / 2;
    public static final int BYTES = QS_OFFSET + QS_BYTES;

    private Q5_KBlock() {}

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "Q5_K");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            float dmin = Blocks.half(src, base + MIN_SCALE_OFFSET);
            int out = offset + b * WEIGHTS;
            for (int s = 0; s < KScales.SUB_BLOCKS; s++) {
                float dl = d * KScales.scale(src, base + SCALES_OFFSET, s);
                float ml = dmin * KScales.min(src, base + SCALES_OFFSET, s);
                for (int e = s * SUB_BLOCK_WEIGHTS; e < (s + 1) * SUB_BLOCK_WEIGHTS; e++) {
                    int high = (Blocks.unsignedByte(src, base + QH_OFFSET + e % QH_BYTES) >>> s) & 1;
                    dst[out + e] = dl * (Q4_KBlock.nibble(src, base + QS_OFFSET, e) | high << 4) - ml;
                }
            }
        }
    }
}
