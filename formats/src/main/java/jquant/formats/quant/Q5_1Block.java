package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * ggml Q5_1 (type 7): 32 weights per block, an fp16 scale {@code d} and offset {@code m}, then the
 * 5-bit codes split exactly as in Q5_0; {@code w[i] = q[i] · d + m}.
 *
 * <pre>
 * byte  0      2      4              8                              24
 *       ├──────┼──────┼──────────────┼──────────────────────────────┤
 *       │ d f16│ m f16│ qh (u32 LE)  │ qs[0] … qs[15]               │
 *       └──────┴──────┴──────────────┴──────────────────────────────┘
 * q[j]    = (qs[j] &amp; 15) | bit j      of qh &lt;&lt; 4      (j &lt; 16)
 * q[j+16] = (qs[j] &gt;&gt; 4) | bit (j+16) of qh &lt;&lt; 4
 * </pre>
 *
 * Definition: {@code block_q5_1} in ggml's {@code ggml/src/ggml-common.h}, {@code dequantize_row_q5_1}
 * in {@code ggml/src/ggml-quants.c}.
 */
public final class Q5_1Block {
    public static final int WEIGHTS = 32;
    public static final int SCALE_OFFSET = 0;
    public static final int MIN_OFFSET = 2;
    public static final int QH_OFFSET = 4;
    public static final int QH_BYTES = WEIGHTS / 8;
    public static final int QS_OFFSET = QH_OFFSET + QH_BYTES;
    public static final int QS_BYTES = WEIGHTS / 2;
    public static final int BYTES = QS_OFFSET + QS_BYTES;

    private Q5_1Block() {}

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "Q5_1");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            float m = Blocks.half(src, base + MIN_OFFSET);
            int out = offset + b * WEIGHTS;
            for (int i = 0; i < WEIGHTS; i++) {
                dst[out + i] = Q5Codes.code(src, base + QS_OFFSET, base + QH_OFFSET, i) * d + m;
            }
        }
    }
}
