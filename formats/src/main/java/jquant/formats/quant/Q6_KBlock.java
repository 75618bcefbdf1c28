package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * ggml Q6_K (type 14): a super-block of 256 weights in 16 sub-blocks of 16, each with a signed 8-bit
 * scale {@code sc}, times one fp16 {@code d}; 6-bit codes {@code q} standing for {@code q − 32}:
 * {@code w = d·sc·(q − 32)}. The low four bits of a code are in {@code ql}, the top two in {@code qh}.
 *
 * <pre>
 * byte  0                    128            192            208     210
 *       ├────────────────────┼──────────────┼──────────────┼───────┤
 *       │ ql[128]            │ qh[64]       │ scales[16]   │ d f16 │
 *       └────────────────────┴──────────────┴──────────────┴───────┘
 * weight e = 128h + 32k + l (h &lt; 2, k &lt; 4, l &lt; 32):
 *   bits 0..3 = nibble k/2 (low first) of ql[64h + 32·(k%2) + l]
 *   bits 4..5 = bits 2k..2k+1 of qh[32h + l]
 * scales[s] (int8) belongs to weights 16s … 16s+15
 * </pre>
 *
 * Definition: {@code block_q6_K} in ggml's {@code ggml/src/ggml-common.h}, {@code dequantize_row_q6_K}
 * in {@code ggml/src/ggml-quants.c}.
 */
public final class Q6_KBlock {
    public static final int WEIGHTS = 256;
    public static final int SUB_BLOCK_WEIGHTS = 16;
    public static final int QL_OFFSET = 0;
    public static final int QL_BYTES = WEIGHTS / 2;
    public static final int QH_OFFSET = QL_OFFSET + QL_BYTES;
    public static final int QH_BYTES = WEIGHTS / 4;
    public static final int SCALES_OFFSET = QH_OFFSET + QH_BYTES;
    public static final int SCALES_BYTES = WEIGHTS / SUB_BLOCK_WEIGHTS;
    public static final int SCALE_OFFSET = SCALES_OFFSET + SCALES_BYTES;
    public static final int BYTES = SCALE_OFFSET + 2;
    /** Codes 0..63 stand for −32..31. */
    public static final int ZERO_CODE = 32;

    private Q6_KBlock() {}

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "Q6_K");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            int out = offset + b * WEIGHTS;
            for (int e = 0; e < WEIGHTS; e++) {
                int sc = Blocks.signedByte(src, base + SCALES_OFFSET + e / SUB_BLOCK_WEIGHTS);
                dst[out + e] = d * sc * (code(src, base, e) - ZERO_CODE);
            }
        }
    }

    /** The stored 6-bit code (0..63) of weight {@code e} of the super-block at {@code base}. */
    static int code(MemorySegment src, long base, int e) {
        int h = e / 128;
        int k = e % 128 / 32;
        int l = e % 32;
        int low = (Blocks.unsignedByte(src, base + QL_OFFSET + 64 * h + 32 * (k % 2) + l) >>> (4 * (k / 2))) & 0x0F;
        int high = (Blocks.unsignedByte(src, base + QH_OFFSET + 32 * h + l) >>> (2 * k)) & 3;
        return low | high << 4;
    }
}
