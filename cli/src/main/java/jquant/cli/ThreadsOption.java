package jquant.cli;

import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * {@code --threads}: a mixin of the top command whose option every subcommand inherits. {@link Main}
 * reads it from the parse result, whichever command level it was given at, before any command computes.
 */
final class ThreadsOption {
    @Option(names = "--threads", paramLabel = "<n>", scope = CommandLine.ScopeType.INHERIT,
            description = "Threads for every stage: calibration, allocation, packing, verification and the kernels (default: available processors).")
    Integer threads;
}
