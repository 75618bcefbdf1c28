package jquant.runtime.kernels;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The one set of threads every kernel runs on: the caller plus {@code threads − 1} daemon workers,
 * created once. A job is a range of independent work items (weight rows, row groups, attention
 * heads); it is cut into chunks that the threads take from an atomic counter until none is left, so a
 * thread the machine slows down holds the others back by one chunk at most (ggml's mul_mat does the
 * same).
 *
 * <p>Decode hands out a job every few tens of microseconds, so the hand-off must cost far less than
 * that: a worker spins on the job counter for a while after each job ({@link #SPIN_NANOS}) and only
 * then parks, and the caller wakes parked workers only. Small jobs run on the caller alone.
 *
 * <p>One job runs at a time. A job started while another is running (another thread's, or a nested
 * one from inside a task) runs on its caller alone, so tasks may call kernels that use the pool.
 */
public final class WorkerPool implements AutoCloseable {

    /** A chunk {@code [start, end)} of the work, run by worker {@code worker} (0 = the caller). */
    @FunctionalInterface
    public interface RangeTask {
        void run(int worker, int start, int end);
    }

    /** Below this many multiply-adds in total a job is not worth splitting. */
    private static final long MIN_PARALLEL_WORK = 1L << 16;
    /** Chunks per thread: enough to even out a slow thread, few enough to keep each chunk long. */
    private static final int CHUNKS_PER_THREAD = 4;
    /** How long an idle worker spins for the next job before it parks. */
    private static final long SPIN_NANOS = 2_000_000;

    private static volatile WorkerPool common;
    private static int commonThreads = Runtime.getRuntime().availableProcessors();

    private final int threads;
    private final Worker[] workers;
    private final ReentrantLock running = new ReentrantLock();

    // The current job: written by the caller before it publishes a new generation.
    private RangeTask task;
    private int count;
    private int chunk;
    private final AtomicInteger nextItem = new AtomicInteger();
    private final AtomicInteger busyWorkers = new AtomicInteger();
    private volatile Throwable failure;
    private volatile long generation;
    private volatile boolean closed;

    /** A pool of {@code threads} workers in all: the caller plus {@code threads - 1} daemon threads. */
    public WorkerPool(int threads) {
        if (threads < 1) throw new IllegalArgumentException("a worker pool needs at least one thread, got " + threads);
        this.threads = threads;
        this.workers = new Worker[threads - 1];
        for (int w = 0; w < workers.length; w++) {
            workers[w] = new Worker(w + 1);
            workers[w].start();
        }
    }

    /**
     * Sets the size of the process-wide pool ({@code --threads}); must come before its first use
     * unless the size is the same.
     */
    public static synchronized void useThreads(int threads) {
        if (threads < 1) throw new IllegalArgumentException("--threads must be at least 1, got " + threads);
        if (common != null && common.threads != threads) {
            throw new IllegalStateException("the worker pool already runs " + common.threads + " threads");
        }
        commonThreads = threads;
    }

    /** The process-wide pool: {@link #useThreads} threads, by default one per available processor. */
    public static WorkerPool common() {
        WorkerPool pool = common;
        if (pool == null) {
            synchronized (WorkerPool.class) {
                pool = common;
                if (pool == null) common = pool = new WorkerPool(commonThreads);
            }
        }
        return pool;
    }

    /** Workers in all, including the caller; per-worker scratch buffers need this many slots. */
    public int threads() {
        return threads;
    }

    /**
     * Runs {@code task} over {@code [0, count)} in chunks and returns when every chunk is done; the
     * first failure of any chunk is rethrown here. {@code workPerItem} (about the multiply-adds per
     * item) decides whether splitting pays. A worker may be given several chunks, one call each.
     */
    public void forRange(int count, long workPerItem, RangeTask task) {
        if (count <= 0) return;
        if (threads == 1 || count == 1 || closed || (long) count * workPerItem < MIN_PARALLEL_WORK
                || Thread.currentThread() instanceof Worker || running.isHeldByCurrentThread() || !running.tryLock()) {
            task.run(0, 0, count);
            return;
        }
        try {
            this.task = task;
            this.count = count;
            this.chunk = Math.max(1, (count + threads * CHUNKS_PER_THREAD - 1) / (threads * CHUNKS_PER_THREAD));
            this.failure = null;
            nextItem.set(0);
            busyWorkers.set(workers.length);
            generation++;   // publishes the job
            for (Worker w : workers) if (w.parked) LockSupport.unpark(w);
            runChunks(0);
            while (busyWorkers.get() != 0) Thread.onSpinWait();
            this.task = null;
        } finally {
            running.unlock();
        }
        Throwable f = failure;
        if (f instanceof RuntimeException e) throw e;
        if (f instanceof Error e) throw e;
        if (f != null) throw new IllegalStateException("parallel work failed", f);
    }

    private void runChunks(int worker) {
        RangeTask t = task;
        int n = count, size = chunk;
        try {
            for (int start; (start = nextItem.getAndAdd(size)) < n; ) t.run(worker, start, Math.min(n, start + size));
        } catch (RuntimeException | Error e) {
            if (failure == null) failure = e;
            nextItem.set(n);   // the others stop after their current chunk
        }
    }

    @Override
    public void close() {
        closed = true;
        for (Worker w : workers) LockSupport.unpark(w);
    }

    /** A pool thread: waits for the next generation, runs chunks of it, reports done. */
    private final class Worker extends Thread {
        private final int index;
        volatile boolean parked;

        Worker(int index) {
            super("jquant-worker-" + index);
            this.index = index;
            setDaemon(true);
        }

        @Override
        public void run() {
            long seen = 0;   // the generation before the first job; read here, a job published meanwhile would be missed
            while (true) {
                long g = awaitJob(seen);
                if (closed) return;
                seen = g;
                runChunks(index);
                busyWorkers.decrementAndGet();
            }
        }

        /** Spins for a while, then parks, until a generation after {@code seen} is published (or the pool closes). */
        private long awaitJob(long seen) {
            long spinUntil = System.nanoTime() + SPIN_NANOS;
            long g;
            while ((g = generation) == seen && !closed) {
                if (System.nanoTime() < spinUntil) {
                    Thread.onSpinWait();
                } else {
                    parked = true;
                    if (generation == seen && !closed) LockSupport.park(this);
                    parked = false;
                }
            }
            return g;
        }
    }
}
