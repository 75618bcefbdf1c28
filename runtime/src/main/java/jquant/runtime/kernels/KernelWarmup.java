package jquant.runtime.kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Gets the Vector API kernels compiled before a model needs them. Until HotSpot's C2 compiles a
 * kernel, the Vector API runs as plain Java that allocates an object per vector operation, fifty to
 * a hundred times slower; a model's first token would wait seconds for that (a 1B model's first
 * prefill reads two gigabytes of weights through kernels still being profiled). A background thread
 * calls each kernel a few thousand times on a few hundred values — milliseconds of work — so C2
 * compiles them while the file is opened and the prompt tokenized. The results are discarded.
 */
public final class KernelWarmup {
    /** Calls per kernel: past C2's invocation threshold (Tier4InvocationThreshold, 5000). */
    private static final int CALLS = 12_000;
    private static final int COLS = 256;
    private static final AtomicBoolean STARTED = new AtomicBoolean();

    private KernelWarmup() {}

    /** Starts warming the vector kernels on a daemon thread, once per process. */
    public static void start() {
        if (STARTED.compareAndSet(false, true)) Thread.ofPlatform().daemon().name("jquant-kernel-warmup").start(KernelWarmup::run);
    }

    private static void run() {
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
}
