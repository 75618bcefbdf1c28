package jquant.runtime.ternary;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A persistent pool that splits a range of row units across a fixed set of daemon threads created
 * once (a benchmark that spawns threads per call measures thread creation). The calling thread
 * takes the first share, so {@code threads = 1} runs inline.
 */
public final class RowPool implements AutoCloseable {

    /** Work on units [from, to). */
    @FunctionalInterface
    public interface RangeTask {
        void run(int from, int to);
    }

    private static final AtomicInteger POOLS = new AtomicInteger();

    private final int threads;
    private final ExecutorService workers;

    public RowPool(int threads) {
        if (threads < 1) throw new IllegalArgumentException("threads must be ≥ 1, got " + threads);
        this.threads = threads;
        int id = POOLS.incrementAndGet();
        AtomicInteger n = new AtomicInteger();
        this.workers = threads == 1 ? null : Executors.newFixedThreadPool(threads - 1, r -> {
            Thread t = new Thread(r, "ternary-pool-" + id + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /** A single-threaded pool: everything runs on the caller. */
    public static RowPool inline() { return new RowPool(1); }

    public int threads() { return threads; }

    /** Runs {@code task} over [0, units) in {@link #threads()} contiguous shares and waits for all. */
    public void forEach(int units, RangeTask task) {
        int shares = Math.min(threads, units);
        if (shares <= 1) {
            if (units > 0) task.run(0, units);
            return;
        }
        @SuppressWarnings("unchecked")
        Future<?>[] pending = new Future<?>[shares - 1];
        for (int s = 1; s < shares; s++) {
            int from = (int) ((long) units * s / shares), to = (int) ((long) units * (s + 1) / shares);
            pending[s - 1] = workers.submit(() -> task.run(from, to));
        }
        task.run(0, (int) ((long) units / shares));
        for (Future<?> f : pending) {
            try {
                f.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for row workers", e);
            } catch (java.util.concurrent.ExecutionException e) {
                throw new IllegalStateException("row worker failed", e.getCause());
            }
        }
    }

    @Override
    public void close() {
        if (workers != null) workers.shutdownNow();
    }
}
