package jquant.runtime;

/**
 * Unquantized weights: the float32 matrix, in the layout its kernels multiply by
 * ({@link jquant.runtime.kernels.Kernels#packWeights}), multiplied with {@link Compute#matmul}.
 */
public final class DenseF32Weights implements LinearWeights {
    private final float[] packed;
    private final int out;
    private final int in;
    private final Compute compute;

    /** Takes row-major {@code w[out][in]}; the kernels may repack it (then {@code w} is not kept). */
    public DenseF32Weights(float[] w, int out, int in, Compute compute) {
        if (out <= 0 || in <= 0 || (long) out * in != w.length) {
            throw new IllegalArgumentException("a " + out + "×" + in + " matrix needs " + (long) out * in
                    + " floats, got " + w.length);
        }
        this.packed = compute.kernels().packWeights(w, out, in);
        this.out = out;
        this.in = in;
        this.compute = compute;
    }

    @Override
    public int inFeatures() {
        return in;
    }

    @Override
    public int outFeatures() {
        return out;
    }

    @Override
    public void matmul(float[] x, int n, float[] y) {
        compute.matmul(x, n, in, packed, out, y);
    }
}
