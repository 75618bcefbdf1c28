package jquant.formats.quant;

import java.lang.foreign.MemorySegment;
import jquant.formats.Dequantizer;

/**
 * ggml TQ2_0 (type 35): 256 ternary weights per block as 2-bit codes {@code u = t + 1}, then one
 * fp16 scale; {@code w = (u − 1) · d}. The block is two 128-weight halves of 32 bytes; in half
 * {@code h}, weight {@code 128·h + 32·n + m} sits at bits {@code 2n..2n+1} of byte {@code 32·h + m}.
 *
 * <pre>
 * byte  0                 32                64      66
 *       ├─────────────────┼─────────────────┼───────┤
 *       │ qs half 0       │ qs half 1       │ d f16 │
 *       └─────────────────┴─────────────────┴───────┘
 * qs[32h+m] = u[128h+96+m] &lt;&lt; 6 | u[128h+64+m] &lt;&lt; 4 | u[128h+32+m] &lt;&lt; 2 | u[128h+m]
 * </pre>
 *
 * <p>Code 3 is never written by a ternary quantizer; this reader decodes it as {@code +2·d}, exactly as
 * ggml's {@code dequantize_row_tq2_0} does, so that every container byte has one meaning.
 */
public final class TQ2_0Dequantizer implements Dequantizer {
    public static final int BLOCK_WEIGHTS = 256;
    public static final int QS_OFFSET = 0;
    public static final int QS_BYTES = BLOCK_WEIGHTS / 4;
    public static final int SCALE_OFFSET = QS_OFFSET + QS_BYTES;
    public static final int BLOCK_BYTES = SCALE_OFFSET + 2;
    /** Bytes per 128-weight half; also the stride between weights sharing a byte. */
    public static final int HALF_BYTES = 32;

    @Override
    public void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, BLOCK_WEIGHTS, "TQ2_0");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BLOCK_BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            int out = offset + b * BLOCK_WEIGHTS;
            for (int half = 0; half < 2; half++) {
                for (int m = 0; m < HALF_BYTES; m++) {
                    int packed = Blocks.unsignedByte(src, base + QS_OFFSET + half * HALF_BYTES + m);
                    for (int n = 0; n < 4; n++) {
                        int code = (packed >>> (2 * n)) & 3;
                        dst[out + 128 * half + HALF_BYTES * n + m] = (code - 1) * d;
                    }
                }
            }
        }
    }
}
