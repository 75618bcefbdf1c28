package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * ggml Q4_0: 32 weights per block, one fp16 scale and 16 bytes of 4-bit codes;
 * {@code w[i] = (q[i] − 8) · d}. Byte {@code j} holds weight {@code j} in its low nibble and weight
 * {@code j + 16} in its high nibble.
 *
 * <pre>
 * byte  0      2                              18
 *       ├──────┼──────────────────────────────┤
 *       │ d f16│ qs[0] … qs[15]               │
 *       └──────┴──────────────────────────────┘
 * qs[j] = (q[j+16] &lt;&lt; 4) | q[j]
 * </pre>
 */
public final class Q4_0Block {
    public static final int WEIGHTS = 32;
    public static final int SCALE_OFFSET = 0;
    public static final int QS_OFFSET = 2;
    public static final int QS_BYTES = WEIGHTS / 2;
    public static final int BYTES = QS_OFFSET + QS_BYTES;
    /** Codes 0..15 stand for −8..7. */
    public static final int ZERO_CODE = 8;

    private Q4_0Block() {}

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "Q4_0");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            int out = offset + b * WEIGHTS;
            for (int j = 0; j < QS_BYTES; j++) {
                int packed = Blocks.unsignedByte(src, base + QS_OFFSET + j);
                dst[out + j] = ((packed & 0x0F) - ZERO_CODE) * d;
                dst[out + j + QS_BYTES] = ((packed >>> 4) - ZERO_CODE) * d;
            }
        }
    }
}
