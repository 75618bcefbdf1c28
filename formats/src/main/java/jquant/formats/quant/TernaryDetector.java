package jquant.formats.quant;

import jquant.formats.quant.TernaryTensor;


/**
 * Decides whether a float matrix is exactly ternary: every weight of a scale group equals −s, 0 or
 * +s for one s per group (s = the group's largest magnitude). Nothing is rounded: the first weight
 * that is not exactly one of the three values is reported by tensor, row, column and value.
 */
public final class TernaryDetector {

    /** The weights that share one scale. */
    public enum Granularity {
        /** One scale per row per 128 weights (PQ2_0, PTQ1_0, T2P). */
        PER_BLOCK,
        /** One scale for the whole tensor (BitNet b1.58). */
        PER_TENSOR
    }

    /** A weight that is not s·{−1, 0, +1}. */
    public static final class NotTernaryException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        NotTernaryException(String message) { super(message); }
    }

    private TernaryDetector() {}

    public static TernaryTensor detect(String name, float[] w, int rows, int cols, Granularity granularity) {
        if ((long) rows * cols != w.length) {
            throw new IllegalArgumentException(name + ": " + w.length + " weights for " + rows + "×" + cols);
        }
        if (cols % TernaryTensor.BLOCK != 0) {
            throw new IllegalArgumentException(name + ": cols " + cols + " is not a multiple of " + TernaryTensor.BLOCK);
        }
        int nb = cols / TernaryTensor.BLOCK;
        float[] scales = new float[rows * nb];
        byte[] codes = new byte[w.length];
        float tensorScale = granularity == Granularity.PER_TENSOR ? maxAbs(name, w, cols, 0, w.length) : 0f;
        for (int r = 0; r < rows; r++) {
            for (int b = 0; b < nb; b++) {
                int start = r * cols + b * TernaryTensor.BLOCK;
                float s = granularity == Granularity.PER_TENSOR ? tensorScale
                        : maxAbs(name, w, cols, start, start + TernaryTensor.BLOCK);
                scales[r * nb + b] = s;
                for (int i = start; i < start + TernaryTensor.BLOCK; i++) {
                    float v = w[i];
                    if (v == 0f) continue;
                    if (v == s) codes[i] = 1;
                    else if (v == -s) codes[i] = -1;
                    else {
                        throw new NotTernaryException(name + ": weight at row " + r + " col " + i % cols + " is " + v
                                + ", not one of {-s, 0, +s} with s = " + s
                                + (granularity == Granularity.PER_TENSOR ? " (per tensor)" : " (per 128-block)"));
                    }
                }
            }
        }
        return new TernaryTensor(name, rows, cols, scales, codes);
    }

    private static float maxAbs(String name, float[] w, int cols, int from, int to) {
        float m = 0f;
        for (int i = from; i < to; i++) {
            if (!Float.isFinite(w[i])) {
                throw new NotTernaryException(name + ": weight at row " + i / cols + " col " + i % cols + " is " + w[i]);
            }
            m = Math.max(m, Math.abs(w[i]));
        }
        return m;
    }
}
