package jquant.formats.quant;

/**
 * A ternary weight matrix in the form every ternary codec encodes and decodes: one int8 code per
 * weight and one scale per row per block of {@value #BLOCK} weights.
 *
 * <pre>
 *   weight[r][c] = scale[r · blocksPerRow + c / 128] · code[r · cols + c]
 * </pre>
 *
 * <p>Codes are ternary {−1, 0, +1}; +2 is also accepted because the 2-bit containers (PQ2_0, TQ2_0,
 * T2P) can hold stored code 3, which their readers decode as +2 (see {@link Pq2Block}). Scales are
 * kept as float; the codecs store them as fp16 and refuse a scale that fp16 cannot hold exactly
 * ({@link #withFp16Scales()} rounds them on request, never silently).
 */
public record TernaryTensor(String name, int rows, int cols, float[] scales, byte[] codes) {

    /** Weights per scale block along a row. */
    public static final int BLOCK = 128;

    public TernaryTensor {
        if (rows <= 0 || cols <= 0) throw new IllegalArgumentException(name + ": non-positive shape " + rows + "×" + cols);
        if (cols % BLOCK != 0) {
            throw new IllegalArgumentException(name + ": cols " + cols + " is not a multiple of the block size " + BLOCK);
        }
        if (codes.length != (long) rows * cols) {
            throw new IllegalArgumentException(name + ": " + codes.length + " codes for " + rows + "×" + cols);
        }
        if (scales.length != (long) rows * (cols / BLOCK)) {
            throw new IllegalArgumentException(name + ": " + scales.length + " scales for " + rows + " rows of "
                    + cols / BLOCK + " blocks");
        }
        for (int i = 0; i < codes.length; i++) {
            if (codes[i] < -1 || codes[i] > 2) {
                throw new IllegalArgumentException(name + ": code " + codes[i] + " at row " + i / cols + " col "
                        + i % cols + " is outside {-1, 0, +1, +2}");
            }
        }
        for (int i = 0; i < scales.length; i++) {
            if (!Float.isFinite(scales[i])) {
                throw new IllegalArgumentException(name + ": scale " + scales[i] + " of row " + i / (cols / BLOCK)
                        + " block " + i % (cols / BLOCK) + " is not finite");
            }
        }
    }

    public int blocksPerRow() { return cols / BLOCK; }

    public byte code(int row, int col) { return codes[row * cols + col]; }

    public float scale(int row, int block) { return scales[row * blocksPerRow() + block]; }

    /** The same tensor with every scale rounded to the nearest fp16 value. */
    public TernaryTensor withFp16Scales() {
        float[] rounded = new float[scales.length];
        for (int i = 0; i < rounded.length; i++) rounded[i] = Float.float16ToFloat(Float.floatToFloat16(scales[i]));
        return new TernaryTensor(name, rows, cols, rounded, codes);
    }

    /** Dequantized weights, row-major. */
    public float[] toFloats() {
        float[] out = new float[codes.length];
        for (int i = 0; i < out.length; i++) out[i] = scales[i / BLOCK] * codes[i];
        return out;
    }

    /**
     * fp16 bits of {@code scale}, or an exception naming the tensor, row and block if fp16 cannot hold
     * it exactly (a writer must not round a scale behind the caller's back).
     */
    short fp16Scale(int row, int block) {
        float s = scale(row, block);
        short bits = Float.floatToFloat16(s);
        if (Float.float16ToFloat(bits) != s) {
            throw new IllegalArgumentException(name + ": scale " + s + " of row " + row + " block " + block
                    + " is not an fp16 value (round with withFp16Scales() first)");
        }
        return bits;
    }
}
