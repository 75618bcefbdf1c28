package jquant.formats.quant;

import java.lang.foreign.MemorySegment;
import jquant.formats.Dequantizer;

/**
 * PrismML PQ2_0 (type 142): one fp16 scale then 128 ternary weights as 2-bit codes {@code u = t + 1};
 * {@code w = (u − 1) · d}. Weight {@code j} sits at bits {@code 2·(j mod 4)} of byte {@code j / 4}, so
 * consecutive weights fill a byte from its least significant bits up.
 *
 * <pre>
 * byte  0       2                                  34
 *       ├───────┼──────────────────────────────────┤
 *       │ d f16 │ qs[0] … qs[31]                   │
 *       └───────┴──────────────────────────────────┘
 * qs[k] = u[4k+3] &lt;&lt; 6 | u[4k+2] &lt;&lt; 4 | u[4k+1] &lt;&lt; 2 | u[4k]
 * </pre>
 *
 * <p>Code 3 is reachable in the container though a ternary checkpoint never produces it; this reader
 * decodes it as {@code +2·d} (the arithmetic value of the code, as the row-pair repack's integer math
 * does), never as an error or a clamp.
 */
public final class PQ2_0Dequantizer implements Dequantizer {
    public static final int BLOCK_WEIGHTS = 128;
    public static final int SCALE_OFFSET = 0;
    public static final int QS_OFFSET = 2;
    public static final int QS_BYTES = BLOCK_WEIGHTS / 4;
    public static final int BLOCK_BYTES = QS_OFFSET + QS_BYTES;

    @Override
    public void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, BLOCK_WEIGHTS, "PQ2_0");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BLOCK_BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            int out = offset + b * BLOCK_WEIGHTS;
            for (int j = 0; j < BLOCK_WEIGHTS; j++) {
                int code = (Blocks.unsignedByte(src, base + QS_OFFSET + j / 4) >>> (2 * (j % 4))) & 3;
                dst[out + j] = (code - 1) * d;
            }
        }
    }
}
