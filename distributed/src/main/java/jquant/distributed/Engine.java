package jquant.distributed;

import jquant.core.WorkerPool;

import java.io.IOException;
import java.io.Serial;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.file.FileSystemException;
import java.util.List;

/**
 * Where the work of a sweep or a sharded evaluation runs, on an existing engine: Apache Beam's direct runner in this
 * JVM, or Flink through its own DataStream API, on a cluster or on a local one this JVM starts (a {@code MiniCluster}).
 * (Beam's Flink runner would have run the Beam pipeline on Flink, but no Maven registry this project builds from
 * serves it: docs/distributed.md.)
 *
 * <p>Both do one thing, {@link #forEach}: each element of a list, given to whichever worker is free, which works on it
 * with a {@link Task} it made once. What the work makes, it writes to the shared folder; nothing travels back. Each
 * engine's code is a class of its own ({@link DirectRunnerJob}, {@link FlinkJob}), so that a Flink worker, which has
 * Flink's classes and jquant's jar but not Beam's, never loads Beam's.
 *
 * @param flink       whether Flink runs the work (else Beam's direct runner)
 * @param flinkMaster {@code HOST:PORT} of a Flink cluster's REST endpoint, to which jquant's jar is sent with each
 *                    job; null with Flink: a local cluster of {@code workers} task managers, started for each job
 * @param workers     elements worked on at once: the direct runner's threads, the Flink job's parallelism
 *                    (0 on a cluster: its default parallelism)
 * @param threads     the kernel threads of each element's work ({@link WorkerPool}; 0: one per processor of the
 *                    machine it runs on)
 */
public record Engine(boolean flink, String flinkMaster, int workers, int threads) implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    public Engine {
        if (workers < 0 || (flink && flinkMaster == null && workers == 0)) throw new IllegalArgumentException("workers must be at least 1, got " + workers);
        if (threads < 0) throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        if (!flink && flinkMaster != null) throw new IllegalArgumentException("a Flink master for the direct runner");
    }

    /** Beam's direct runner in this JVM, {@code workers} elements at once (1: one after another, as the sweep ran before it had an engine). */
    public static Engine direct(int workers) {
        return new Engine(false, null, Math.max(workers, 1), 0);
    }

    /** A Flink cluster in this JVM, of {@code workers} task managers with one slot each, started and stopped for each job. */
    public static Engine localFlink(int workers) {
        return new Engine(true, null, workers, 0);
    }

    /** The Flink cluster at {@code master} ({@code HOST:PORT}), sent jquant's jar with each job. */
    public static Engine flink(String master, int workers) {
        return new Engine(true, master, workers, 0);
    }

    /** This engine with each element's kernels on {@code threads} threads (0: one per processor of its machine). */
    public Engine threads(int threads) {
        return new Engine(flink, flinkMaster, workers, threads);
    }

    /** How errors name it. */
    public String name() {
        return !flink ? "direct runner" : flinkMaster == null ? "local Flink cluster" : "Flink cluster at " + flinkMaster;
    }

    /** What a worker does with each element it is given: made once per worker ({@link TaskFactory}), closed when it is done. */
    public interface Task<T> extends AutoCloseable {
        void run(T element) throws IOException;

        @Override
        void close() throws IOException;
    }

    /** Makes a worker's {@link Task}; it travels to the workers, so it is serializable. */
    public interface TaskFactory<T> extends Serializable {
        Task<T> open() throws IOException;
    }

    /**
     * Works on every element of {@code elements}, each on one worker, at most {@link #workers} at once, each worker
     * taking the next element when it is free; returns when all are done. A task's error ends the job and comes back
     * as the error it was (an unreadable file, a context too long), out of the engine's wrappings.
     */
    public <T extends Serializable> void forEach(String job, List<T> elements, Class<T> type, TaskFactory<T> tasks) throws IOException {
        if (elements.isEmpty()) return;
        try {
            if (!flink) DirectRunnerJob.run(this, job, elements, type, tasks);
            else if (flinkMaster != null) FlinkJob.run(this, flinkMaster, true, job, elements, tasks);
            else FlinkJob.runLocally(this, job, elements, tasks);
        } catch (RuntimeException e) {
            Throwable task = thrownByATask(e);
            if (task instanceof UncheckedIOException u) throw u.getCause();
            if (task instanceof IOException io) throw io;
            if (task instanceof RuntimeException r) throw r;
            throw e;
        }
    }

    /** A job that failed for a reason of the engine's, not a task's (a cluster out of reach): its message says which and why. */
    static final class JobFailed extends RuntimeException {
        @Serial
        private static final long serialVersionUID = 1L;

        JobFailed(Engine engine, String job, Throwable e) {
            super("the " + engine.name() + "'s job '" + job + "' failed: " + deepest(e).getMessage(), e);
        }

        private static Throwable deepest(Throwable e) {
            while (e.getCause() != null && e.getCause() != e) e = e.getCause();
            return e;
        }
    }

    /** In the engine's wrappings of {@code e}, the first error a task's code threw (or a file it could not read), or null. */
    private static Throwable thrownByATask(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof JobFailed) continue;
            if (t instanceof FileSystemException) return t;
            StackTraceElement[] at = t.getStackTrace();
            if (at.length > 0 && at[0].getClassName().startsWith("jquant.")) return t;
        }
        return null;
    }

    /** The pool an element's work runs on: the common one, or one of {@link #threads} threads, closed with {@link #closePool}. */
    WorkerPool pool() {
        return threads == 0 || threads == Runtime.getRuntime().availableProcessors() ? WorkerPool.common() : new WorkerPool(threads);
    }

    static void closePool(WorkerPool pool) {
        if (pool != null && pool != WorkerPool.common()) pool.close();
    }
}
