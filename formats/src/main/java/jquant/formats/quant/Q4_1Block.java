package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * ggml Q4_1 (type 3): 32 weights per block, an fp16 scale {@code d}, an fp16 offset {@code m} and
 * 16 bytes of unsigned 4-bit codes; {@code w[i] = q[i] · d + m}. Nibbles are packed as in Q4_0: byte
 * {@code j} holds weight {@code j} low and weight {@code j + 16} high.
 *
 * <pre>
 * byte  0      2      4                              20
 *       ├──────┼──────┼──────────────────────────────┤
 *       │ d f16│ m f16│ qs[0] … qs[15]               │
 *       └──────┴──────┴──────────────────────────────┘
 * qs[j] = (q[j+16] &lt;&lt; 4) | q[j]
 * </pre>
 *
 * Definition: {@code block_q4_1} in ggml's {@code ggml/src/ggml-common.h}, {@code dequantize_row_q4_1}
 * in {@code ggml/src/ggml-quants.c}.
 */
public final class Q4_1Block {
    public static final int WEIGHTS = 32;
    public static final int SCALE_OFFSET = 0;
    public static final int MIN_OFFSET = 2;
    public static final int QS_OFFSET = 4;
    public static final int QS_BYTES = WEIGHTS / 2;
    public static final int BYTES = QS_OFFSET + QS_BYTES;

    private Q4_1Block() {}

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "Q4_1");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            float m = Blocks.half(src, base + MIN_OFFSET);
            int out = offset + b * WEIGHTS;
            for (int j = 0; j < QS_BYTES; j++) {
                int packed = Blocks.unsignedByte(src, base + QS_OFFSET + j);
                dst[out + j] = (packed & 0x0F) * d + m;
                dst[out + j + QS_BYTES] = (packed >>> 4) * d + m;
            }
        }
    }
}
