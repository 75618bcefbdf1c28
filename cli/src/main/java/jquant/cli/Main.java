package jquant.cli;

import jquant.runtime.kernels.VectorWidth;
import jquant.runtime.nativelib.KernelSource;
import jquant.runtime.kernels.WorkerPool;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Properties;
import java.util.Set;

/**
 * The {@code jquant} command. Exit codes: 0 success, 1 bad input or a failed check (one line on
 * stderr naming the file and the problem; the stack trace only with {@code --verbose}), 2 usage error.
 */
@Command(name = "jquant", mixinStandardHelpOptions = true, scope = CommandLine.ScopeType.INHERIT, versionProvider = Main.Version.class,
        description = "Offline LLM quantization and repacking: calibrate, allocate bits, pack, verify and evaluate.")
public final class Main {

    /** The subcommands, in the order help lists them. */
    private static final List<Class<?>> SUBCOMMANDS = List.of(InspectCommand.class, TokenizeCommand.class, RunCommand.class, EvalCommand.class,
            CalibrateCommand.class, AllocateCommand.class, PackCommand.class, VerifyCommand.class, SweepCommand.class, ConvertCommand.class,
            TernarizeCommand.class, RepackCommand.class, ReportCommand.class, BenchCommand.class, DemoCommand.class, CommandLine.HelpCommand.class);
    /** The top-level options that take a value, skipped when looking for the subcommand's name. */
    private static final Set<String> OPTIONS_WITH_VALUE = Set.of("--threads");

    /** Read by the exception handler from the original arguments; declared here so every command accepts it. */
    @Option(names = "--verbose", scope = CommandLine.ScopeType.INHERIT,
            description = "Print stack traces on errors, and the vector width and thread count in use.")
    boolean verbose;

    /** Read in {@link #commandLine()}'s execution strategy, before any command computes. */
    @Option(names = "--threads", paramLabel = "<n>", scope = CommandLine.ScopeType.INHERIT,
            description = "Threads for the kernels (default: available processors).")
    Integer threads;

    /** Read before a command runs, from the original arguments; declared here so every command accepts it. */
    @Option(names = {"-q", "--quiet"}, scope = CommandLine.ScopeType.INHERIT, description = "No progress bars or per-tensor lines: only results and errors.")
    boolean quiet;

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** Runs the CLI and returns its exit code. */
    public static int run(String... args) {
        return commandLine(args).execute(args);
    }

    /**
     * The configured command line for {@code args}. Exit codes: a usage error (an unknown option, a
     * missing or malformed value, a value out of its range) 2; an error while running 1. Either way one
     * line on stderr, {@code jquant: <file>: <reason>} when a file is at fault.
     *
     * <p>Only the subcommand {@code args} name is built when they name one (not {@code help}): picocli
     * builds a command's model by reflection, and all sixteen took 320–420 ms of every start on the
     * 2-vCPU machine, one 190–280 ms. Without a subcommand's name (top-level help or version, an
     * unknown name, {@code help}) all are built, so help lists them and an unknown name gets picocli's
     * usual error.
     */
    public static CommandLine commandLine(String... args) {
        CommandLine cli = new CommandLine(new Main());
        Class<?> named = subcommandNamed(args);
        for (Class<?> c : SUBCOMMANDS) if (named == null || c == named) cli.addSubcommand(c);
        cli.setCaseInsensitiveEnumValuesAllowed(true);
        cli.setExecutionStrategy(parsed -> {
            Progress.quiet = hasFlag(parsed, "--quiet", "-q");
            configure(parsed);
            return new CommandLine.RunLast().execute(parsed);
        });
        cli.setParameterExceptionHandler((ex, rejected) -> {
            CommandLine cmd = ex.getCommandLine();
            cmd.getErr().println("jquant: " + ErrorMessage.withoutClassNames(ex.getMessage()) + " (see '" + cmd.getCommandSpec().qualifiedName() + " --help')");
            cmd.getErr().flush();
            return cmd.getCommandSpec().exitCodeOnInvalidInput();
        });
        cli.setExecutionExceptionHandler((ex, cmd, parsed) -> {
            if (hasFlag(parsed, "--verbose")) ex.printStackTrace(cmd.getErr());
            cmd.getErr().println("jquant: " + ErrorMessage.of(ex, cmd));
            cmd.getErr().flush();
            return 1;
        });
        return cli;
    }

    /**
     * Applies {@code --threads} (from whichever command level it was given at) to the one worker
     * pool before anything runs, and prints the kernel choice under {@code --verbose}.
     */
    private static void configure(CommandLine.ParseResult parsed) {
        Integer threads = null;
        boolean verbose = false;
        String kernels = null;
        for (CommandLine.ParseResult p = parsed; p != null; p = p.subcommand()) {
            if (p.hasMatchedOption("--threads")) threads = p.matchedOptionValue("--threads", null);
            verbose |= p.hasMatchedOption("--verbose");
            if (p.hasMatchedOption("--kernels")) kernels = p.matchedOption("--kernels").stringValues().getFirst();
        }
        if (kernels != null) {
            try {
                KernelSource.use(ModelOptions.Kernels.parse(kernels).source());
            } catch (IllegalStateException e) {
                throw new CommandLine.ExecutionException(parsed.asCommandLineList().getLast(), e.getMessage(), e);
            }
        }
        if (threads != null) {
            if (threads < 1) {
                throw new CommandLine.ParameterException(parsed.asCommandLineList().getLast(), "--threads must be at least 1, got " + threads);
            }
            WorkerPool.useThreads(threads);
        }
        if (verbose) {
            parsed.commandSpec().commandLine().getErr().printf("jquant: %s, %d threads; %s%n", VectorWidth.describe(), WorkerPool.commonThreads(),
                    KernelSource.describe());
        }
    }

    /** The subcommand the first argument that is not a top-level option names, or null (none, {@code help}, or not a subcommand's name). */
    private static Class<?> subcommandNamed(String... args) {
        for (int i = 0; i < args.length; i++) {
            if (OPTIONS_WITH_VALUE.contains(args[i])) i++;
            else if (!args[i].startsWith("-")) {
                for (Class<?> c : SUBCOMMANDS) {
                    Command command = c.getAnnotation(Command.class);
                    if (c != CommandLine.HelpCommand.class && (command.name().equals(args[i]) || List.of(command.aliases()).contains(args[i]))) return c;
                }
                return null;
            }
        }
        return null;
    }

    private static boolean hasFlag(CommandLine.ParseResult parsed, String... names) {
        for (String arg : parsed.originalArgs()) {
            if (arg.equals("--")) return false;
            for (String n : names) if (arg.equals(n)) return true;
        }
        return false;
    }

    static String oneLine(String message) {
        return message == null ? "" : message.strip().replaceAll("\\s*\\R\\s*", " ");
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() throws IOException {
            Properties p = new Properties();
            try (InputStream in = Main.class.getResourceAsStream("version.properties")) {
                if (in != null) p.load(in);
            }
            return new String[]{"jquant " + p.getProperty("version", "unknown") + " (Java " + Runtime.version() + ")"};
        }
    }
}
