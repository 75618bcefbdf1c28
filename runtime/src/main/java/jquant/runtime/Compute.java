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

    /** Weight rows per work item: the vector kernels' tile height, so splits never cut a tile. */
    private static final int ROW_BLOCK = 4;

    /** Vector API kernels on the process-wide pool: the default. */
    public static Compute vector() {
        return new Compute(new VectorKernels(), WorkerPool.common());
    }

    /** Plain-loop kernels on the process-wide pool: the oracle and the benchmark's baseline. */
    public static Compute scalar() {
        return new Compute(new ScalarKernels(), WorkerPool.common());
    }

    /** {@code y[n×out] = x[n×in] · wᵀ} for a dense row-major {@code w[out][in]}, rows split across the pool. */
    public void matmul(float[] x, int n, int in, float[] w, int out, float[] y) {
        int blocks = (out + ROW_BLOCK - 1) / ROW_BLOCK;
        pool.forRange(blocks, (long) ROW_BLOCK * n * in, (worker, start, end) ->
                kernels.matmulRows(x, n, in, w, start * ROW_BLOCK, Math.min(end * ROW_BLOCK, out), y, out));
    }
}
