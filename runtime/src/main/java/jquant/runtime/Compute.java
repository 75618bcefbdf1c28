package jquant.runtime;

import jquant.runtime.kernels.Kernels;
import jquant.runtime.kernels.MatmulKernels;
import jquant.runtime.kernels.NativeAttentionKernels;
import jquant.runtime.kernels.ScalarKernels;
import jquant.runtime.kernels.ScalarMatmulKernels;
import jquant.runtime.kernels.VectorMatmulKernels;
import jquant.core.WorkerPool;

/**
 * Which arithmetic a model runs on and which threads run it.
 *
 * @param kernels the element-wise and reduction kernels of the forward pass
 * @param matmul  the inner loops of products with stored weight matrices
 * @param pool    the threads that share out rows and heads
 */
public record Compute(Kernels kernels, MatmulKernels matmul, WorkerPool pool) {

    /** Vector API kernels, attention's on the C library where it has them ({@link NativeAttentionKernels}), on the run's pool ({@link WorkerPool#current()}): the default. */
    public static Compute vector() {
        return new Compute(NativeAttentionKernels.vector(), new VectorMatmulKernels(), WorkerPool.current());
    }

    /** Plain-loop kernels on the run's pool: the oracle and the benchmark's baseline. */
    public static Compute scalar() {
        return new Compute(new ScalarKernels(), new ScalarMatmulKernels(), WorkerPool.current());
    }

    /** The same kernels on another pool. */
    public Compute on(WorkerPool other) {
        return new Compute(kernels, matmul, other);
    }
}
