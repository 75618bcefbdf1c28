package jquant.runtime.kernels;

/**
 * {@link Kernels} as plain loops that sum in index order, as llama2.c's {@code run.c} does: the
 * oracle for {@link VectorKernels} and the baseline of the benchmark.
 */
public final class ScalarKernels implements Kernels {

    @Override
    public float dot(float[] a, int aOff, float[] b, int bOff, int len) {
        float sum = 0f;
        for (int k = 0; k < len; k++) sum += a[aOff + k] * b[bOff + k];
        return sum;
    }

    @Override
    public void axpy(float a, float[] x, int xOff, float[] y, int yOff, int len) {
        for (int k = 0; k < len; k++) y[yOff + k] += a * x[xOff + k];
    }

    @Override
    public void rmsnorm(float[] x, int xOff, float[] weight, float eps, float[] out, int outOff, int size) {
        float ss = 0f;
        for (int k = 0; k < size; k++) ss += x[xOff + k] * x[xOff + k];
        float scale = (float) (1.0 / Math.sqrt(ss / size + eps));
        for (int k = 0; k < size; k++) out[outOff + k] = weight[k] * (scale * x[xOff + k]);
    }

    @Override
    public void softmax(float[] x, int off, int len) {
        float max = Float.NEGATIVE_INFINITY;
        for (int k = 0; k < len; k++) max = Math.max(max, x[off + k]);
        float sum = 0f;
        for (int k = 0; k < len; k++) {
            float e = (float) Math.exp(x[off + k] - max);
            x[off + k] = e;
            sum += e;
        }
        float inv = 1f / sum;
        for (int k = 0; k < len; k++) x[off + k] *= inv;
    }

    @Override
    public void siluMul(float[] gate, float[] up, int off, int len) {
        for (int k = off; k < off + len; k++) gate[k] = silu(gate[k], up[k]);
    }

    /** SwiGLU's gating of one element: {@code silu(g) · u}. */
    static float silu(float g, float u) {
        return g / (1f + (float) Math.exp(-g)) * u;
    }
}
