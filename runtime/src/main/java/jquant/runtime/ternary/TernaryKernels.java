package jquant.runtime.ternary;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import jquant.formats.DType;
import jquant.core.WorkerPool;

/**
 * The runtime's column of the {@link DType} table for the ternary types (ggml's {@code vec_dot} beside
 * the table's decoder): which integer kernels multiply each stored ternary type, on its stored bytes.
 * A type listed here runs on them wherever it is loaded, warmed up and benchmarked; every other
 * decodable type runs on the float kernels.
 */
public final class TernaryKernels {

    /** Builds a type's matrix on its stored bytes (a slice of the mapped file, or a copy off the heap). */
    @FunctionalInterface
    public interface Kernel {
        TernaryMatrix on(MemorySegment data, int rows, int cols, WorkerPool pool);
    }

    private static final Map<DType, Kernel> KERNELS = Map.of(
            DType.T2P, T2pMatrix::new,
            DType.TQ2_0, Tq2Matrix::new,
            DType.PQ2_0, Pq2Matrix::new,
            DType.PTQ1_0, Ptq1Matrix::new);

    private TernaryKernels() {}

    /** Whether integer kernels serve {@code type}. */
    public static boolean serves(DType type) {
        return KERNELS.containsKey(type);
    }

    /** The types integer kernels serve, in the table's order. */
    public static List<DType> types() {
        return Arrays.stream(DType.values()).filter(KERNELS::containsKey).toList();
    }

    /** The matrix of {@code rows × cols} weights stored as {@code type} in {@code data}. */
    public static TernaryMatrix on(DType type, MemorySegment data, int rows, int cols, WorkerPool pool) {
        Kernel kernel = KERNELS.get(type);
        if (kernel == null) throw new IllegalArgumentException(type + " has no ternary kernels");
        return kernel.on(data, rows, cols, pool);
    }
}
