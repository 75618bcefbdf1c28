package jquant.distributed;

import jquant.core.WorkerPool;
import org.apache.beam.runners.direct.DirectOptions;
import org.apache.beam.runners.direct.DirectRunner;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.PipelineResult;
import org.apache.beam.sdk.coders.SerializableCoder;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.transforms.Create;
import org.apache.beam.sdk.transforms.DoFn;
import org.apache.beam.sdk.transforms.ParDo;
import org.apache.beam.sdk.transforms.Reshuffle;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.connector.source.lib.util.IteratorSourceEnumerator;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;

import java.io.IOException;
import java.io.Serial;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * Where the work of a sweep or a sharded evaluation runs, on an existing engine: Apache Beam's direct runner in this
 * JVM, or Flink through its own DataStream API, on a cluster or on a local one this JVM starts (a {@code MiniCluster}).
 * (Beam's Flink runner would have run the Beam pipeline on Flink, but no Maven registry this project builds from
 * serves it: docs/distributed.md.)
 *
 * <p>Both do one thing, {@link #forEach}: each element of a list, given to whichever worker is free, which works on it
 * with a {@link Task} it made once. What the work makes, it writes to the shared folder; nothing travels back.
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
            if (!flink) beam(job, elements, type, tasks);
            else if (flinkMaster != null) flink(flinkMaster, true, job, elements, tasks);
            else localFlink(job, elements, tasks);
        } catch (RuntimeException e) {
            for (Throwable cause = e; cause != null; cause = cause.getCause() == cause ? null : cause.getCause()) {
                if (cause instanceof UncheckedIOException u) throw u.getCause();
                if (cause instanceof IOException io) throw io;
                if (cause instanceof IllegalArgumentException || cause instanceof IllegalStateException) throw (RuntimeException) cause;
            }
            throw e;
        }
    }

    private <T extends Serializable> void beam(String job, List<T> elements, Class<T> type, TaskFactory<T> tasks) {
        DirectOptions options = PipelineOptionsFactory.as(DirectOptions.class);
        options.setRunner(DirectRunner.class);
        options.setJobName(job);
        options.setTargetParallelism(workers);
        Pipeline pipeline = Pipeline.create(options);
        pipeline.apply("elements", Create.of(elements).withCoder(SerializableCoder.of(type)))
                // Lets every worker take elements: without it a runner may keep a source's elements on the worker that made them.
                .apply("spread", Reshuffle.viaRandomKey())
                .apply("work", ParDo.of(new BeamTask<>(tasks, this)));
        PipelineResult.State state = pipeline.run().waitUntilFinish();
        if (state != PipelineResult.State.DONE) throw new IllegalStateException("the " + name() + "'s job " + job + " ended " + state);
    }

    /** Starts a cluster of {@link #workers} task managers here, sends it the job as to any cluster (the classes are here), and stops it. */
    private <T extends Serializable> void localFlink(String job, List<T> elements, TaskFactory<T> tasks) throws IOException {
        Configuration config = new Configuration();
        config.set(RestOptions.BIND_PORT, "0");
        try (MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder().setConfiguration(config).setNumTaskManagers(workers)
                .setNumSlotsPerTaskManager(1).build())) {
            cluster.start();
            URI rest = cluster.getRestAddress().get();
            flink(rest.getHost() + ":" + rest.getPort(), false, job, elements, tasks);
        } catch (IOException | RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("the local Flink cluster failed: " + e.getMessage(), e);
        }
    }

    /** Sends the job to the cluster at {@code master}, with jquant's jar if {@code ship}. */
    private <T extends Serializable> void flink(String master, boolean ship, String job, List<T> elements, TaskFactory<T> tasks) throws IOException {
        String[] host = master.split(":");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createRemoteEnvironment(host[0], Integer.parseInt(host[1]), new Configuration(),
                ship ? new String[] {jquantJar()} : new String[0]);
        // Streaming mode on a bounded input: every worker is deployed at once and the job ends with the input; batch
        // mode's adaptive scheduler would choose the parallelism itself, and choose one worker for a short list.
        env.setRuntimeMode(RuntimeExecutionMode.STREAMING);
        SingleOutputStreamOperator<Long> indices = env.fromSource(new OneSplitEach(elements.size()), WatermarkStrategy.noWatermarks(), "elements");
        SingleOutputStreamOperator<Long> done = indices.map(new FlinkTask<>(new ArrayList<>(elements), tasks, this)).returns(Types.LONG).name("work");
        if (workers > 0) {
            indices.setParallelism(workers);
            done.setParallelism(workers);
        }
        try (CloseableIterator<Long> finished = done.executeAndCollect(job)) {
            finished.forEachRemaining(index -> {});
        } catch (IOException | RuntimeException e) {
            throw e;
        } catch (Exception e) {
            Throwable cause = e;
            while (cause.getCause() != null && cause.getCause() != cause) cause = cause.getCause();
            throw new IllegalStateException("the " + name() + "'s job '" + job + "' failed: " + cause.getMessage(), e);
        }
    }

    /** jquant's own jar, which holds everything a task runs but the engine (the cluster has that). */
    private static String jquantJar() {
        try {
            Path jar = Path.of(Engine.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            if (!Files.isRegularFile(jar)) throw new IllegalStateException("jquant runs from " + jar + ", not a jar: build it (./jquant does) to send it to a cluster");
            return jar.toString();
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The pool an element's work runs on: the common one, or one of {@link #threads} threads, closed with {@link #closePool}. */
    private WorkerPool pool() {
        return threads == 0 || threads == Runtime.getRuntime().availableProcessors() ? WorkerPool.common() : new WorkerPool(threads);
    }

    private static void closePool(WorkerPool pool) {
        if (pool != null && pool != WorkerPool.common()) pool.close();
    }

    /** A worker of the direct runner: its task made at set-up, each element run on the engine's pool, the task closed at tear-down. */
    private static final class BeamTask<T> extends DoFn<T, Void> {
        @Serial
        private static final long serialVersionUID = 1L;

        private final TaskFactory<T> tasks;
        private final Engine engine;
        private transient Task<T> task;
        private transient WorkerPool pool;

        BeamTask(TaskFactory<T> tasks, Engine engine) {
            this.tasks = tasks;
            this.engine = engine;
        }

        @Setup
        public void open() throws IOException {
            pool = engine.pool();
            task = tasks.open();
        }

        @ProcessElement
        public void process(@Element T element) throws IOException {
            pool.call(() -> {
                task.run(element);
                return null;
            });
        }

        @Teardown
        public void close() throws IOException {
            closePool(pool);
            if (task != null) task.close();
        }
    }

    /** A worker of a Flink job: as {@link BeamTask}, given the element's index in the list it carries. */
    private static final class FlinkTask<T> extends RichMapFunction<Long, Long> {
        @Serial
        private static final long serialVersionUID = 1L;

        private final ArrayList<T> elements;
        private final TaskFactory<T> tasks;
        private final Engine engine;
        private transient Task<T> task;
        private transient WorkerPool pool;

        FlinkTask(ArrayList<T> elements, TaskFactory<T> tasks, Engine engine) {
            this.elements = elements;
            this.tasks = tasks;
            this.engine = engine;
        }

        @Override
        public void open(OpenContext context) throws IOException {
            pool = engine.pool();
            task = tasks.open();
        }

        @Override
        public Long map(Long index) throws IOException {
            T element = elements.get(Math.toIntExact(index));
            pool.call(() -> {
                task.run(element);
                return null;
            });
            return index;
        }

        @Override
        public void close() throws IOException {
            closePool(pool);
            if (task != null) task.close();
        }
    }

    /**
     * The indices 0 … n−1, one split each, handed to a worker when it asks for work: a worker that is free takes the
     * next element (the work of one sweep pack can be ten times another's), where one range per worker would not.
     */
    private static final class OneSplitEach extends NumberSequenceSource {
        @Serial
        private static final long serialVersionUID = 1L;

        OneSplitEach(int n) {
            super(0, n - 1);
        }

        @Override
        public SplitEnumerator<NumberSequenceSplit, Collection<NumberSequenceSplit>> createEnumerator(SplitEnumeratorContext<NumberSequenceSplit> context) {
            return new IteratorSourceEnumerator<>(context, splitNumberRange(getFrom(), getTo(), Math.toIntExact(getTo() - getFrom() + 1)));
        }
    }
}
