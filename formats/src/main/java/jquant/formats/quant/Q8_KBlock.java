package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * ggml Q8_K (type 15): 256 weights per block, an fp32 (not fp16) scale and 256 signed bytes;
 * {@code w[i] = qs[i] · d}. ggml uses it for activations in K-quant dot products; the trailing
 * per-16 code sums ({@code bsums}) only speed those up and play no part in the value.
 *
 * <pre>
 * byte  0        4                                  260                  292
 *       ├────────┼──────────────────────────────────┼────────────────────┤
 *       │ d f32  │ qs[0] … qs[255]  (int8)          │ bsums[16] (int16)  │
 *       └────────┴──────────────────────────────────┴────────────────────┘
 * </pre>
 *
 * Definition: {@code block_q8_K} in ggml's {@code ggml/src/ggml-common.h}, {@code dequantize_row_q8_K}
 * in {@code ggml/src/ggml-quants.c}.
 */
public final class Q8_KBlock {
    public static final int WEIGHTS = 256;
    public static final int SCALE_OFFSET = 0;
    public static final int QS_OFFSET = 4;
    public static final int BSUMS_OFFSET = QS_OFFSET + WEIGHTS;
    public static final int BSUMS_BYTES = WEIGHTS / 16 * 2;
    public static final int BYTES = BSUMS_OFFSET + BSUMS_BYTES;

    private Q8_KBlock() {}

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "Q8_K");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.f32(src, base + SCALE_OFFSET);
            int out = offset + b * WEIGHTS;
            for (int i = 0; i < WEIGHTS; i++) {
                dst[out + i] = d * Blocks.signedByte(src, base + QS_OFFSET + i);
            }
        }
    }
}
