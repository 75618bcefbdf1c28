package jquant.formats.quant;

import java.lang.foreign.MemorySegment;
import jquant.formats.Dequantizer;

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
public final class Q5_0Dequantizer implements Dequantizer {
    public static final int BLOCK_WEIGHTS = 32;
    public static final int SCALE_OFFSET = 0;
    public static final int QH_OFFSET = 2;
    public static final int QH_BYTES = BLOCK_WEIGHTS / 8;
    public static final int QS_OFFSET = QH_OFFSET + QH_BYTES;
    public static final int QS_BYTES = BLOCK_WEIGHTS / 2;
    public static final int BLOCK_BYTES = QS_OFFSET + QS_BYTES;
    /** Codes 0..31 stand for −16..15. */
    public static final int ZERO_CODE = 16;

    @Override
    public void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, BLOCK_WEIGHTS, "Q5_0");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BLOCK_BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            int out = offset + b * BLOCK_WEIGHTS;
            for (int i = 0; i < BLOCK_WEIGHTS; i++) {
                dst[out + i] = (Q5Codes.code(src, base + QS_OFFSET, base + QH_OFFSET, i) - ZERO_CODE) * d;
            }
        }
    }
}
