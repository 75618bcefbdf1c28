package jquant.cli;

import jquant.runtime.kernels.VectorWidth;
import jquant.core.Memory;
import jquant.core.WorkerPool;
import jquant.runtime.nativelib.KernelSource;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
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
    @Mixin
    ThreadsOption threads = new ThreadsOption();

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
     * builds a command's model by reflection, which for all sixteen was a noticeable part of every
     * start. Without a subcommand's name (top-level help or version, an unknown name, {@code help}) all
     * are built, so help lists them and an unknown name gets picocli's usual error.
     */
    public static CommandLine commandLine(String... args) {
        CommandLine cli = new CommandLine(new Main());
        Class<?> named = subcommandNamed(args);
        for (Class<?> c : SUBCOMMANDS) if (named == null || c == named) cli.addSubcommand(c);
        cli.setCaseInsensitiveEnumValuesAllowed(true);
        cli.setExecutionStrategy(parsed -> {
            Progress.quiet = hasFlag(parsed, "--quiet", "-q");
            WorkerPool pool = threads(parsed);
            try {
                return pool.call(() -> new CommandLine.RunLast().execute(parsed));
            } catch (OutOfMemoryError e) {
                // An Error passes picocli's handlers; the contract is still one line, never a stack trace.
                CommandLine cmd = parsed.asCommandLineList().getLast();
                if (hasFlag(parsed, "--verbose")) e.printStackTrace(cmd.getErr());
                cmd.getErr().println("jquant: " + ErrorMessage.of(e, cmd));
                cmd.getErr().flush();
                return 1;
            } finally {
                if (pool != WorkerPool.common()) pool.close();
            }
        });
        cli.setParameterExceptionHandler((ex, rejected) -> {
            CommandLine cmd = ex.getCommandLine();
            cmd.getErr().println("jquant: " + ErrorMessage.withoutClassNames(ex.getMessage()) + nearest(ex)
                    + " (see '" + cmd.getCommandSpec().qualifiedName() + " --help')");
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
     * The one worker pool every stage of this run takes its threads from ({@link WorkerPool#current()}):
     * a pool of {@code --threads} threads (from whichever command level it was given at), or the default
     * pool; prints the kernel choice under {@code --verbose}.
     */
    private static WorkerPool threads(CommandLine.ParseResult parsed) {
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
        if (threads != null && threads < 1) {
            throw new CommandLine.ParameterException(parsed.asCommandLineList().getLast(), "--threads must be at least 1, got " + threads);
        }
        WorkerPool pool = threads == null || threads == Runtime.getRuntime().availableProcessors() ? WorkerPool.common() : new WorkerPool(threads);
        if (verbose) {
            parsed.commandSpec().commandLine().getErr().printf("jquant: %s, %d threads, heap %s; %s%n", VectorWidth.describe(), pool.threads(),
                    Memory.format(Memory.heap()), KernelSource.describe());
        }
        return pool;
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

    /**
     * For an unknown option or subcommand, the nearest known name: {@code ; did you mean --ctx?}. Nearest by
     * edit distance with transpositions (a typo is mostly one or two keys), within a third of the name.
     */
    private static String nearest(CommandLine.ParameterException ex) {
        if (!(ex instanceof CommandLine.UnmatchedArgumentException unmatched) || unmatched.getUnmatched().isEmpty()) return "";
        String typed = unmatched.getUnmatched().getFirst();
        if (typed.contains("=")) typed = typed.substring(0, typed.indexOf('='));
        CommandLine.Model.CommandSpec spec = ex.getCommandLine().getCommandSpec();
        List<String> known = typed.startsWith("-")
                ? spec.options().stream().filter(o -> !o.hidden()).flatMap(o -> java.util.Arrays.stream(o.names())).toList()
                : List.copyOf(spec.subcommands().keySet());
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String name : known) {
            int d = editDistance(typed, name);
            if (d < bestDistance) {
                best = name;
                bestDistance = d;
            }
        }
        return best != null && bestDistance <= Math.max(1, typed.length() / 3) ? "; did you mean " + best + "?" : "";
    }

    /** Optimal string alignment distance: insertions, deletions, substitutions and adjacent transpositions. */
    static int editDistance(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) d[i][0] = i;
        for (int j = 0; j <= b.length(); j++) d[0][j] = j;
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
                    d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
                }
            }
        }
        return d[a.length()][b.length()];
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
