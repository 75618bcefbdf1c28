package jquant.distributed;

import jquant.core.WorkerPool;
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
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * {@link Engine#forEach} on Flink, through its own DataStream API: a bounded source of the elements' indices, one split
 * each, which hands the next index to whichever task asks for work, and a map that works on the element.
 */
final class FlinkJob {
    private FlinkJob() {}

    /** Starts a cluster of the engine's workers as task managers in this JVM, sends it the job as to any cluster (the classes are here), and stops it. */
    static <T extends Serializable> void runLocally(Engine engine, String job, List<T> elements, Engine.TaskFactory<T> tasks) throws IOException {
        Configuration config = new Configuration();
        config.set(RestOptions.BIND_PORT, "0");
        try (MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder().setConfiguration(config).setNumTaskManagers(engine.workers())
                .setNumSlotsPerTaskManager(1).build())) {
            cluster.start();
            URI rest = cluster.getRestAddress().get();
            run(engine, rest.getHost() + ":" + rest.getPort(), false, job, elements, tasks);
        } catch (IOException | RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new Engine.JobFailed(engine, job, e);
        }
    }

    /** Sends the job to the cluster at {@code master}, with jquant's jar if {@code ship}, and waits for its end. */
    static <T extends Serializable> void run(Engine engine, String master, boolean ship, String job, List<T> elements, Engine.TaskFactory<T> tasks)
            throws IOException {
        String[] host = master.split(":");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createRemoteEnvironment(host[0], Integer.parseInt(host[1]), new Configuration(),
                ship ? new String[] {jquantJar()} : new String[0]);
        // Streaming mode on a bounded input: every worker is deployed at once and the job ends with the input; batch
        // mode's adaptive scheduler would choose the parallelism itself, and choose one worker for a short list.
        env.setRuntimeMode(RuntimeExecutionMode.STREAMING);
        SingleOutputStreamOperator<Long> indices = env.fromSource(new OneSplitEach(elements.size()), WatermarkStrategy.noWatermarks(), "elements");
        SingleOutputStreamOperator<Long> done = indices.map(new Worker<>(new ArrayList<>(elements), tasks, engine)).returns(Types.LONG).name("work");
        if (engine.workers() > 0) {
            indices.setParallelism(engine.workers());
            done.setParallelism(engine.workers());
        }
        try (CloseableIterator<Long> finished = done.executeAndCollect(job)) {
            finished.forEachRemaining(index -> {});
        } catch (IOException | RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new Engine.JobFailed(engine, job, e);
        }
    }

    /** jquant's own jar, which holds everything a task runs but Flink (the cluster has that). */
    private static String jquantJar() {
        try {
            Path jar = Path.of(FlinkJob.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            if (!Files.isRegularFile(jar)) throw new IllegalStateException("jquant runs from " + jar + ", not a jar: build it (./jquant does) to send it to a cluster");
            return jar.toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A worker: its task made when the map opens, each element (by its index in the list it carries) run on the engine's pool. */
    private static final class Worker<T> extends RichMapFunction<Long, Long> {
        @Serial
        private static final long serialVersionUID = 1L;

        private final ArrayList<T> elements;
        private final Engine.TaskFactory<T> tasks;
        private final Engine engine;
        private transient Engine.Task<T> task;
        private transient WorkerPool pool;

        Worker(ArrayList<T> elements, Engine.TaskFactory<T> tasks, Engine engine) {
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
            Engine.closePool(pool);
            if (task != null) task.close();
        }
    }

    /**
     * The indices 0 … n−1, one split each, handed to a task when it asks for work: a task that is free takes the next
     * element (one sweep pack can take ten times another's time), where one range per task would leave it idle.
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
