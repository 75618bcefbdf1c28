package jquant.formats.quant;

import java.lang.foreign.MemorySegment;
import jquant.formats.Dequantizer;

/**
 * PrismML PTQ1_0 (type 143): TQ1_0's base-3 codec (see {@link Trits}) on 128-weight blocks, scale last;
 * {@code w = (t − 1)·d}.
 *
 * <pre>
 * byte  0               16          24      26      28
 *       ├───────────────┼───────────┼───────┼───────┤
 *       │ qs stage A(16)│ stage B(8)│ qh (2)│ d f16 │
 *       └───────────────┴───────────┴───────┴───────┘
 * stage A byte m (m &lt; 16): trits of weights      m, 16+m, 32+m, 48+m, 64+m  (most significant first)
 * stage B byte m (m &lt; 8):  trits of weights 80+m, 88+m, 96+m, 104+m, 112+m
 * qh byte h (h &lt; 2):       trits of weights 120+h, 122+h, 124+h, 126+h
 * </pre>
 */
public final class PTQ1_0Dequantizer implements Dequantizer {
    public static final int BLOCK_WEIGHTS = 128;
    public static final int QS_OFFSET = 0;
    public static final int QS_BYTES = 24;
    /** qs is consumed in a stage of 16 bytes, then one of 8. */
    static final int[] QS_STAGES = {16, 8};
    public static final int QH_OFFSET = QS_OFFSET + QS_BYTES;
    public static final int QH_BYTES = 2;
    public static final int SCALE_OFFSET = QH_OFFSET + QH_BYTES;
    public static final int BLOCK_BYTES = SCALE_OFFSET + 2;

    @Override
    public void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, BLOCK_WEIGHTS, "PTQ1_0");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BLOCK_BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            Trits.decodeStaged(src, base + QS_OFFSET, QS_STAGES, base + QH_OFFSET, QH_BYTES, d, dst,
                    offset + b * BLOCK_WEIGHTS);
        }
    }
}
