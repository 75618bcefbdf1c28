package jquant.calibration;

import jquant.runtime.Compute;
import jquant.runtime.kernels.Kernels;
import jquant.runtime.kernels.ScalarKernels;
import jquant.runtime.kernels.VectorKernels;
import jquant.runtime.kernels.WorkerPool;

/**
 * Kernels whose results are the same bits on every run, so calibration stats are reproducible:
 * the Vector API matmul (each output is one sequential chain of exact fused multiply-adds over the
 * input, whatever the tile, tier or thread), and the plain-loop kernels for everything that reduces
 * across lanes (dot, RMSNorm, softmax), where the Vector API's lane reductions may round differently
 * once the JIT compiles them.
 */
final class ReproducibleKernels implements Kernels {
    private final Kernels matmul = new VectorKernels();
    private final Kernels scalar = new ScalarKernels();

    /** These kernels on the process-wide pool. */
    static Compute compute() {
        return new Compute(new ReproducibleKernels(), WorkerPool.common());
    }

    @Override
    public float[] packWeights(float[] w, int out, int in) { return matmul.packWeights(w, out, in); }

    @Override
    public int rowAlignment() { return matmul.rowAlignment(); }

    @Override
    public void matmulRows(float[] x, int n, int in, float[] packed, int rowStart, int rowEnd, float[] y, int out) {
        matmul.matmulRows(x, n, in, packed, rowStart, rowEnd, y, out);
    }

    @Override
    public float dot(float[] a, int aOff, float[] b, int bOff, int len) { return scalar.dot(a, aOff, b, bOff, len); }

    @Override
    public void axpy(float a, float[] x, int xOff, float[] y, int yOff, int len) { scalar.axpy(a, x, xOff, y, yOff, len); }

    @Override
    public void rmsnorm(float[] x, int xOff, float[] weight, float eps, float[] out, int outOff, int size) {
        scalar.rmsnorm(x, xOff, weight, eps, out, outOff, size);
    }

    @Override
    public void softmax(float[] x, int off, int len) { scalar.softmax(x, off, len); }

    @Override
    public void siluMul(float[] gate, float[] up, int len) { scalar.siluMul(gate, up, len); }
}
