package jquant.runtime;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import jquant.formats.DType;
import jquant.runtime.kernels.MatmulKernels;
import jquant.runtime.kernels.VectorKernels;
import jquant.runtime.kernels.VectorMatmulKernels;
import jquant.core.WorkerPool;
import jquant.runtime.ternary.ActivationBlocks;
import jquant.runtime.ternary.NativeTernaryMatrix;
import jquant.runtime.ternary.TernaryKernels;
import jquant.runtime.ternary.TernaryMatrix;

/**
 * Gets the Vector API kernels compiled before a model needs them. Until HotSpot's C2 compiles a
 * kernel, the Vector API runs as plain Java that allocates an object per vector operation, fifty to
 * a hundred times slower; a model's first token would wait seconds for that (a 1B model's first
 * prefill reads two gigabytes of weights through kernels still being profiled). A background thread
 * calls each kernel a few thousand times on a few hundred values — milliseconds of work — so C2
 * compiles them while the file is opened and the prompt tokenized. The results are discarded.
 *
 * <p>Only the kernels a model calls are warmed: the shared ones (norms, softmax, the prefill tile, the
 * float16 row kernels) when a model is opened ({@link #start}), each other storage form's row kernels
 * when a model first builds a matrix of that form ({@link #startDense}, {@link #startInt8Rows},
 * {@link #startFloatRows}, {@link #startTernary}): on two cores C2 is the bottleneck of the first token,
 * so a kernel compiled for nothing delays the ones the model waits for.
 *
 * <p>The kernels that read stored weights in place are warmed on the model's own bytes (a slice of
 * its mapping) where the caller gives them: C2 compiles for the kinds of segment it has seen, and a
 * kernel warmed on an off-heap buffer is compiled again at the model's first product from the mapping,
 * as slower code.
 *
 * <p>With the system property {@code jquant.kernelWarmup=dense-rows}, as the {@code ./jquant}
 * launcher sets it, only the row kernels of dense decode, which read the mapped file, are warmed
 * (float16's, and BF16's or F32's when a model has such weights). The launcher also gives the JVM
 * compiler directives (scripts/compiler-directives.json) that keep C2 from compiling the Vector API's
 * own methods; with those the other kernels compile sooner on the model's first calls than with this
 * thread beside them, while a dense row kernel compiled from the model's first decode steps is slower
 * code than one warmed here (bench/RESULTS.md). Any other value than {@code all} (the default) and
 * {@code dense-rows} is an error.
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
     * T2P prefill kernel's vectors (without one, a T2P eval made thousands of young collections and
     * ran at a fraction of its speed); why that order matters was not pinned down, and any of the row
     * kernels does it. The float16 row
     * kernels read {@code weights}' first bytes (a slice of the model's mapping, whatever its type),
     * or an off-heap buffer if it is null or shorter. Under {@code jquant.kernelWarmup=dense-rows}
     * only the float16 row kernel of decode.
     */
    public static void start(MemorySegment weights) {
        MemorySegment readable = readableByWarmup(weights);
        once(KernelWarmup.class, readable, () -> warmShared(readable));
    }

    /** Starts warming the in-place row kernels of dense {@code type} weights (F32 or BF16; F16's are shared) on {@code weights}' first bytes. */
    static void startDense(DType type, MemorySegment weights) {
        MemorySegment readable = readableByWarmup(weights);
        if (type != DType.F16) once(type, readable, () -> warmDense(type, readable));
        else start(readable);
    }

    /** {@code weights}, or null (an off-heap buffer of the warm-up's own) when it is confined to its thread: the warm-up thread may not read it. */
    private static MemorySegment readableByWarmup(MemorySegment weights) {
        return weights != null && weights.isAccessibleBy(Thread.ofPlatform().unstarted(() -> {})) ? weights : null;
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

    /** Starts warming the kernels of {@code matrix}'s type: called when a model builds such a matrix. */
    static void startTernary(TernaryMatrix matrix) {
        if (denseRowsOnly() || matrix instanceof NativeTernaryMatrix) return;   // native kernels need no compiling
        once(matrix.type(), null, () -> warmTernary(matrix.type()));
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
     * The decode and prefill kernels of the ternary {@code type} ({@link TernaryKernels}), on all-zero
     * blocks (valid codes, zero scales), on the caller alone: {@value #CALLS} one-column products, and a
     * quarter as many of four columns, which pass the prefill kernel's loops four times as often.
     */
    static void warmTernary(DType type) {
        int rows = 8, cols = 2 * COLS;
        try (Arena arena = Arena.ofConfined(); WorkerPool one = new WorkerPool(1)) {
            TernaryMatrix m = TernaryKernels.javaOn(type, zeros(arena, type.byteSize((long) rows * cols, cols)), rows, cols, one);
            ActivationBlocks x = ActivationBlocks.quantize(new float[cols]);
            for (int i = 0; i < CALLS; i++) {
                m.multiply(x);
                if (i % 4 == 0) m.multiply(x, x, x, x);
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
