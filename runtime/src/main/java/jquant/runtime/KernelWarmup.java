package jquant.runtime;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.Ptq1Block;
import jquant.formats.quant.T2pBlock;
import jquant.formats.quant.Tq2Block;
import jquant.runtime.kernels.MatmulKernels;
import jquant.runtime.kernels.VectorKernels;
import jquant.runtime.kernels.VectorMatmulKernels;
import jquant.runtime.kernels.WorkerPool;
import jquant.runtime.ternary.ActivationBlocks;
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
 * <p>The ternary kernels are warmed only once a model builds a ternary matrix ({@link #startTernary}):
 * on two cores, warming kernels a model never calls competes with its first token (measured: the float
 * kernels need 2–3 s of CPU before C2 code exists, the ternary ones as much again).
 */
public final class KernelWarmup {
    /** Calls per kernel: past C2's invocation threshold (Tier4InvocationThreshold, 5000). */
    private static final int CALLS = 12_000;
    private static final int COLS = 256;
    private static final AtomicBoolean STARTED = new AtomicBoolean();
    private static final Set<Class<?>> TERNARY_STARTED = ConcurrentHashMap.newKeySet();

    private KernelWarmup() {}

    /** Starts warming the float and int8 vector kernels on a daemon thread, once per process. */
    public static void start() {
        if (STARTED.compareAndSet(false, true)) Thread.ofPlatform().daemon().name("jquant-kernel-warmup").start(KernelWarmup::warm);
    }

    /** Starts warming the kernels of {@code layout}'s class on a daemon thread, once per process and layout: called when a model builds such a matrix. */
    static void startTernary(TernaryMatrix layout) {
        if (TERNARY_STARTED.add(layout.getClass())) {
            Thread.ofPlatform().daemon().name("jquant-ternary-warmup").start(() -> warmTernary(layout.getClass()));
        }
    }

    /** Calls every float and int8 kernel {@value #CALLS} times (package-private for the test that it runs cleanly). */
    static void warm() {
        MatmulKernels k = new VectorMatmulKernels();
        VectorKernels v = new VectorKernels();
        int lanes = k.lanes();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment w = arena.allocate(4L * 4 * COLS, 64);
            float[] rows = new float[4 * COLS], x = new float[4 * COLS], acc = new float[16 * lanes], y = new float[COLS];
            byte[] codes = new byte[4 * COLS];
            for (int i = 0; i < CALLS; i++) {
                k.rowsF32(w, 0, 4L * COLS, 8L * COLS, 12L * COLS, x, 0, 0, COLS, acc);
                k.rowsF16(w, 0, 2L * COLS, 4L * COLS, 6L * COLS, x, 0, 0, COLS, acc);
                k.rowsBF16(w, 0, 2L * COLS, 4L * COLS, 6L * COLS, x, 0, 0, COLS, acc);
                k.rowsI8(codes, 0, COLS, 2 * COLS, 3 * COLS, x, 0, 0, COLS, acc);
                k.rowsF32(rows, 0, COLS, 2 * COLS, 3 * COLS, x, 0, 0, COLS, acc);
                k.tile(rows, 0, COLS, 2 * COLS, 3 * COLS, x, 0, COLS, 2 * COLS, 3 * COLS, 0, COLS, acc, 0);
                k.f16ToFloats(w, 0, y, 0, COLS);
                k.bf16ToFloats(w, 0, y, 0, COLS);
                v.rmsnorm(x, 0, rows, 1e-5f, y, 0, COLS);
                v.axpy(0.5f, x, 0, y, 0, COLS);
                v.dot(x, 0, rows, 0, COLS);
                v.softmax(y, 0, COLS);
            }
        }
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
}
