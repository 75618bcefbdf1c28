package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * ggml Q2_K (type 10): a super-block of 256 weights in 16 sub-blocks of 16, each sub-block with a
 * 4-bit scale {@code sc} and a 4-bit min {@code m}, themselves scaled by the fp16 {@code d} and
 * {@code dmin}; 2-bit codes {@code q}: {@code w = d·sc·q − dmin·m}.
 *
 * <pre>
 * byte  0            16                                   80      82        84
 *       ├────────────┼────────────────────────────────────┼───────┼─────────┤
 *       │ scales[16] │ qs[64]                             │ d f16 │ dmin f16│
 *       └────────────┴────────────────────────────────────┴───────┴─────────┘
 * scales[s] = m[s] &lt;&lt; 4 | sc[s]                  sub-block s = weights 16s … 16s+15
 * weight e = 128h + 32n + r  (h &lt; 2, n &lt; 4, r &lt; 32):  q = bits 2n..2n+1 of qs[32h + r]
 * </pre>
 *
 * Definition: {@code block_q2_K} in ggml's {@code ggml/src/ggml-common.h}, {@code dequantize_row_q2_K}
 * in {@code ggml/src/ggml-quants.c}.
 */
public final class Q2_KBlock {
    public static final int WEIGHTS = 256;
    public static final int SUB_BLOCK_WEIGHTS = 16;
    public static final int SCALES_OFFSET = 0;
    public static final int SCALES_BYTES = WEIGHTS / SUB_BLOCK_WEIGHTS;
    public static final int QS_OFFSET = SCALES_OFFSET + SCALES_BYTES;
    public static final int QS_BYTES = WEIGHTS / 4;
    public static final int SCALE_OFFSET = QS_OFFSET + QS_BYTES;
    public static final int MIN_SCALE_OFFSET = SCALE_OFFSET + 2;
    public static final int BYTES = MIN_SCALE_OFFSET + 2;

    private Q2_KBlock() {}

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "Q2_K");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            float dmin = Blocks.half(src, base + MIN_SCALE_OFFSET);
            int out = offset + b * WEIGHTS;
            for (int s = 0; s < SCALES_BYTES; s++) {
                int packed = Blocks.unsignedByte(src, base + SCALES_OFFSET + s);
                float dl = d * (packed & 0x0F);
                float ml = dmin * (packed >>> 4);
                for (int e = s * SUB_BLOCK_WEIGHTS; e < (s + 1) * SUB_BLOCK_WEIGHTS; e++) {
                    dst[out + e] = dl * TwoBitPlanes.code(src, base + QS_OFFSET, e) - ml;
                }
            }
        }
    }
}
