package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * ggml TQ1_0 (type 34): 256 ternary weights per block in base 3, five trits per {@code qs} byte and four
 * per {@code qh} byte (see {@link Trits} for the byte codec), then one fp16 scale; {@code w = (t − 1)·d}.
 *
 * <pre>
 * byte  0                32           48      52      54
 *       ├────────────────┼────────────┼───────┼───────┤
 *       │ qs stage A (32)│ qs stage B │ qh (4)│ d f16 │
 *       └────────────────┴────────────┴───────┴───────┘
 * stage A byte m (m &lt; 32): trits of weights       m, 32+m, 64+m, 96+m, 128+m  (most significant first)
 * stage B byte m (m &lt; 16): trits of weights 160+m, 176+m, 192+m, 208+m, 224+m
 * qh byte h (h &lt; 4):       trits of weights 240+h, 244+h, 248+h, 252+h
 * </pre>
 */
public final class Tq1Block {
    public static final int WEIGHTS = 256;
    public static final int QS_OFFSET = 0;
    public static final int QS_BYTES = 48;
    /** qs is consumed in a stage of 32 bytes, then one of 16. */
    static final int[] QS_STAGES = {32, 16};
    public static final int QH_OFFSET = QS_OFFSET + QS_BYTES;
    public static final int QH_BYTES = 4;
    public static final int SCALE_OFFSET = QH_OFFSET + QH_BYTES;
    public static final int BYTES = SCALE_OFFSET + 2;

    private Tq1Block() {}

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "TQ1_0");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            Trits.decodeStaged(src, base + QS_OFFSET, QS_STAGES, base + QH_OFFSET, QH_BYTES, d, dst,
                    offset + b * WEIGHTS);
        }
    }
}
