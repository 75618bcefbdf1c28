package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * ggml Q8_0: 32 weights per block, one fp16 scale and 32 signed bytes; {@code w[i] = qs[i] · d}.
 *
 * <pre>
 * byte  0      2                                   34
 *       ├──────┼───────────────────────────────────┤
 *       │ d f16│ qs[0] qs[1] …  qs[31]  (int8)      │
 *       └──────┴───────────────────────────────────┘
 * </pre>
 */
public final class Q8_0Block {
    public static final int WEIGHTS = 32;
    public static final int SCALE_OFFSET = 0;
    public static final int QS_OFFSET = 2;
    public static final int BYTES = QS_OFFSET + WEIGHTS;

    private Q8_0Block() {}

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "Q8_0");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            int out = offset + b * WEIGHTS;
            for (int i = 0; i < WEIGHTS; i++) {
                dst[out + i] = Blocks.signedByte(src, base + QS_OFFSET + i) * d;
            }
        }
    }
}
