package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * PrismML PQ2_0 (ggml type 142): 128 ternary weights in 34 bytes, 2.125 bits per weight — one fp16
 * scale, then the weights as 2-bit codes {@code u = t + 1}; {@code w = (u − 1) · d}. Weight {@code j}
 * sits at bits {@code 2·(j mod 4)} of byte {@code j / 4}, so consecutive weights fill a byte from its
 * least significant bits up.
 *
 * <pre>
 * byte  0       2                                  34
 *       ├───────┼──────────────────────────────────┤
 *       │ d f16 │ qs[0] … qs[31]                   │
 *       └───────┴──────────────────────────────────┘
 * qs[k] = u[4k+3] &lt;&lt; 6 | u[4k+2] &lt;&lt; 4 | u[4k+1] &lt;&lt; 2 | u[4k]
 * </pre>
 *
 * <p>Stored code u ∈ {0, 1, 2} means t = u − 1 ∈ {−1, 0, +1}. The container can also hold u = 3;
 * like PrismML's {@code dequantize_row_pq2_0} we decode it as +2 (no ternary checkpoint produces it,
 * but every reader and kernel here stays exact for it: the largest product is 2·127), never as an
 * error or a clamp.
 */
public final class Pq2Block {

    public static final int WEIGHTS = 128;
    public static final int BITS_PER_CODE = 2;
    public static final int SCALE_OFFSET = 0;
    public static final int CODES_OFFSET = SCALE_OFFSET + 2;
    public static final int BYTES = CODES_OFFSET + WEIGHTS * BITS_PER_CODE / 8;

    private Pq2Block() {}

    /** Bytes of one row of {@code cols} weights. */
    public static long rowBytes(int cols) { return (long) (cols / WEIGHTS) * BYTES; }

    /** Encodes every row of {@code t}, row after row, blocks in column order. */
    public static byte[] encode(TernaryTensor t) {
        int nb = t.blocksPerRow();
        byte[] out = new byte[Math.toIntExact(t.rows() * rowBytes(t.cols()))];
        for (int r = 0; r < t.rows(); r++) {
            for (int b = 0; b < nb; b++) {
                int off = (r * nb + b) * BYTES;
                putScale(out, off, t.fp16Scale(r, b));
                for (int j = 0; j < WEIGHTS; j++) {
                    int u = t.code(r, b * WEIGHTS + j) + 1;
                    out[off + CODES_OFFSET + j / 4] |= (byte) (u << (BITS_PER_CODE * (j % 4)));
                }
            }
        }
        return out;
    }

    /** Decodes {@code rows × cols} weights; stored code 3 becomes +2. */
    public static TernaryTensor decode(String name, byte[] data, int rows, int cols) {
        checkLength(name, data, rows, cols);
        int nb = cols / WEIGHTS;
        float[] scales = new float[rows * nb];
        byte[] codes = new byte[rows * cols];
        for (int r = 0; r < rows; r++) {
            for (int b = 0; b < nb; b++) {
                int off = (r * nb + b) * BYTES;
                scales[r * nb + b] = Float.float16ToFloat(scaleBits(data, off));
                for (int j = 0; j < WEIGHTS; j++) codes[r * cols + b * WEIGHTS + j] = (byte) (storedCode(data, off, j) - 1);
            }
        }
        return new TernaryTensor(name, rows, cols, scales, codes);
    }

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "PQ2_0");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            int out = offset + b * WEIGHTS;
            for (int j = 0; j < WEIGHTS; j++) {
                int code = (Blocks.unsignedByte(src, base + CODES_OFFSET + j / 4) >>> (BITS_PER_CODE * (j % 4))) & 3;
                dst[out + j] = (code - 1) * d;
            }
        }
    }

    /** Stored 2-bit code u of weight {@code j} of the block at {@code off}. */
    public static int storedCode(byte[] data, int off, int j) {
        return (data[off + CODES_OFFSET + j / 4] >> (BITS_PER_CODE * (j % 4))) & 3;
    }

    public static short scaleBits(byte[] data, int off) {
        return (short) ((data[off + SCALE_OFFSET] & 0xFF) | (data[off + SCALE_OFFSET + 1] << 8));
    }

    static void putScale(byte[] out, int off, short bits) {
        out[off] = (byte) bits;
        out[off + 1] = (byte) (bits >> 8);
    }

    static void checkLength(String name, byte[] data, int rows, int cols) {
        if (rows <= 0 || cols <= 0 || cols % WEIGHTS != 0) {
            throw new IllegalArgumentException(name + ": PQ2_0 needs cols a positive multiple of " + WEIGHTS + ", got "
                    + rows + "×" + cols);
        }
        if (data.length != rows * rowBytes(cols)) {
            throw new IllegalArgumentException(name + ": PQ2_0 " + rows + "×" + cols + " needs " + rows * rowBytes(cols)
                    + " bytes, got " + data.length);
        }
    }
}
