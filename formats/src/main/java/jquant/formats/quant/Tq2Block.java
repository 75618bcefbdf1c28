package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * ggml TQ2_0 (type 35): 256 ternary weights in 66 bytes, {@code { uint8 qs[64]; half d; }} — 2-bit
 * codes {@code u = t + 1}, then one fp16 scale; {@code w = (u − 1) · d}. The block is two 128-weight
 * halves of 32 bytes; in half {@code h}, weight {@code 128·h + 32·n + m} sits at bits {@code 2n..2n+1}
 * of byte {@code 32·h + m}.
 *
 * <pre>
 * byte  0                 32                64      66
 *       ├─────────────────┼─────────────────┼───────┤
 *       │ qs half 0       │ qs half 1       │ d f16 │
 *       └─────────────────┴─────────────────┴───────┘
 * qs[32h+m] = u[128h+96+m] &lt;&lt; 6 | u[128h+64+m] &lt;&lt; 4 | u[128h+32+m] &lt;&lt; 2 | u[128h+m]
 * </pre>
 *
 * <p>That is ggml's {@code quantize_row_tq2_0_ref} / {@code dequantize_row_tq2_0}: byte m of a
 * half gathers weights m, m+32, m+64, m+96. Like the ggml reader, stored code 3 decodes as +2.
 * The scale covers 256 weights, so both 128-blocks of a {@link TernaryTensor} under one TQ2_0 block
 * must carry the same scale.
 */
public final class Tq2Block {

    public static final int WEIGHTS = 256;
    public static final int CODES_OFFSET = 0;
    /** Bytes per 128-weight half; also the stride between weights sharing a byte. */
    public static final int HALF_BYTES = 32;
    public static final int SCALE_OFFSET = CODES_OFFSET + 2 * HALF_BYTES;
    public static final int BYTES = SCALE_OFFSET + 2;

    private Tq2Block() {}

    public static byte[] encode(TernaryTensor t) {
        requireCols(t.name(), t.cols());
        int nb = t.cols() / WEIGHTS;
        byte[] out = new byte[t.rows() * nb * BYTES];
        for (int r = 0; r < t.rows(); r++) {
            for (int b = 0; b < nb; b++) {
                if (Float.compare(t.scale(r, 2 * b), t.scale(r, 2 * b + 1)) != 0) {
                    throw new IllegalArgumentException(t.name() + ": TQ2_0 has one scale per 256 weights but row " + r
                            + " has " + t.scale(r, 2 * b) + " and " + t.scale(r, 2 * b + 1) + " at cols "
                            + b * WEIGHTS + ".." + (b * WEIGHTS + WEIGHTS - 1));
                }
                int off = (r * nb + b) * BYTES;
                Pq2Block.putScale(out, off + SCALE_OFFSET, t.fp16Scale(r, 2 * b));
                for (int k = 0; k < WEIGHTS; k++) {
                    int u = t.code(r, b * WEIGHTS + k) + 1;
                    out[off + byteOf(k)] |= (byte) (u << shiftOf(k));
                }
            }
        }
        return out;
    }

    public static TernaryTensor decode(String name, byte[] data, int rows, int cols) {
        requireCols(name, cols);
        int nb = cols / WEIGHTS;
        if (data.length != (long) rows * nb * BYTES) {
            throw new IllegalArgumentException(name + ": TQ2_0 " + rows + "×" + cols + " needs " + (long) rows * nb * BYTES
                    + " bytes, got " + data.length);
        }
        float[] scales = new float[rows * cols / TernaryTensor.BLOCK];
        byte[] codes = new byte[rows * cols];
        for (int r = 0; r < rows; r++) {
            for (int b = 0; b < nb; b++) {
                int off = (r * nb + b) * BYTES;
                float d = Float.float16ToFloat(Pq2Block.scaleBits(data, off + SCALE_OFFSET));
                scales[r * 2 * nb + 2 * b] = d;
                scales[r * 2 * nb + 2 * b + 1] = d;
                for (int k = 0; k < WEIGHTS; k++) {
                    codes[r * cols + b * WEIGHTS + k] = (byte) (((data[off + byteOf(k)] >> shiftOf(k)) & 3) - 1);
                }
            }
        }
        return new TernaryTensor(name, rows, cols, scales, codes);
    }

    /**
     * Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}; code 3
     * decodes as {@code +2·d}, exactly as ggml's {@code dequantize_row_tq2_0} does, so that every
     * container byte has one meaning.
     */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "TQ2_0");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            int out = offset + b * WEIGHTS;
            for (int half = 0; half < 2; half++) {
                for (int m = 0; m < HALF_BYTES; m++) {
                    int packed = Blocks.unsignedByte(src, base + CODES_OFFSET + half * HALF_BYTES + m);
                    for (int n = 0; n < 4; n++) {
                        int code = (packed >>> (2 * n)) & 3;
                        dst[out + 128 * half + HALF_BYTES * n + m] = (code - 1) * d;
                    }
                }
            }
        }
    }

    /** Byte (within the block) holding weight k: half k/128, position m = k mod 32. */
    static int byteOf(int k) { return CODES_OFFSET + (k / 128) * HALF_BYTES + k % 32; }

    /** Bit shift of weight k within its byte: 2n where n = (k mod 128) / 32. */
    static int shiftOf(int k) { return 2 * ((k % 128) / 32); }

    private static void requireCols(String name, int cols) {
        if (cols % WEIGHTS != 0) {
            throw new IllegalArgumentException(name + ": TQ2_0 needs cols a multiple of " + WEIGHTS + ", got " + cols);
        }
    }
}
