package jquant.runtime.ternary;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import jquant.formats.DType;
import jquant.formats.quant.T2pRepacker;
import jquant.formats.quant.T2pShapeException;
import jquant.formats.quant.TernaryTensor;
import jquant.core.WorkerPool;

/**
 * A packed ternary weight matrix that multiplies int8-quantized activation columns (see
 * {@link ActivationBlocks} for the exact output definition), computed on its stored bytes: a
 * {@link MemorySegment}, in a model a slice of the mapped file. Each implementation has a Vector API
 * kernel and a plain scalar twin that computes the same integers and, by the same float formula,
 * the same floats bit for bit. Work is split over a {@link WorkerPool}; per-thread work arrays are
 * kept across calls ({@link Scratch}).
 *
 * <p>Each kernel's hot loop is a static method of its own that takes only segments, arrays and ints
 * and is too large to be inlined into its caller: it is compiled once, as one unit, whichever job or
 * thread calls it, and no vector crosses a call, so a megamorphic job call site costs nothing
 * measurable; a benchmark must still run a kernel until C2 has compiled it (bench/RESULTS.md).
 */
public sealed interface TernaryMatrix permits StockMatrix, T2pMatrix, Ptq1Matrix, NativeTernaryMatrix, LutMatrix {

    /** The vector width every ternary kernel of this process runs at, chosen once at start (for logs and benchmarks). */
    static String vectorWidth() { return Simd.describe(); }

    /** The stored type these kernels compute on ({@link TernaryKernels}). */
    DType type();

    int rows();

    int cols();

    /** Bytes of packed weights (codes and scales) one pass over the matrix reads. */
    long packedBytes();

    /**
     * {@code y[c · rows() + row]} for each column c, written in place (a prefill batch's outputs, with
     * no per-call arrays); one column takes the matvec path, more the prefill tiles.
     */
    void multiply(ActivationBlocks[] columns, float[] y);

    /** {@code y[c][row]} for each column c, as {@link #multiply(ActivationBlocks[], float[])} computes them. */
    default float[][] multiply(ActivationBlocks... columns) {
        float[] flat = new float[columns.length * rows()];
        multiply(columns, flat);
        float[][] y = new float[columns.length][];
        for (int c = 0; c < columns.length; c++) y[c] = java.util.Arrays.copyOfRange(flat, c * rows(), (c + 1) * rows());
        return y;
    }

    /** The integer block dots {@code [c][row · blocks + b]} the vector kernels produce before scaling. */
    int[][] blockDots(ActivationBlocks... columns);

    /** The float scale of {@code row}'s block {@code block} (stored as fp16). */
    float scale(int row, int block);

    /**
     * Scalar twin of {@link #multiply}: the integer dots of {@link #blockDotsScalar} scaled block by
     * block, {@code y = Σ_b dot_b · (d_b · scale_b)} in ascending b, the formula every kernel uses.
     */
    default float[][] multiplyScalar(ActivationBlocks... columns) {
        int[][] dots = blockDotsScalar(columns);
        int blocks = cols() / TernaryTensor.BLOCK;
        float[][] y = new float[columns.length][rows()];
        for (int c = 0; c < columns.length; c++) {
            for (int row = 0; row < rows(); row++) {
                float acc = 0f;
                for (int b = 0; b < blocks; b++) acc = ActivationBlocks.term(acc, dots[c][row * blocks + b], scale(row, b), columns[c].scale(b));
                y[c][row] = acc;
            }
        }
        return y;
    }

    /** Scalar twin of {@link #blockDots}. */
    int[][] blockDotsScalar(ActivationBlocks... columns);

    /** Single-column product into {@code y[yOff, yOff + rows)}: the decode hot path, no allocation of outputs. */
    void matvec(ActivationBlocks x, float[] y, int yOff);

    /** Single-column product into {@code y} (length rows). */
    default void matvec(ActivationBlocks x, float[] y) {
        if (y.length != rows()) throw new IllegalArgumentException("output has " + y.length + " rows, matrix " + rows());
        matvec(x, y, 0);
    }

    /** The layout chosen for a PQ2_0 matrix, and why. */
    record Selection(TernaryMatrix matrix, String reason) {}

    /**
     * Repacks stock PQ2_0 rows to T2P when the shape allows (rows % 4 == 0, cols % 128 == 0), into a
     * copy made at load (off-heap, the file's size); otherwise keeps the stock layout, in place, and
     * says why. Never a wrong answer, only a slower one.
     */
    static Selection select(String name, MemorySegment pq2, int rows, int cols, WorkerPool pool) {
        try {
            byte[] t2p = T2pRepacker.repack(name, pq2.toArray(ValueLayout.JAVA_BYTE), rows, cols);
            // already a copy: a second one, in sixteen-row tiles, would hold both
            return new Selection(TernaryKernels.on(DType.T2P, offHeap(t2p), rows, cols, pool, false), name + ": repacked to T2P row pairs");
        } catch (T2pShapeException e) {
            return new Selection(new Pq2Matrix(pq2, rows, cols, pool), e.getMessage());
        }
    }

    /**
     * A copy of {@code bytes} off the heap, where a mapped file's tensors are too: the kernels then
     * see one kind of segment, and the copy leaves the garbage collector's heap alone.
     */
    static MemorySegment offHeap(byte[] bytes) {
        MemorySegment s = Arena.ofAuto().allocate(bytes.length, 64);
        MemorySegment.copy(bytes, 0, s, ValueLayout.JAVA_BYTE, 0, bytes.length);
        return s;
    }

    /** Checks that {@code y} has room for {@code columns} outputs of {@code rows} rows. */
    static void checkOutput(int rows, int columns, float[] y) {
        if (y.length < (long) rows * columns) {
            throw new IllegalArgumentException("output has room for " + y.length + " values, " + columns + " columns of " + rows + " rows need " + (long) rows * columns);
        }
    }

    /** Checks a batch of columns against a matrix of {@code cols} inputs. */
    static void checkColumns(int cols, ActivationBlocks[] columns) {
        if (columns.length == 0) throw new IllegalArgumentException("no activation columns");
        for (int c = 0; c < columns.length; c++) {
            if (columns[c].cols() != cols) {
                throw new IllegalArgumentException("column " + c + " has " + columns[c].cols() + " values, matrix has "
                        + cols + " inputs");
            }
        }
    }
}
