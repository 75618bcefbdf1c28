package jquant.cli;

import jquant.core.WorkerPool;
import jquant.distributed.Engine;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * {@code --runner direct|flink} and {@code --flink-master HOST:PORT}: where {@code sweep} and a sharded
 * {@code eval} run their pipeline ({@link Engine}). The engine's classes are loaded only when one runs.
 */
final class RunnerOptions {
    enum Runner { direct, flink }

    @Option(names = "--runner", defaultValue = "direct", paramLabel = "direct|flink",
            description = "Apache Beam's direct runner in this JVM, or its Flink runner on the cluster at --flink-master (default: ${DEFAULT-VALUE}).")
    Runner runner;

    @Option(names = "--flink-master", paramLabel = "<host:port>", description = "The Flink cluster's REST endpoint (JobManager), for --runner flink.")
    String flinkMaster;

    /** Refuses a master without the Flink runner, the Flink runner without one, and a master that is not {@code HOST:PORT}. */
    void check(CommandLine cmd) {
        if (runner == Runner.direct && flinkMaster != null) throw new CommandLine.ParameterException(cmd, "--flink-master applies to --runner flink");
        if (runner == Runner.flink && flinkMaster == null) throw new CommandLine.ParameterException(cmd, "--runner flink needs --flink-master HOST:PORT");
        if (flinkMaster != null && !flinkMaster.matches("[^:\\s]+:\\d{1,5}")) {
            throw new CommandLine.ParameterException(cmd, "--flink-master must be HOST:PORT, got '" + flinkMaster + "'");
        }
    }

    boolean flink() {
        return runner == Runner.flink;
    }

    /**
     * The engine, {@code workers} elements at once (0 on Flink: the cluster's default parallelism), each on the
     * {@code --threads} the command was given (without it, each on its own machine's processors).
     */
    Engine engine(int workers) {
        WorkerPool pool = WorkerPool.current();
        return (flink() ? Engine.flink(flinkMaster, workers) : Engine.direct(workers)).threads(pool == WorkerPool.common() ? 0 : pool.threads());
    }
}
