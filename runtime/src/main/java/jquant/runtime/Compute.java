package jquant.runtime;

import jquant.runtime.kernels.Kernels;
import jquant.runtime.kernels.ScalarKernels;
import jquant.runtime.kernels.VectorKernels;
import jquant.runtime.kernels.WorkerPool;

/**
 * Which arithmetic a model runs on ({@link Kernels}) and which threads run it ({@link WorkerPool}).
 *
 * @param kernels the float32 kernels
 * @param pool    the threads that share out rows and heads
 */
public record Compute(Kernels kernels, WorkerPool pool) {

    /** Vector API kernels on the process-wide pool: the default. */
    public static Compute vector() {
        return new Compute(new VectorKernels(), WorkerPool.common());
    }

    /** Plain-loop kernels on the process-wide pool: the oracle and the benchmark's baseline. */
    public static Compute scalar() {
        return new Compute(new ScalarKernels(), WorkerPool.common());
    }

    /**
     * {@code y[n×out] = x[n×in] · wᵀ} for {@code packed} = {@link Kernels#packWeights} of a row-major
     * {@code w[out][in]}, rows split across the pool in blocks of the kernels' row alignment.
     */
    public void matmul(float[] x, int n, int in, float[] packed, int out, float[] y) {
        int block = kernels.rowAlignment();
        int blocks = (out + block - 1) / block;
        pool.forRange(blocks, (long) block * n * in, (worker, start, end) ->
                kernels.matmulRows(x, n, in, packed, start * block, Math.min(end * block, out), y, out));
    }
}
