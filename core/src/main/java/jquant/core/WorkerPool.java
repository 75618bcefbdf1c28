package jquant.core;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The one set of threads every kernel runs on: the caller plus {@code threads − 1} daemon workers,
 * created once. A job is a range of independent work items (weight rows, row groups, attention
 * heads), cut into chunks so that a thread the machine slows down holds the others back by one chunk at
 * most. A short job (decode's products) gives each thread an equal, contiguous share of the items; a
 * thread takes its share's chunks from the front and, when it has none left, the others' from their
 * back. So each thread reads one stream of weights from memory, where chunks dealt out in turn from one
 * counter (ggml's mul_mat's way) made each thread's reads jump at every chunk: the T2P kernel on two
 * threads then read memory 0.76-0.95 as fast at a decode job's chunk sizes (bench/RESULTS.md). A long
 * job (prefill's products) takes its chunks from one counter and cuts them finer at its end: each chunk
 * is a share of what is left (guided scheduling), down to a sixteenth of a thread's share, so its first
 * chunks are long and its last ones short, and the thread that finishes first waits for little.
 *
 * <p>Decode hands out a job every few tens of microseconds, so the hand-off must cost far less than
 * that: an idle worker spins on the job slot for a short while ({@link #SPIN_NANOS}) before it
 * parks, and the caller wakes parked workers only. A job is done when all its items are — not when
 * every worker has looked at it — so a worker the operating system has descheduled (these machines
 * are shared) never holds up a job whose chunks the others have finished; the caller waits for the
 * last chunk by spinning briefly, then parking until the thread that finishes it wakes it.
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
    /**
     * Multiply-adds from which a job is long (about a millisecond of one thread's): each chunk is then
     * what is left over twice the threads, none shorter than its items over
     * {@value #LONG_JOB_CHUNKS_PER_THREAD} chunks a thread (with four a thread, prefill's second thread
     * often sat waiting for the other's last chunk; bench/RESULTS.md).
     */
    private static final long LONG_JOB_WORK = 1L << 26;
    private static final int LONG_JOB_CHUNKS_PER_THREAD = 16;
    /** How long an idle worker, or a caller waiting for the last chunk, spins before it parks. */
    private static final long SPIN_NANOS = 100_000;

    /** The pool of the run in progress, bound by {@link #run} / {@link #call} (the CLI binds one sized by {@code --threads}). */
    private static final ScopedValue<WorkerPool> CURRENT = ScopedValue.newInstance();
    private static volatile WorkerPool common;

    private final int threads;
    private final Worker[] workers;
    private final ReentrantLock running = new ReentrantLock();
    /** The job being run, or the last one; workers take chunks from whatever job this is. */
    private volatile Job current;
    private volatile boolean closed;

    /** One call of {@link #forRange}: its task, its chunks, and who waits for it. */
    private static final class Job {
        final RangeTask task;
        final int count;
        final int chunk;
        /** Divides what is left into a chunk (guided), or 0: chunks of {@link #chunk} only. */
        final int guide;
        final Thread caller;
        final AtomicInteger nextItem = new AtomicInteger();
        /**
         * A short job's shares, thread w's as {@code (next << 32) | end}: its items {@code [next, end)} not yet
         * taken; null for a long job.
         */
        final AtomicLongArray shares;
        final AtomicInteger doneItems = new AtomicInteger();
        volatile Throwable failure;
        volatile boolean callerParked;

        /** A long job ({@code guide > 0}: chunks from one counter), or a short one in {@code threads} shares ({@code guide == 0}). */
        Job(RangeTask task, int count, int chunk, int guide, int threads, Thread caller) {
            this.task = task;
            this.count = count;
            this.chunk = chunk;
            this.guide = guide;
            this.caller = caller;
            if (guide > 0) {
                shares = null;
            } else {
                shares = new AtomicLongArray(threads);
                for (int w = 0; w < threads; w++) shares.set(w, share((int) ((long) count * w / threads), (int) ((long) count * (w + 1) / threads)));
            }
        }

        private static long share(int next, int end) {
            return (long) next << 32 | end;
        }

        /** Takes and runs chunks until none is left: a long job's from the counter, a short job's from this thread's share, then the others'. */
        void runChunks(int worker) {
            if (shares == null) {
                for (int start; (start = nextItem.get()) < count; ) {
                    int end = Math.min(count, start + Math.max(chunk, (count - start) / guide));
                    if (nextItem.compareAndSet(start, end)) run(worker, start, end);
                }
                return;
            }
            for (long taken; (taken = take(worker, true)) >= 0; ) run(worker, (int) (taken >>> 32), (int) taken);
            for (int i = 1; i < shares.length(); i++) {
                int other = (worker + i) % shares.length();
                for (long taken; (taken = take(other, false)) >= 0; ) run(worker, (int) (taken >>> 32), (int) taken);
            }
        }

        /** A chunk of share {@code w} as {@code (start << 32) | end}, from its front or its back; −1 when it is empty. */
        private long take(int w, boolean front) {
            while (true) {
                long s = shares.get(w);
                int next = (int) (s >>> 32), end = (int) s;
                if (next >= end) return -1;
                int cut = front ? Math.min(end, next + chunk) : Math.max(next, end - chunk);
                if (shares.compareAndSet(w, s, front ? share(cut, end) : share(next, cut))) return front ? share(next, cut) : share(cut, end);
            }
        }

        private void run(int worker, int start, int end) {
            try {
                if (failure == null) task.run(worker, start, end);
            } catch (RuntimeException | Error e) {
                if (failure == null) failure = e;
            }
            if (doneItems.addAndGet(end - start) == count && callerParked) LockSupport.unpark(caller);
        }

        boolean done() {
            return doneItems.get() == count;
        }
    }

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
     * The pool the calling code runs on: inside a pool's worker, that pool; inside {@link #run} or
     * {@link #call}, the pool bound there; otherwise {@link #common()}. Every stage takes its threads
     * from here, so one pool sized by {@code --threads} reaches all of them.
     */
    public static WorkerPool current() {
        if (Thread.currentThread() instanceof Worker w) return w.pool();
        return CURRENT.isBound() ? CURRENT.get() : common();
    }

    /** The default pool, one thread per available processor, created when first used. */
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

    /** Runs {@code work} with this pool as {@link #current()} (and every stage it calls). */
    public void run(Runnable work) {
        ScopedValue.where(CURRENT, this).run(work);
    }

    /** Calls {@code work} with this pool as {@link #current()}, and returns its result. */
    public <T, X extends Throwable> T call(ScopedValue.CallableOp<T, X> work) throws X {
        return ScopedValue.where(CURRENT, this).call(work);
    }

    /** Workers in all, including the caller; per-worker scratch buffers need this many slots. */
    public int threads() {
        return threads;
    }

    /**
     * Runs {@code task} over {@code [0, count)} in chunks and returns when every chunk is done; the
     * first failure of any chunk is rethrown here (the chunks not yet started are skipped).
     * {@code workPerItem} (about the multiply-adds per item) decides whether splitting pays. A worker
     * may be given several chunks, one call each.
     */
    public void forRange(int count, long workPerItem, RangeTask task) {
        if (count <= 0) return;
        if (threads == 1 || count == 1 || closed || (long) count * workPerItem < MIN_PARALLEL_WORK
                || Thread.currentThread() instanceof Worker || running.isHeldByCurrentThread() || !running.tryLock()) {
            task.run(0, 0, count);
            return;
        }
        Job job;
        try {
            boolean longJob = (long) count * workPerItem >= LONG_JOB_WORK;
            int chunks = threads * (longJob ? LONG_JOB_CHUNKS_PER_THREAD : CHUNKS_PER_THREAD);
            job = new Job(task, count, Math.max(1, (count + chunks - 1) / chunks), longJob ? 2 * threads : 0, threads, Thread.currentThread());
            current = job;
            for (Worker w : workers) if (w.parked) LockSupport.unpark(w);
            job.runChunks(0);
            awaitDone(job);
        } finally {
            running.unlock();
        }
        Throwable f = job.failure;
        if (f instanceof RuntimeException e) throw e;
        if (f instanceof Error e) throw e;
    }

    /** Spins for the last chunks, then parks until the thread that finishes them wakes this one. */
    private static void awaitDone(Job job) {
        long spinUntil = System.nanoTime() + SPIN_NANOS;
        while (!job.done()) {
            if (System.nanoTime() < spinUntil) {
                Thread.onSpinWait();
            } else {
                job.callerParked = true;
                if (!job.done()) LockSupport.parkNanos(job, SPIN_NANOS);
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        for (Worker w : workers) LockSupport.unpark(w);
    }

    /** A pool thread: waits for the next job, runs chunks of it. */
    private final class Worker extends Thread {
        private final int index;
        volatile boolean parked;

        Worker(int index) {
            super("jquant-worker-" + index);
            this.index = index;
            setDaemon(true);
        }

        WorkerPool pool() {
            return WorkerPool.this;
        }

        @Override
        public void run() {
            Job seen = null;
            while (true) {
                Job job = awaitJob(seen);
                if (closed) return;
                seen = job;
                job.runChunks(index);
            }
        }

        /** Spins for a while, then parks, until a job other than {@code seen} is published (or the pool closes). */
        private Job awaitJob(Job seen) {
            long spinUntil = System.nanoTime() + SPIN_NANOS;
            Job job;
            while ((job = current) == seen && !closed) {
                if (System.nanoTime() < spinUntil) {
                    Thread.onSpinWait();
                } else {
                    parked = true;
                    if (current == seen && !closed) LockSupport.park(this);
                    parked = false;
                }
            }
            return job;
        }
    }
}
