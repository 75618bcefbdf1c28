package jquant.runtime.ternary;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import jquant.core.WorkerPool;
import jquant.formats.DType;
import jquant.runtime.nativelib.KernelSource;
import jquant.runtime.nativelib.NativeKernels.TernaryLayout;

/**
 * The runtime's column of the {@link DType} table for the ternary types (ggml's {@code vec_dot} beside
 * the table's decoder): which integer kernels multiply each stored ternary type, on its stored bytes.
 * A type listed here runs on them wherever it is loaded, warmed up and benchmarked; every other
 * decodable type runs on the float kernels. T2P and TQ2_0 run on the C library's kernels where it is
 * in use for this process ({@link KernelSource}), else on the Java ones; both give the same bits (the
 * oracle tests run every family).
 */
public final class TernaryKernels {

    /** Builds a type's matrix on its stored bytes (a slice of the mapped file, or a copy off the heap). */
    @FunctionalInterface
    public interface Kernel {
        TernaryMatrix on(MemorySegment data, int rows, int cols, WorkerPool pool);
    }

    /** The Java kernels of each type: the reference, and what runs where the C library is not in use. */
    private static final Map<DType, Kernel> KERNELS = Map.of(
            DType.T2P, T2pMatrix::new,
            DType.TQ2_0, Tq2Matrix::new,
            DType.PQ2_0, Pq2Matrix::new,
            DType.PTQ1_0, Ptq1Matrix::new);

    /** The types the C library multiplies in place, and its name for each. */
    private static final Map<DType, TernaryLayout> NATIVE = Map.of(DType.T2P, TernaryLayout.T2P, DType.TQ2_0, TernaryLayout.TQ2_0);

    private TernaryKernels() {}

    /** Whether integer kernels serve {@code type}. */
    public static boolean serves(DType type) {
        return KERNELS.containsKey(type);
    }

    /** The types integer kernels serve, in the table's order. */
    public static List<DType> types() {
        return Arrays.stream(DType.values()).filter(KERNELS::containsKey).toList();
    }

    /**
     * The matrix of {@code rows × cols} weights stored as {@code type} in {@code data}: a
     * {@link NativeTernaryMatrix} where the C library is in use and has the type's kernels (T2P on its
     * sixteen-row copy where they have that), else the Java one.
     */
    public static TernaryMatrix on(DType type, MemorySegment data, int rows, int cols, WorkerPool pool) {
        return on(type, data, rows, cols, pool, true);
    }

    /** As {@link #on(DType, MemorySegment, int, int, WorkerPool)}; {@code copies}: whether T2P may run on its sixteen-row copy. */
    public static TernaryMatrix on(DType type, MemorySegment data, int rows, int cols, WorkerPool pool, boolean copies) {
        TernaryLayout layout = NATIVE.get(type);
        if (layout == null) return javaOn(type, data, rows, cols, pool);
        return KernelSource.kernels().<TernaryMatrix>map(k -> new NativeTernaryMatrix(layout, data, rows, cols, pool, k, copies))
                .orElseGet(() -> javaOn(type, data, rows, cols, pool));
    }

    /** The same matrix on the Java kernels, whatever the process's choice. */
    public static TernaryMatrix javaOn(DType type, MemorySegment data, int rows, int cols, WorkerPool pool) {
        Kernel kernel = KERNELS.get(type);
        if (kernel == null) throw new IllegalArgumentException(type + " has no ternary kernels");
        return kernel.on(data, rows, cols, pool);
    }
}
