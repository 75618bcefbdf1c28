package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * ggml Q3_K (type 11): a super-block of 256 weights in 16 sub-blocks of 16, each with a signed 6-bit
 * scale {@code sc}, times one fp16 {@code d}; signed 3-bit codes {@code q ∈ [−4, 3]}: {@code w = d·sc·q}.
 * A code's low two bits are laid out as in Q2_K; its high bit is a mask bit, and a <em>clear</em>
 * mask bit means {@code q = low − 4}, a set one {@code q = low}.
 *
 * <pre>
 * byte  0             32                             96             108     110
 *       ├─────────────┼──────────────────────────────┼──────────────┼───────┤
 *       │ hmask[32]   │ qs[64]                       │ scales[12]   │ d f16 │
 *       └─────────────┴──────────────────────────────┴──────────────┴───────┘
 * weight e = 128h + 32n + r (h &lt; 2, n &lt; 4, r &lt; 32):
 *   low  = bits 2n..2n+1 of qs[32h + r]
 *   high = bit e/32 of hmask[r]                      q = low − (high ? 0 : 4)
 * scale of sub-block s (weights 16s … 16s+15), stored as sc + 32 in 6 bits:
 *   bits 0..3 = s &lt; 8 ? scales[s] &amp; 15 : scales[s−8] &gt;&gt; 4
 *   bits 4..5 = bits 2·(s/4)..2·(s/4)+1 of scales[8 + s%4]
 * </pre>
 *
 * Definition: {@code block_q3_K} in ggml's {@code ggml/src/ggml-common.h}, {@code dequantize_row_q3_K}
 * (and the packing in {@code quantize_row_q3_K_ref}) in {@code ggml/src/ggml-quants.c}.
 */
public final class Q3_KBlock {
    public static final int WEIGHTS = 256;
    public static final int SUB_BLOCK_WEIGHTS = 16;
    public static final int HMASK_OFFSET = 0;
    public static final int HMASK_BYTES = WEIGHTS / 8;
    public static final int QS_OFFSET = HMASK_OFFSET + HMASK_BYTES;
    public static final int QS_BYTES = WEIGHTS / 4;
    public static final int SCALES_OFFSET = QS_OFFSET + QS_BYTES;
    public static final int SCALES_BYTES = 12;
    public static final int SCALE_OFFSET = SCALES_OFFSET + SCALES_BYTES;
    public static final int BYTES = SCALE_OFFSET + 2;
    /** Stored 6-bit scales 0..63 stand for −32..31. */
    public static final int SCALE_ZERO = 32;
    /** Subtracted from a code whose high (mask) bit is clear. */
    public static final int CODE_OFFSET = 4;

    private Q3_KBlock() {}

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "Q3_K");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            int out = offset + b * WEIGHTS;
            for (int s = 0; s < WEIGHTS / SUB_BLOCK_WEIGHTS; s++) {
                float dl = d * (scale(src, base + SCALES_OFFSET, s) - SCALE_ZERO);
                for (int e = s * SUB_BLOCK_WEIGHTS; e < (s + 1) * SUB_BLOCK_WEIGHTS; e++) {
                    int low = TwoBitPlanes.code(src, base + QS_OFFSET, e);
                    int high = (Blocks.unsignedByte(src, base + HMASK_OFFSET + e % HMASK_BYTES) >>> (e / HMASK_BYTES)) & 1;
                    dst[out + e] = dl * (low - (high == 1 ? 0 : CODE_OFFSET));
                }
            }
        }
    }

    /** The stored 6-bit scale (0..63) of sub-block {@code s}. */
    static int scale(MemorySegment src, long scalesOffset, int s) {
        int low = s < 8
                ? Blocks.unsignedByte(src, scalesOffset + s) & 0x0F
                : Blocks.unsignedByte(src, scalesOffset + s - 8) >>> 4;
        int high = (Blocks.unsignedByte(src, scalesOffset + 8 + s % 4) >>> (2 * (s / 4))) & 3;
        return low | high << 4;
    }
}
