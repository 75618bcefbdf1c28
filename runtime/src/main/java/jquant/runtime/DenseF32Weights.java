package jquant.runtime;

/** Unquantized weights: the float32 matrix itself, multiplied with {@link Compute#matmul}. */
public final class DenseF32Weights implements LinearWeights {
    private final float[] w;
    private final int out;
    private final int in;
    private final Compute compute;

    /** Wraps row-major {@code w[out][in]} (not copied). */
    public DenseF32Weights(float[] w, int out, int in, Compute compute) {
        if (out <= 0 || in <= 0 || (long) out * in != w.length) {
            throw new IllegalArgumentException("a " + out + "×" + in + " matrix needs " + (long) out * in
                    + " floats, got " + w.length);
        }
        this.w = w;
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
        compute.matmul(x, n, in, w, out, y);
    }
}
