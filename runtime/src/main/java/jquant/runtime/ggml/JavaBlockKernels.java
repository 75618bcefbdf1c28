package jquant.runtime.ggml;

import java.lang.foreign.MemorySegment;
import jquant.formats.DType;

/**
 * The Java kernels of {@link IntegerBlockWeights}: rows of llama.cpp's block types times quantized
 * activation columns by {@link BlockDots}' arithmetic.
 */
final class JavaBlockKernels {

    private JavaBlockKernels() {}

    /** {@code y[c · ystride + r]} for rows {@code [r0, r1)} of the matrix at {@code w} and every column of {@code a}. */
    static void rows(DType type, MemorySegment w, long rowBytes, int r0, int r1, Q8Activations a, float[] y, int ystride) {
        for (int r = r0; r < r1; r++) {
            for (int c = 0; c < a.columns; c++) y[c * ystride + r] = BlockDots.row(type, w, r, a, c);
        }
    }
}
