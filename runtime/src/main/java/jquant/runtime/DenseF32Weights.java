package jquant.runtime;

import jquant.runtime.kernels.MatmulKernels;

/**
 * A float32 matrix held in a Java array, row-major {@code w[out][in]}: weights computed at run time
 * (calibration's smoothed or quantized copies), not read from a file.
 */
public final class DenseF32Weights extends RowMajorWeights {
    private final float[] w;

    public DenseF32Weights(float[] w, int out, int in, Compute compute) {
        super("float32 matrix", out, in, compute);
        KernelWarmup.startFloatRows();
        if ((long) out * in != w.length) {
            throw new IllegalArgumentException("a " + out + "×" + in + " matrix needs " + (long) out * in + " floats, got " + w.length);
        }
        this.w = w;
    }

    @Override
    void dotRows(MatmulKernels k, int r0, int r1, int r2, int r3, float[] x, int xOff, int k0, int k1, float[] acc, Scratch s) {
        k.rowsF32(w, r0 * in, r1 * in, r2 * in, r3 * in, x, xOff, k0, k1, acc);
    }

    @Override
    void decodeRows(int r0, int count, int k0, int k1, float[] dst, Scratch s) {
        for (int i = 0; i < count; i++) System.arraycopy(w, (r0 + i) * in + k0, dst, i * (k1 - k0), k1 - k0);
    }

    @Override
    float output(int r, float dot) {
        return dot;
    }
}
