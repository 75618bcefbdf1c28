package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * ggml Q5_0 (type 6): 32 weights per block, an fp16 scale, the fifth (high) bit of each code in a
 * little-endian u32 {@code qh}, and the low four bits packed as in Q4_0; {@code w[i] = (q[i] − 16) · d}.
 *
 * <pre>
 * byte  0      2              6                              22
 *       ├──────┼──────────────┼──────────────────────────────┤
 *       │ d f16│ qh (u32 LE)  │ qs[0] … qs[15]               │
 *       └──────┴──────────────┴──────────────────────────────┘
 * q[j]    = (qs[j] &amp; 15) | bit j      of qh &lt;&lt; 4      (j &lt; 16)
 * q[j+16] = (qs[j] &gt;&gt; 4) | bit (j+16) of qh &lt;&lt; 4
 * </pre>
 *
 * Definition: {@code block_q5_0} in ggml's {@code ggml/src/ggml-common.h}, {@code dequantize_row_q5_0}
 * in {@code ggml/src/ggml-quants.c}.
 */
public final class Q5_0Block {
    public static final int WEIGHTS = 32;
    public static final int SCALE_OFFSET = 0;
    public static final int QH_OFFSET = 2;
    public static final int QH_BYTES = WEIGHTS / 8;
    public static final int QS_OFFSET = QH_OFFSET + QH_BYTES;
    public static final int QS_BYTES = WEIGHTS / 2;
    public static final int BYTES = QS_OFFSET + QS_BYTES;
    /** Codes 0..31 stand for −16..15. */
    public static final int ZERO_CODE = 16;

    private Q5_0Block() {}

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "Q5_0");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            int out = offset + b * WEIGHTS;
            for (int i = 0; i < WEIGHTS; i++) {
                dst[out + i] = (Q5Codes.code(src, base + QS_OFFSET, base + QH_OFFSET, i) - ZERO_CODE) * d;
            }
        }
    }
}
