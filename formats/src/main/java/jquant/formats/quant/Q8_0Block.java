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

    /**
     * Encodes {@code count} weights (whole blocks) from {@code src[offset..]} into {@code dst} at its
     * position (little-endian), exactly as ggml's {@code quantize_row_q8_0_ref}: per block {@code d = amax / 127} stored
     * as fp16 (round to nearest even, as ggml's fp32→fp16), {@code q = roundf(x · (1/d))} with the float
     * {@code d} (halves away from zero, as C's {@code roundf}), all zeros for an all-zero block.
     */
    public static void quantize(float[] src, int offset, int count, java.nio.ByteBuffer dst) {
        int blocks = Blocks.blocks(count, WEIGHTS, "Q8_0");
        for (int b = 0; b < blocks; b++) {
            int in = offset + b * WEIGHTS;
            float amax = 0f;
            for (int i = 0; i < WEIGHTS; i++) amax = Math.max(amax, Math.abs(src[in + i]));
            float d = amax / 127;
            float id = d != 0f ? 1.0f / d : 0.0f;
            dst.putShort(Float.floatToFloat16(d));
            for (int i = 0; i < WEIGHTS; i++) dst.put((byte) roundHalfAway(src[in + i] * id));
        }
    }

    /** C's {@code roundf}: to nearest, halves away from zero ({@link Math#round} is exactly floor(x + 1/2)). */
    private static int roundHalfAway(float x) {
        int r = Math.round(Math.abs(x));
        return x < 0 ? -r : r;
    }

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
