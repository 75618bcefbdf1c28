package jquant.runtime;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import jquant.formats.DType;
import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.Ptq1Block;
import jquant.formats.quant.T2pBlock;
import jquant.formats.quant.Tq2Block;
import jquant.runtime.kernels.MatmulKernels;
import jquant.runtime.kernels.VectorKernels;
import jquant.runtime.kernels.VectorMatmulKernels;
import jquant.runtime.kernels.WorkerPool;
import jquant.runtime.ternary.ActivationBlocks;
import jquant.runtime.ternary.NativeTernaryMatrix;
import jquant.runtime.ternary.Pq2Matrix;
import jquant.runtime.ternary.Ptq1Matrix;
import jquant.runtime.ternary.T2pMatrix;
import jquant.runtime.ternary.TernaryMatrix;
import jquant.runtime.ternary.Tq2Matrix;

/**
 * Gets the Vector API kernels compiled before a model needs them. Until HotSpot's C2 compiles a
 * kernel, the Vector API runs as plain Java that allocates an object per vector operation, fifty to
 * a hundred times slower; a model's first token would wait seconds for that (a 1B model's first
 * prefill reads two gigabytes of weights through kernels still being profiled). A background thread
 * calls each kernel a few thousand times on a few hundred values — milliseconds of work — so C2
 * compiles them while the file is opened and the prompt tokenized. The results are discarded.
 *
 * <p>Only the kernels a model calls are warmed: the shared ones (norms, softmax, the prefill tile, the
 * float16 row kernels) when a model is opened ({@link #start}), each other storage form's row kernels when a model first builds a matrix
 * of that form ({@link #startDense}, {@link #startInt8Rows}, {@link #startFloatRows},
 * {@link #startTernary}). On two cores C2 is the bottleneck of the first token (measured on the 1.1B
 * bench model: 3.0 s of C2 time when every kernel was warmed), so a kernel compiled for nothing
 * delays the ones the model waits for.
 *
 * <p>The kernels that read stored weights in place are warmed on the model's own bytes (a slice of
 * its mapping) where the caller gives them: C2 compiles for the kinds of segment it has seen. Warmed
 * on an off-heap buffer, the float16 row kernel was compiled for that, compiled again at the model's
 * first product from the mapping (an "uncommon trap", now for both kinds), and a 1.1B float16
 * decode then ran at 195–246 ms a token on one thread against 102–196 warmed on the mapping, and at
 * 117–122 against 77–79 on two (processes alternating, four and three of each).
 *
 * <p>With the system property {@code jquant.kernelWarmup=dense-rows}, as the {@code ./jquant}
 * launcher sets it, only the row kernels of dense decode, which read the mapped file, are warmed
 * (float16's, and BF16's or F32's when a model has such weights). The launcher also gives the JVM compiler directives
 * (scripts/compiler-directives.json) that keep C2 from compiling the Vector API's own methods, and with
 * those the other kernels compile sooner on the model's first calls than with this thread beside
 * them. On the 1.1B bench model, alternating processes with the directives: {@code run -n 1} of the
 * T2P file 2.10–2.41 s warming the float16 row kernel alone, 2.67–3.29 warming everything, 2.10–2.42
 * warming nothing; but the F16 decode with nothing warmed ran at 118–146 ms a token on one thread
 * against 92–110 (the row kernel compiled from the model's first decode steps is the slower code),
 * and with the row kernel alone warmed at 95–100. {@code .jqw} decode was the same with and without
 * its int8 row kernel warmed, and T2P prefill ran at full speed in all twenty processes without the
 * ternary warm-up (without the directives and without the warm-up, one of eight ran at 11 tokens/s,
 * a tenth of its speed). Any other value than {@code all} (the default) and {@code dense-rows} is an
 * error.
 */
public final class KernelWarmup {
    /** Calls per kernel: past C2's invocation threshold (Tier4InvocationThreshold, 5000). */
    private static final int CALLS = 12_000;
    private static final int COLS = 256;
    private static final Set<Object> STARTED = ConcurrentHashMap.newKeySet();

    /** Whether {@code jquant.kernelWarmup} limits the warm-up to the dense row kernels (see the class comment). */
    private static boolean denseRowsOnly() {
        String mode = System.getProperty("jquant.kernelWarmup", "all");
        return switch (mode) {
            case "all" -> false;
            case "dense-rows" -> true;
            default -> throw new IllegalArgumentException("jquant.kernelWarmup is '" + mode + "'; it must be all or dense-rows");
        };
    }

    private KernelWarmup() {}

    /**
     * Starts {@code body} on a daemon thread, once per process and {@code key}; the shared kernels
     * first, whoever asks (a model built without {@link LoadedModel} has not called {@link #start}),
     * on {@code weights}.
     */
    private static void once(Object key, MemorySegment weights, Runnable body) {
        denseRowsOnly();   // an unknown mode fails here, on the caller's thread
        if (key != KernelWarmup.class) start(weights);
        if (STARTED.add(key)) Thread.ofPlatform().daemon().name("jquant-kernel-warmup").start(body);
    }

    /**
     * Starts warming the kernels every model uses: norms, softmax, the float prefill tile, and the
     * float16 row kernels (a GGUF's embedding and classifier are float16 whatever its other weights).
     * A row kernel compiled here, before any ternary kernel, is also what keeps C2 from boxing the
     * T2P prefill kernel's vectors: without one (tile and norms only), 40 s of a T2P eval of the 1.1B
     * bench model took 5,182 young collections and one window in 30 s, with one 559 and eight windows.
     * Why that order matters was not pinned down; any of the row kernels did it. The float16 row
     * kernels read {@code weights}' first bytes (a slice of the model's mapping, whatever its type),
     * or an off-heap buffer if it is null or shorter. Under {@code jquant.kernelWarmup=dense-rows}
     * only the float16 row kernel of decode.
     */
    public static void start(MemorySegment weights) {
        once(KernelWarmup.class, weights, () -> warmShared(weights));
    }

    /** Starts warming the in-place row kernels of dense {@code type} weights (F32 or BF16; F16's are shared) on {@code weights}' first bytes. */
    static void startDense(DType type, MemorySegment weights) {
        if (type != DType.F16) once(type, weights, () -> warmDense(type, weights));
        else start(weights);
    }

    /** Starts warming the int8 row kernel (weightlet codes). */
    static void startInt8Rows() {
        if (denseRowsOnly()) return;
        once("int8 rows", null, KernelWarmup::warmInt8Rows);
    }

    /** Starts warming the float32 row kernel (rows decoded into a buffer). */
    static void startFloatRows() {
        if (denseRowsOnly()) return;
        once("float rows", null, KernelWarmup::warmFloatRows);
    }

    /** Starts warming the kernels of {@code layout}'s class: called when a model builds such a matrix. */
    static void startTernary(TernaryMatrix layout) {
        if (denseRowsOnly() || layout instanceof NativeTernaryMatrix) return;   // native kernels need no compiling
        once(layout.getClass(), null, () -> warmTernary(layout.getClass()));
    }

    /** The shared kernels, {@value #CALLS} calls each (package-private, as the warm-ups below, for the test that they run cleanly). */
    static void warmShared(MemorySegment weights) {
        MatmulKernels k = new VectorMatmulKernels();
        VectorKernels v = new VectorKernels();
        int lanes = k.lanes();
        float[] rows = new float[4 * COLS], x = new float[4 * COLS], acc = new float[16 * lanes], y = new float[COLS];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment halves = firstBytes(weights, 2L * 4 * COLS, arena);
            boolean rowsOnly = denseRowsOnly();
            for (int i = 0; i < CALLS; i++) {
                k.rowsF16(halves, 0, 2L * COLS, 4L * COLS, 6L * COLS, x, 0, 0, COLS, acc);
                if (rowsOnly) continue;
                k.f16ToFloats(halves, 0, y, 0, COLS);
                k.tile(rows, 0, COLS, 2 * COLS, 3 * COLS, x, 0, COLS, 2 * COLS, 3 * COLS, 0, COLS, acc, 0);
                v.rmsnorm(x, 0, rows, 1e-5f, y, 0, COLS);
                v.axpy(0.5f, x, 0, y, 0, COLS);
                v.dot(x, 0, rows, 0, COLS);
                v.softmax(y, 0, COLS);
            }
        } catch (IllegalStateException e) {
            if (weights == null || weights.scope().isAlive()) throw e;   // else the model was closed first: nothing left to warm for
        }
    }

    static void warmDense(DType type, MemorySegment weights) {
        MatmulKernels k = new VectorMatmulKernels();
        try (Arena arena = Arena.ofConfined()) {
            long row = type.byteSize(COLS, COLS);
            MemorySegment w = firstBytes(weights, 4 * row, arena);
            float[] x = new float[COLS], acc = new float[4 * k.lanes()], y = new float[COLS];
            for (int i = 0; i < CALLS; i++) {
                switch (type) {
                    case F32 -> k.rowsF32(w, 0, row, 2 * row, 3 * row, x, 0, 0, COLS, acc);
                    case BF16 -> {
                        k.rowsBF16(w, 0, row, 2 * row, 3 * row, x, 0, 0, COLS, acc);
                        k.bf16ToFloats(w, 0, y, 0, COLS);
                    }
                    default -> throw new IllegalArgumentException(type + " is not F32 or BF16");
                }
            }
        } catch (IllegalStateException e) {
            if (weights == null || weights.scope().isAlive()) throw e;
        }
    }

    static void warmInt8Rows() {
        MatmulKernels k = new VectorMatmulKernels();
        byte[] codes = new byte[4 * COLS];
        float[] x = new float[COLS], acc = new float[4 * k.lanes()];
        for (int i = 0; i < CALLS; i++) k.rowsI8(codes, 0, COLS, 2 * COLS, 3 * COLS, x, 0, 0, COLS, acc);
    }

    static void warmFloatRows() {
        MatmulKernels k = new VectorMatmulKernels();
        float[] rows = new float[4 * COLS], x = new float[COLS], acc = new float[4 * k.lanes()];
        for (int i = 0; i < CALLS; i++) k.rowsF32(rows, 0, COLS, 2 * COLS, 3 * COLS, x, 0, 0, COLS, acc);
    }

    /**
     * The decode and prefill kernels of the ternary layout {@code layout} (T2P, TQ2_0, PQ2_0 or PTQ1_0), on
     * all-zero blocks (valid codes, zero scales), on the caller alone.
     */
    static void warmTernary(Class<?> layout) {
        int rows = 8, cols = 2 * COLS;
        try (Arena arena = Arena.ofConfined(); WorkerPool one = new WorkerPool(1)) {
            TernaryMatrix m;
            if (layout == T2pMatrix.class) m = new T2pMatrix(zeros(arena, (long) T2pBlock.BYTES * (rows / 4) * (cols / 128)), rows, cols, one);
            else if (layout == Tq2Matrix.class) m = new Tq2Matrix(zeros(arena, (long) rows * (cols / 256) * Tq2Block.BYTES), rows, cols, one);
            else if (layout == Pq2Matrix.class) m = new Pq2Matrix(zeros(arena, (long) rows * (cols / 128) * Pq2Block.BYTES), rows, cols, one);
            else if (layout == Ptq1Matrix.class) m = new Ptq1Matrix(zeros(arena, (long) rows * (cols / 128) * Ptq1Block.BYTES), rows, cols, one);
            else throw new IllegalArgumentException("no ternary layout " + layout.getName());
            ActivationBlocks x = ActivationBlocks.quantize(new float[cols]);
            for (int i = 0; i < CALLS / 4; i++) {
                m.multiply(x);
                m.multiply(x, x, x, x);
            }
        }
    }

    private static MemorySegment zeros(Arena arena, long bytes) {
        return arena.allocate(bytes, 64);
    }

    /** The first {@code bytes} of {@code weights} (the kind of segment the model reads), or zeros off the heap if it is null or shorter. */
    private static MemorySegment firstBytes(MemorySegment weights, long bytes, Arena arena) {
        return weights != null && weights.byteSize() >= bytes ? weights.asSlice(0, bytes) : zeros(arena, bytes);
    }
}
