package jquant.runtime.ternary;

import java.lang.foreign.MemorySegment;
import jquant.runtime.kernels.WorkerPool;
import jquant.runtime.nativelib.KernelSource;
import jquant.runtime.nativelib.NativeKernels.TernaryLayout;

/**
 * The matrix of a stored ternary layout on the kernels chosen for this process ({@link KernelSource}):
 * the C library's where it has a kernel for the layout and is in use, else the Java one. Both give
 * the same bits (the oracle tests run every family).
 */
public final class TernaryKernels {

    private TernaryKernels() {}

    /** A T2P matrix ({@link NativeTernaryMatrix} or {@link T2pMatrix}) on {@code data}, read in place. */
    public static TernaryMatrix t2p(MemorySegment data, int rows, int cols, WorkerPool pool) {
        return KernelSource.kernels().<TernaryMatrix>map(k -> new NativeTernaryMatrix(TernaryLayout.T2P, data, rows, cols, pool, k))
                .orElseGet(() -> new T2pMatrix(data, rows, cols, pool));
    }

    /** A TQ2_0 matrix ({@link NativeTernaryMatrix} or {@link Tq2Matrix}) on {@code data}, read in place. */
    public static TernaryMatrix tq2(MemorySegment data, int rows, int cols, WorkerPool pool) {
        return KernelSource.kernels().<TernaryMatrix>map(k -> new NativeTernaryMatrix(TernaryLayout.TQ2_0, data, rows, cols, pool, k))
                .orElseGet(() -> new Tq2Matrix(data, rows, cols, pool));
    }
}
