package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * PrismML PTQ1_0 (ggml type 143): 128 ternary weights in 28 bytes, 1.75 bits per weight,
 * {@code { uint8 qs[24]; uint8 qh[2]; half d; }} — ggml's TQ1_0 codec ({@link Trits}) at block 128,
 * scale last; {@code w = (trit − 1)·d}.
 *
 * <pre>
 * byte  0               16          24      26      28
 *       ├───────────────┼───────────┼───────┼───────┤
 *       │ qs stage A(16)│ stage B(8)│ qh (2)│ d f16 │
 *       └───────────────┴───────────┴───────┴───────┘
 *
 *   stage of c bytes starting at weight e0 (c = 16: e0 = 0;  c = 8: e0 = 80):
 *       byte m holds the five trits of weights e0 + n·c + m, n = 0..4, n = 0 most significant
 *   qh byte h holds the four trits of weights 120 + n·2 + h, n = 0..3, shifted up one trit
 *
 *   stored byte  = ceil(q · 256 / 243),  q = Σ trit_n · 3^(4−n),  trit = t + 1 ∈ {0, 1, 2}
 *   trit n of b  = ((b · 3^n mod 256) · 3) >> 8        (the top base-3 digit after n wrapped away)
 * </pre>
 *
 * <p>Stages are TQ1_0's {32, 16, 8}, each used while it fits the 24 {@code qs} bytes (so 16 then 8),
 * as PrismML's {@code ptq1_0_stages} and several independent public readers of its
 * {@code dequantize_row_ptq1_0} describe. Only ternary codes are representable: +2 is rejected.
 */
public final class Ptq1Block {

    public static final int WEIGHTS = 128;
    public static final int QS_OFFSET = 0;
    public static final int QS_BYTES = 24;
    public static final int QH_OFFSET = QS_OFFSET + QS_BYTES;
    public static final int QH_BYTES = 2;
    public static final int SCALE_OFFSET = QH_OFFSET + QH_BYTES;
    public static final int BYTES = SCALE_OFFSET + 2;
    /** Stage widths in bytes, in order, and the first weight each stage holds. */
    public static final int[] STAGE_BYTES = {16, 8};
    public static final int[] STAGE_FIRST_WEIGHT = {0, 80};
    /** First weight held by {@code qh}. */
    public static final int QH_FIRST_WEIGHT = 120;

    private Ptq1Block() {}

    public static byte[] encode(TernaryTensor t) {
        int nb = t.blocksPerRow();
        byte[] out = new byte[t.rows() * nb * BYTES];
        int[] trits = new int[WEIGHTS];
        for (int r = 0; r < t.rows(); r++) {
            for (int b = 0; b < nb; b++) {
                for (int k = 0; k < WEIGHTS; k++) {
                    int c = t.code(r, b * WEIGHTS + k);
                    if (c > 1) {
                        throw new IllegalArgumentException(t.name() + ": code " + c + " at row " + r + " col "
                                + (b * WEIGHTS + k) + " is not ternary; PTQ1_0 holds only {-1, 0, +1}");
                    }
                    trits[k] = c + 1;
                }
                int off = (r * nb + b) * BYTES;
                encodeBlock(trits, out, off);
                Pq2Block.putScale(out, off + SCALE_OFFSET, t.fp16Scale(r, b));
            }
        }
        return out;
    }

    public static TernaryTensor decode(String name, byte[] data, int rows, int cols) {
        if (cols % WEIGHTS != 0 || data.length != (long) rows * (cols / WEIGHTS) * BYTES) {
            throw new IllegalArgumentException(name + ": PTQ1_0 " + rows + "×" + cols + " needs cols a multiple of "
                    + WEIGHTS + " and " + (long) rows * (cols / WEIGHTS) * BYTES + " bytes, got " + data.length);
        }
        int nb = cols / WEIGHTS;
        float[] scales = new float[rows * nb];
        byte[] codes = new byte[rows * cols];
        for (int r = 0; r < rows; r++) {
            for (int b = 0; b < nb; b++) {
                int off = (r * nb + b) * BYTES;
                scales[r * nb + b] = Float.float16ToFloat(Pq2Block.scaleBits(data, off + SCALE_OFFSET));
                for (int k = 0; k < WEIGHTS; k++) codes[r * cols + b * WEIGHTS + k] = (byte) (trit(data, off, k) - 1);
            }
        }
        return new TernaryTensor(name, rows, cols, scales, codes);
    }

    /** Trit (t + 1) of weight k of the block at {@code off}. */
    public static int trit(byte[] data, int off, int k) {
        return digit(data[off + byteOf(k)], digitOf(k));
    }

    /** Digit n of a stored byte: ((b · 3^n mod 256) · 3) >> 8. */
    public static int digit(byte stored, int n) {
        return Trits.digit(stored & 0xFF, n);
    }

    /** Decodes {@code count} weights (whole blocks) from {@code src} into {@code dst[offset..]}. */
    public static void dequantize(MemorySegment src, float[] dst, int offset, int count) {
        int blocks = Blocks.blocks(count, WEIGHTS, "PTQ1_0");
        for (int b = 0; b < blocks; b++) {
            long base = (long) b * BYTES;
            float d = Blocks.half(src, base + SCALE_OFFSET);
            Trits.decodeStaged(src, base + QS_OFFSET, STAGE_BYTES, base + QH_OFFSET, QH_BYTES, d, dst, offset + b * WEIGHTS);
        }
    }

    /** Byte (within the block) that holds weight k. */
    public static int byteOf(int k) {
        if (k >= QH_FIRST_WEIGHT) return QH_OFFSET + (k - QH_FIRST_WEIGHT) % QH_BYTES;
        int s = k >= STAGE_FIRST_WEIGHT[1] ? 1 : 0;
        return QS_OFFSET + (s == 0 ? 0 : STAGE_BYTES[0]) + (k - STAGE_FIRST_WEIGHT[s]) % STAGE_BYTES[s];
    }

    /** Which base-3 digit (0 = most significant) of its byte holds weight k. */
    public static int digitOf(int k) {
        if (k >= QH_FIRST_WEIGHT) return (k - QH_FIRST_WEIGHT) / QH_BYTES;
        int s = k >= STAGE_FIRST_WEIGHT[1] ? 1 : 0;
        return (k - STAGE_FIRST_WEIGHT[s]) / STAGE_BYTES[s];
    }

    private static void encodeBlock(int[] trits, byte[] out, int off) {
        int[] q = new int[QS_BYTES + QH_BYTES];
        for (int k = 0; k < WEIGHTS; k++) {
            int digits = k >= QH_FIRST_WEIGHT ? 4 : 5;
            q[byteOf(k) - QS_OFFSET] += trits[k] * Trits.POW3[digits - 1 - digitOf(k)];
        }
        for (int i = 0; i < q.length; i++) {
            int value = i >= QH_OFFSET - QS_OFFSET ? q[i] * 3 : q[i];   // qh: first trit to the top
            out[off + QS_OFFSET + i] = (byte) ((value * 256 + 242) / 243);
        }
    }
}
