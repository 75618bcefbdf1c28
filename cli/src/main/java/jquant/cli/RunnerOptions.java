package jquant.cli;

import jquant.core.WorkerPool;
import jquant.distributed.Engine;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * {@code --runner direct|flink} and {@code --flink-master HOST:PORT}: where {@code sweep} and a sharded
 * {@code eval} run their work ({@link Engine}). The engine's classes are loaded only when one runs.
 */
final class RunnerOptions {
    enum Runner { direct, flink }

    /** Task managers of the local Flink cluster {@code --runner flink} starts without {@code --flink-master}. */
    static final int LOCAL_FLINK_WORKERS = 2;

    @Option(names = "--runner", defaultValue = "direct", paramLabel = "direct|flink",
            description = "Apache Beam's direct runner in this JVM, or Flink: the cluster at --flink-master, or without it a local cluster "
                    + "started in this JVM (default: ${DEFAULT-VALUE}).")
    Runner runner;

    @Option(names = "--flink-master", paramLabel = "<host:port>", description = "A Flink cluster's REST endpoint (its JobManager), for --runner flink.")
    String flinkMaster;

    /** Refuses a master without the Flink runner and a master that is not {@code HOST:PORT}. */
    void check(CommandLine cmd) {
        if (runner == Runner.direct && flinkMaster != null) throw new CommandLine.ParameterException(cmd, "--flink-master applies to --runner flink");
        if (flinkMaster != null && !flinkMaster.matches("[^:\\s]+:\\d{1,5}")) {
            throw new CommandLine.ParameterException(cmd, "--flink-master must be HOST:PORT, got '" + flinkMaster + "'");
        }
    }

    boolean flink() {
        return runner == Runner.flink;
    }

    /** Whether the work runs on a cluster elsewhere, whose workers reach only what is on a shared path. */
    boolean remote() {
        return flinkMaster != null;
    }

    /**
     * The engine, {@code workers} elements at once (null: one at a time on the direct runner, {@value #LOCAL_FLINK_WORKERS}
     * task managers on a local Flink cluster, the cluster's default parallelism on another), each on the
     * {@code --threads} the command was given (without it, each on its own machine's processors).
     */
    Engine engine(Integer workers) {
        WorkerPool pool = WorkerPool.current();
        Engine engine = !flink() ? Engine.direct(workers == null ? 1 : workers)
                : remote() ? Engine.flink(flinkMaster, workers == null ? 0 : workers)
                : Engine.localFlink(workers == null ? LOCAL_FLINK_WORKERS : workers);
        return engine.threads(pool == WorkerPool.common() ? 0 : pool.threads());
    }
}
