package jquant.runtime.kernels;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * A fixed set of daemon threads, created once, that split a range of independent work items
 * (weight rows, attention heads) between themselves and the calling thread. Small jobs run on the
 * caller alone: handing work to another core costs microseconds, more than a tiny matrix takes.
 */
public final class WorkerPool implements AutoCloseable {

    /** A slice {@code [start, end)} of the work, run by worker {@code worker} (0 = the caller). */
    @FunctionalInterface
    public interface RangeTask {
        void run(int worker, int start, int end);
    }

    /** Below this many multiply-adds in total a job is not worth splitting. */
    private static final long MIN_PARALLEL_WORK = 1L << 16;

    private static volatile WorkerPool common;

    private final int threads;
    private final ExecutorService helpers;

    /** A pool of {@code threads} workers in all: the caller plus {@code threads - 1} daemon threads. */
    public WorkerPool(int threads) {
        if (threads < 1) throw new IllegalArgumentException("a worker pool needs at least one thread, got " + threads);
        this.threads = threads;
        this.helpers = threads == 1 ? null : Executors.newFixedThreadPool(threads - 1, task -> {
            Thread t = new Helper(task);
            t.setDaemon(true);
            return t;
        });
    }

    /** The process-wide pool with one worker per available processor. */
    public static WorkerPool common() {
        WorkerPool pool = common;
        if (pool == null) {
            synchronized (WorkerPool.class) {
                pool = common;
                if (pool == null) common = pool = new WorkerPool(Runtime.getRuntime().availableProcessors());
            }
        }
        return pool;
    }

    /** Workers in all, including the caller; per-worker scratch buffers need this many slots. */
    public int threads() {
        return threads;
    }

    /**
     * Runs {@code task} over {@code [0, count)}, split into one contiguous slice per worker, and
     * returns when all slices are done. {@code workPerItem} (about the multiply-adds per item)
     * decides whether splitting pays.
     */
    public void forRange(int count, long workPerItem, RangeTask task) {
        int parts = Math.min(threads, count);
        if (parts <= 1 || (long) count * workPerItem < MIN_PARALLEL_WORK || Thread.currentThread() instanceof Helper) {
            if (count > 0) task.run(0, 0, count);
            return;
        }
        Future<?>[] pending = new Future<?>[parts - 1];
        for (int p = 1; p < parts; p++) {
            int worker = p;
            int start = (int) ((long) count * p / parts);
            int end = (int) ((long) count * (p + 1) / parts);
            pending[p - 1] = helpers.submit(() -> task.run(worker, start, end));
        }
        Throwable failure = null;
        try {
            task.run(0, 0, count / parts);
        } catch (RuntimeException | Error e) {
            failure = e;
        }
        for (Future<?> f : pending) {
            try {
                f.get();
            } catch (ExecutionException e) {
                if (failure == null) failure = e.getCause();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                if (failure == null) failure = e;
            }
        }
        if (failure instanceof RuntimeException e) throw e;
        if (failure instanceof Error e) throw e;
        if (failure != null) throw new IllegalStateException("parallel work failed", failure);
    }

    @Override
    public void close() {
        if (helpers != null) helpers.shutdownNow();
    }

    /** Marks the pool's own threads, which run nested jobs inline instead of waiting on themselves. */
    private static final class Helper extends Thread {
        Helper(Runnable task) {
            super(task, "jquant-worker");
        }
    }
}
