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

import java.io.IOException;
import java.io.Serial;
import java.io.Serializable;
import java.util.List;

/** {@link Engine#forEach} on Apache Beam's direct runner: a {@code Create} of the elements, a {@code Reshuffle}, a {@code ParDo}. */
final class DirectRunnerJob {
    private DirectRunnerJob() {}

    static <T extends Serializable> void run(Engine engine, String job, List<T> elements, Class<T> type, Engine.TaskFactory<T> tasks) {
        DirectOptions options = PipelineOptionsFactory.as(DirectOptions.class);
        options.setRunner(DirectRunner.class);
        options.setJobName(job);
        options.setTargetParallelism(engine.workers());
        Pipeline pipeline = Pipeline.create(options);
        pipeline.apply("elements", Create.of(elements).withCoder(SerializableCoder.of(type)))
                // Lets every worker take elements: without it a runner may keep a source's elements on the worker that made them.
                .apply("spread", Reshuffle.viaRandomKey())
                .apply("work", ParDo.of(new Worker<>(tasks, engine)));
        PipelineResult.State state = pipeline.run().waitUntilFinish();
        if (state != PipelineResult.State.DONE) throw new Engine.JobFailed(engine, job, new IllegalStateException("it ended " + state));
    }

    /** A worker: its task made at set-up, each element run on the engine's pool, the task closed at tear-down. */
    private static final class Worker<T> extends DoFn<T, Void> {
        @Serial
        private static final long serialVersionUID = 1L;

        private final Engine.TaskFactory<T> tasks;
        private final Engine engine;
        private transient Engine.Task<T> task;
        private transient WorkerPool pool;

        Worker(Engine.TaskFactory<T> tasks, Engine engine) {
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
            Engine.closePool(pool);
            if (task != null) task.close();
        }
    }
}
