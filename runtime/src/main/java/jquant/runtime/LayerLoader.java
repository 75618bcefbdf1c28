package jquant.runtime;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Layer-pipelined loading (the EdgeFlow paper's cold-start pipeline): a model whose weights stay in
 * the mapped file starts computing at once, while a background thread pages in (and, for a
 * checksummed file, verifies) its layers in the order the forward pass needs them — the embedding,
 * each block, the classifier. The forward pass waits for a layer only if it catches up with the
 * loader, so reading layer l+1 from disk overlaps computing layer l.
 *
 * <p>{@link Policy#EAGER} does the same work before the model is handed out (load everything first):
 * the baseline the pipeline is measured against, and what a caller wants before timing compute alone.
 * {@link Policy#LAYERWISE} loads a stage only when the forward pass first asks for it, on the caller's
 * thread: a run that goes through the model one layer at a time (and releases each, {@link
 * LoadedModel#release}) then holds one layer of the file, not all of it.
 *
 * <p>Stage {@code 0} is the embedding, stage {@code l + 1} block {@code l}, stage {@code layers + 1}
 * the final norm and classifier ({@link LlamaModel.LayerGate}).
 */
public final class LayerLoader implements LlamaModel.LayerGate, AutoCloseable {

    /** When the layers are loaded. */
    public enum Policy {
        /** In the background, in forward-pass order, while the model already computes. */
        PIPELINED,
        /** All of them before the model is used. */
        EAGER,
        /** Each when the forward pass first needs it, and not before. */
        LAYERWISE
    }

    /** Loads one stage: pages in its bytes and checks whatever can be checked. */
    @FunctionalInterface
    public interface Stage {
        void load() throws Exception;
    }

    private final List<Stage> stages;
    private final Policy policy;
    private final Thread thread;
    /** Stages {@code [0, ready)} are loaded. */
    private volatile int ready;
    private volatile Throwable failure;
    private volatile boolean closed;

    private LayerLoader(List<Stage> stages, Policy policy) {
        this.stages = List.copyOf(stages);
        this.policy = policy;
        if (policy == Policy.EAGER) {
            run();
            this.thread = null;
            if (failure != null) throw rethrown(failure);
        } else if (policy == Policy.LAYERWISE) {
            this.thread = null;
        } else {
            this.thread = Thread.ofPlatform().daemon().name("jquant-layer-loader").start(this::run);
        }
    }

    /** Starts loading {@code stages} by {@code policy}. */
    public static LayerLoader start(List<Stage> stages, Policy policy) {
        return new LayerLoader(stages, policy);
    }

    /** A stage that pages in the given slices of a mapped file (a no-op for memory that is not mapped). */
    public static Stage pageIn(List<MemorySegment> segments) {
        return () -> {
            for (MemorySegment s : segments) if (s.isMapped()) s.load();
        };
    }

    private void run() {
        for (int i = 0; i < stages.size() && !closed; i++) {
            try {
                stages.get(i).load();
            } catch (Throwable t) {
                failure = t;
                synchronized (this) {
                    notifyAll();
                }
                return;
            }
            ready = i + 1;
            synchronized (this) {
                notifyAll();
            }
        }
    }

    @Override
    public void await(int stage) {
        if (stage < ready) return;
        if (policy == Policy.LAYERWISE) {
            loadThrough(stage);
            return;
        }
        synchronized (this) {
            while (stage >= ready && failure == null) {
                try {
                    wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for layer " + stage + " to load", e);
                }
            }
        }
        if (stage >= ready) throw rethrown(failure);
    }

    /** Loads the stages up to {@code stage} that are not loaded yet, here. */
    private synchronized void loadThrough(int stage) {
        while (ready <= stage && ready < stages.size()) {
            try {
                stages.get(ready).load();
            } catch (Throwable t) {
                throw rethrown(t);
            }
            ready++;
        }
    }

    private static RuntimeException rethrown(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t.getMessage(), t);
    }

    /** Stops paging in further layers (the model must not be used afterwards). */
    @Override
    public void close() {
        closed = true;
    }
}
