package jquant.formats.quant;

import java.lang.foreign.MemorySegment;
import jquant.formats.Dequantizer;

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
public final class Q6_KDequantizer implements Dequantizer {
    public static final int BLOCK_WEIGHTS = 256;
    public static final int SUB_BLOCK_WEIGHTS = 16;
    public static final int QL_OFFSET = 0;
    public static final int QL_BYTES = BLOCK_WEIGHTS / 2;
    public static final int QH_OFFSET = QL_OFFSET + QL_BYTES;
    public static final int QH_BYTES = BLOCK_WEIGHTS / 4;
    public static final int SCALES_OFFSET = QH_OFFSET + QH_BYTES;
    public static final int SCALES_BYTES = BLOCK_WEIGHTS / SUB_BLOCK_WEIGHTS;
    public static final int SCALE_OFFSET = SCALES_OFFSET + SCALES_BYTES;
    public static final int BLOCK_BYTES = SCALE_OFFSET + 2;
    /** Codes 0..63 stand for −32..31. */
    public static final int ZERO_CODE = 32;

    @Override
    public void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, BLOCK_WEIGHTS, "Q6_K");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BLOCK_BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            int out = offset + b * BLOCK_WEIGHTS;
            for (int e = 0; e < BLOCK_WEIGHTS; e++) {
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
