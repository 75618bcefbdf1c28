package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * ggml Q4_K (type 12): a super-block of 256 weights in 8 sub-blocks of 32, each with a 6-bit scale
 * {@code sc} and 6-bit min {@code m} (packed as {@link KScales} describes), scaled by the fp16
 * {@code d} and {@code dmin}; unsigned 4-bit codes: {@code w = d·sc·q − dmin·m}.
 *
 * <pre>
 * byte  0      2         4              16                                  144
 *       ├──────┼─────────┼──────────────┼───────────────────────────────────┤
 *       │ d f16│ dmin f16│ scales[12]   │ qs[128]                           │
 *       └──────┴─────────┴──────────────┴───────────────────────────────────┘
 * weight e = 64c + 32t + l (c &lt; 4, t &lt; 2, l &lt; 32): q = nibble t (low first) of qs[32c + l]
 * sub-block of weight e: e / 32
 * </pre>
 *
 * Definition: {@code block_q4_K} in ggml's {@code ggml/src/ggml-common.h}, {@code dequantize_row_q4_K}
 * and {@code get_scale_min_k4} in {@code ggml/src/ggml-quants.c}.
 */
public final class Q4_KBlock {
    public static final int WEIGHTS = 256;
    public static final int SUB_BLOCK_WEIGHTS = 32;
    public static final int SCALE_OFFSET = 0;
    public static final int MIN_SCALE_OFFSET = 2;
    public static final int SCALES_OFFSET = 4;
    public static final int QS_OFFSET = SCALES_OFFSET + KScales.BYTES;
    public static final int QS_BYTES = WEIGHTS / 2;
    public static final int BYTES = QS_OFFSET + QS_BYTES;

    private Q4_KBlock() {}

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "Q4_K");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            float dmin = Blocks.half(src, base + MIN_SCALE_OFFSET);
            int out = offset + b * WEIGHTS;
            for (int s = 0; s < KScales.SUB_BLOCKS; s++) {
                float dl = d * KScales.scale(src, base + SCALES_OFFSET, s);
                float ml = dmin * KScales.min(src, base + SCALES_OFFSET, s);
                for (int e = s * SUB_BLOCK_WEIGHTS; e < (s + 1) * SUB_BLOCK_WEIGHTS; e++) {
                    dst[out + e] = dl * nibble(src, base + QS_OFFSET, e) - ml;
                }
            }
        }
    }

    /** Low four bits of weight {@code e}'s code, laid out as the diagram shows (shared with Q5_K). */
    static int nibble(MemorySegment src, long qsOffset, int e) {
        int packed = Blocks.unsignedByte(src, qsOffset + 32 * (e / 64) + e % 32);
        return (e / 32) % 2 == 0 ? packed & 0x0F : packed >>> 4;
    }
}
