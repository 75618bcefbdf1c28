package jquant.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.IntStream;
import jquant.bench.AllocatorBench;
import jquant.bench.DecodeBench;
import jquant.bench.PipelineMemoryBench;
import jquant.bench.KernelFamilyBench;
import jquant.bench.PrefillBench;
import jquant.bench.RuntimeBench;
import jquant.bench.TernaryBench;
import jquant.bench.TtftBench;
import jquant.bench.UnpackBench;
import jquant.formats.DType;
import jquant.formats.ModelConfig;
import jquant.formats.Vocabulary;
import jquant.formats.gguf.GgufConverter;
import jquant.formats.llama2c.Llama2cTokenizerReader;
import jquant.formats.synthetic.SyntheticCheckpoint;
import jquant.formats.synthetic.SyntheticHfFolder;
import jquant.formats.synthetic.SyntheticLlama;
import jquant.reports.Evaluation;
import jquant.runtime.KernelChoice;
import jquant.runtime.LayerLoader;
import jquant.runtime.LoadedModel;
import jquant.runtime.nativelib.KernelSource;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code jquant bench}: whole-model benchmarks and the benchmark model they run on. Each prints its
 * figures as ratios against a baseline it measures in the same run (memory bandwidth, memcpy, the
 * scalar twin, the stock layout), because these machines are shared and noisy. The JMH kernel
 * micro-benchmarks run from {@code bench/target/benchmarks.jar}.
 */
@Command(name = "bench", description = "Benchmarks; each prints ratios against a baseline measured in the same run.",
        subcommands = {BenchCommand.Model.class, BenchCommand.Decode.class, BenchCommand.Prefill.class, BenchCommand.Ttft.class, BenchCommand.Memory.class,
                BenchCommand.Runtime.class, BenchCommand.Unpack.class, BenchCommand.Allocator.class, BenchCommand.Ternary.class,
                BenchCommand.Kernels.class})
final class BenchCommand {

    /** Model shapes {@code bench model} generates. */
    enum Shape {
        /** TinyLlama-1.1B's blocks with a 512-token vocabulary: 971M weights, the figures in MACHINE.md. */
        tinyllama_1_1b(new ModelConfig(2048, 5632, 22, 32, 4, 512, 2048, 10000f, 1e-5f, false)),
        /** Two blocks of the same width: a quick check of the commands. */
        tinyllama_2l(new ModelConfig(2048, 5632, 2, 32, 4, 512, 2048, 10000f, 1e-5f, false)),
        /** Llama-3-8B's blocks (the size EdgeFlow reports on) with the same vocabulary: 6.98B weights, 14 GB in float16. */
        llama3_8b(new ModelConfig(4096, 14336, 32, 32, 8, 512, 2048, 500000f, 1e-5f, false)),
        /** Two of Llama-3-70B's blocks (dim 8192, hidden 28672, 64/8 heads): a 70B model's per-layer cost, 3.4 GB in float16. */
        llama3_70b_2l(new ModelConfig(8192, 28672, 2, 64, 8, 512, 2048, 500000f, 1e-5f, false));

        final ModelConfig config;

        Shape(ModelConfig config) { this.config = config; }

        /** The name users type: {@code tinyllama-1.1b}. */
        String label() {
            return name().replace('_', '-').replace("1-1b", "1.1b");
        }

        static final class Converter implements CommandLine.ITypeConverter<Shape> {
            @Override
            public Shape convert(String name) {
                for (Shape s : values()) if (s.label().equalsIgnoreCase(name)) return s;
                throw new CommandLine.TypeConversionException("'" + name + "' is not one of "
                        + String.join(", ", java.util.Arrays.stream(values()).map(Shape::label).toList()));
            }
        }
    }

    @Command(name = "memory", description = {"Peak resident memory and wall time of each step of the best method's pipeline (calibrate "
            + "--second-moments, allocate, pack --rounding gptq, verify, eval), each a fresh jquant process, on each model given. Given a model "
            + "and its first layers (tinyllama-1.1b and tinyllama-2l), it prints how much more each step takes for the whole model, "
            + "against one layer's weights in float32: a step whose memory is bounded by one layer stays below it."})
    static final class Memory implements Callable<Integer> {
        @Parameters(paramLabel = "<model>", arity = "1..*", description = "Models to run the pipeline on (the whole model first, then its slice).")
        List<Path> models;

        @Option(names = "--data", required = true, paramLabel = "<text>", description = "Calibration and evaluation text.")
        Path data;

        @Option(names = "--tokens", defaultValue = "512", description = "Calibration tokens (default: ${DEFAULT-VALUE}).")
        int tokens;

        @Option(names = "--budget", defaultValue = "4", description = "Bit budget (default: ${DEFAULT-VALUE}).")
        double budget;

        @Option(names = "--out", required = true, paramLabel = "<dir>", description = "Folder for the stats, plans and packed files.")
        Path out;

        @Spec
        CommandSpec command;

        @Override
        public Integer call() throws Exception {
            if (tokens < 2) throw usage(command, "--tokens must be at least 2, got " + tokens);
            List<jquant.formats.ModelConfig> configs = new ArrayList<>();
            for (Path m : models) {
                try (jquant.formats.Checkpoint c = jquant.formats.Checkpoints.open(m)) {
                    configs.add(c.config());
                }
            }
            new OutputSafety().inputs(models.toArray(Path[]::new)).inputs(data).checkFolder(out);
            // Each step through the launcher when there is one, so it gets the JVM flags that command gets.
            List<String> java = new ArrayList<>();
            String launcher = System.getenv("JQUANT_LAUNCHER");
            if (launcher != null && Files.isExecutable(Path.of(launcher))) {
                java.add(launcher);
            } else {
                java.add(ProcessHandle.current().info().command().orElse("java"));
                java.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
                java.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName()));
            }
            PrintStream o = System.out;
            o.printf("bench memory: %d calibration tokens, budget %s, heap %s%n", tokens, budget, jquant.core.Memory.format(jquant.core.Memory.heap()));
            List<PipelineMemoryBench.Result> results = PipelineMemoryBench.run(java, models, data, tokens, budget, out, o);
            if (models.size() > 1) {
                jquant.formats.ModelConfig c = configs.getFirst();
                long layer = 4L * c.layerWeights();
                o.printf("%nmore than %s (%d layers) per step, against one layer's weights in float32 (%,d kB):%n", models.get(1).getFileName(),
                        configs.get(1).layers(), layer / 1024);
                int steps = PipelineMemoryBench.STEPS.size();
                for (int s = 0; s < steps; s++) {
                    PipelineMemoryBench.Result whole = results.get(s), slice = results.get(steps + s);
                    long more = whole.peakKb() - slice.peakKb();
                    String live = whole.liveKb() < 0 || slice.liveKb() < 0 ? "live heap: no collection in one of them"
                            : String.format(Locale.ROOT, "live heap %,d kB, %.2f of a layer: %s", whole.liveKb() - slice.liveKb(),
                                    (whole.liveKb() - slice.liveKb()) * 1024.0 / layer, (whole.liveKb() - slice.liveKb()) * 1024 < layer ? "bounded" : "GROWS");
                    o.printf(Locale.ROOT, "  %-10s peak RSS %,d kB, %.2f of a layer: %s; %s%n", PipelineMemoryBench.STEPS.get(s), more, more * 1024.0 / layer,
                            more * 1024 < layer ? "bounded" : "GROWS", live);
                }
            }
            return 0;
        }
    }

    @Command(name = "model", description = {"Write the benchmark model: a seeded Llama of the given shape with a few outlier "
            + "channels, its matrices in float16, as model-f16.gguf and as a Hugging Face folder hf/, with the tok512 vocabulary "
            + "(stories260K's) and TinyStories text beside it, so anyone can rerun the figures."})
    static final class Model implements Callable<Integer> {
        @Mixin
        OutputFolder out = new OutputFolder();

        @Option(names = "--shape", defaultValue = "tinyllama-1.1b", converter = Shape.Converter.class,
                description = "tinyllama-1.1b (dim 2048, hidden 5632, 22 layers, 32/4 heads, vocab 512), tinyllama-2l (its first two "
                        + "layers), llama3-8b (dim 4096, hidden 14336, 32 layers, 32/8 heads, vocab 512; "
                        + "14 GB in f16, generated in memory: about 18 GB resident) or llama3-70b-2l (two layers of dim 8192, hidden 28672, "
                        + "64/8 heads, vocab 512; 3.4 GB in f16) (default: ${DEFAULT-VALUE}).")
        Shape shape;

        @Option(names = "--seed", defaultValue = "1", description = "Seed of the weights (default: ${DEFAULT-VALUE}).")
        long seed;

        @Option(names = "--type", defaultValue = "f16", converter = MatrixType.class, paramLabel = "f16|bf16|f32",
                description = "Type of the matrices (default: ${DEFAULT-VALUE}).")
        DType type;

        @Override
        public Integer call() throws Exception {
            Files.createDirectories(out.path);
            Path tokenizer = copyResource("tok512.bin"), text = copyResource("tinystories-eval.txt");
            Vocabulary vocabulary = Llama2cTokenizerReader.read(tokenizer);
            Path file = out.path.resolve("model-" + type.name().toLowerCase() + ".gguf");
            long t0 = System.nanoTime();
            Path hf = out.path.resolve("hf");
            try (SyntheticCheckpoint c = new SyntheticCheckpoint(file, new SyntheticLlama(shape.config, seed), type, vocabulary)) {
                GgufConverter.convert(c, GgufConverter.Target.valueOf(type.name().toLowerCase()), file, (name, shape, from, to) -> {});
                SyntheticHfFolder.write(c, hf);
            }
            Files.copy(copyResource("tok512.model"), hf.resolve("tokenizer.model"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            System.out.printf("%s and %s: %s, seed %d, %,d bytes, written in %.1f s (with %s and %s)%n", file, hf, shape.label(),
                    seed, Files.size(file), (System.nanoTime() - t0) / 1e9, tokenizer.getFileName(), text.getFileName());
            return 0;
        }

        private Path copyResource(String name) throws IOException {
            Path target = out.path.resolve(name);
            try (InputStream in = BenchCommand.class.getResourceAsStream("demo/stories260K/" + name)) {
                if (in == null) throw new IOException("the jquant jar lacks its bundled " + name);
                Files.copy(in, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
            return target;
        }
    }

    static final class MatrixType implements CommandLine.ITypeConverter<DType> {
        @Override
        public DType convert(String name) {
            for (DType t : new DType[] {DType.F16, DType.BF16, DType.F32}) if (t.name().equalsIgnoreCase(name)) return t;
            throw new CommandLine.TypeConversionException("'" + name + "' is not one of f16, bf16, f32");
        }
    }

    /** A bad option value: a usage error (exit 2), named with the command that was given it. */
    static CommandLine.ParameterException usage(CommandSpec command, String message) {
        return new CommandLine.ParameterException(command.commandLine(), message);
    }

    /** Options of the benches that run a model. */
    static final class RunOptions {
        @Mixin
        ModelArgument model = new ModelArgument();

        @Option(names = "--thread-counts", defaultValue = "1,2", split = ",", paramLabel = "<n,…>",
                description = "Thread counts to measure, each with its own memory probe (default: ${DEFAULT-VALUE}).")
        int[] threadCounts;

        @Mixin
        ModelOptions options = new ModelOptions();

        @Spec(Spec.Target.MIXEE)
        CommandSpec command;

        /** A whole-model bench, given the model's tokenizer and loaders that open it on given kernels and threads. */
        @FunctionalInterface
        interface Bench {
            void run(jquant.runtime.Tokenizer tokenizer, Loaders loaders) throws Exception;
        }

        /** The loader of the model on a layout of kernels. */
        @FunctionalInterface
        interface Loaders {
            DecodeBench.ModelLoader on(KernelChoice kernels);
        }

        /**
         * Runs {@code bench}; a loader opens the model once per call on the compute it is given, every
         * layer loaded before any timing (the bench closes each when its thread count is done).
         */
        void measure(Bench bench) throws Exception {
            for (int t : threadCounts) if (t < 1) throw usage(command, "--thread-counts must be at least 1, got " + t);
            jquant.runtime.Tokenizer tokenizer;
            // Open for its tokenizer only, then closed: held open, its pages would stay resident beside every timed load.
            try (LoadedModel vocabulary = LoadedModel.open(model.path, options.tokenizer.path, options.mode.mode, options.kernels)) {
                tokenizer = vocabulary.tokenizer();
                options.noteWithoutCopies(vocabulary);
            }
            bench.run(tokenizer, kernels -> compute ->
                    LoadedModel.open(model.path, options.tokenizer.path, options.mode.mode, kernels, compute, LayerLoader.Policy.EAGER));
        }
    }

    @Command(name = "decode", description = "Decode ms/token and weight bytes read per token ÷ time, against a memory-read probe measured in the same run.")
    static final class Decode implements Callable<Integer> {
        @Mixin
        RunOptions run = new RunOptions();

        @Option(names = "--tokens", defaultValue = "32", description = "Timed decode steps (default: ${DEFAULT-VALUE}).")
        int tokens;

        @Option(names = "--warmup", defaultValue = "8", description = "Untimed decode steps before the timed ones; a first session decodes the same positions, and up to 256 more until the JIT compiler is idle, before both (default: ${DEFAULT-VALUE}).")
        int warmup;

        @Option(names = "--against", converter = LayoutConverter.class, paramLabel = "auto|stored|t2p|float",
                description = "Also decode on this layout of kernels (--kernels' layouts; the implementation is the process's), a second load "
                        + "of the model resident beside the first, the two taking turns token by token; prints its ms/token and the "
                        + "speed of --kernels as a multiple of it.")
        KernelChoice against;

        @Option(names = "--depth", paramLabel = "<positions>",
                description = "Positions of context before the decode steps, as llama-bench's -d: a prompt of this many tokens (the "
                        + "sample sentence over and over) run as one batch (default: the sentence once, about 16 tokens).")
        Integer depth;

        @Override
        public Integer call() throws Exception {
            if (tokens < 1 || warmup < 0) throw usage(run.command, "--tokens must be ≥ 1 and --warmup ≥ 0, got " + tokens + " and " + warmup);
            if (depth != null && depth < 1) throw usage(run.command, "--depth must be ≥ 1, got " + depth);
            run.measure((tokenizer, loaders) -> {
                int[] prompt = tokenizer.encode("Once upon a time, there was a little girl named Lily.");
                if (depth != null) {
                    int[] sentence = prompt;
                    prompt = IntStream.range(0, depth).map(i -> sentence[i % sentence.length]).toArray();
                }
                System.out.printf("decode: %s, prompt %d tokens, %d timed steps after %d, in a second session%s%n", run.model.path, prompt.length, tokens,
                        warmup, against == null ? "" : ", token by token against a second load on " + name(against) + " (both resident)");
                if (against == null) DecodeBench.run(loaders.on(run.options.kernels), prompt, warmup, tokens, run.threadCounts, System.out);
                else DecodeBench.compare(loaders.on(run.options.kernels), loaders.on(against), name(against), prompt, warmup, tokens, run.threadCounts, System.out);
            });
            return 0;
        }

        private static String name(KernelChoice layout) {
            return layout.name().toLowerCase(Locale.ROOT);
        }

        /** An {@code --against} value: a layout of {@code --kernels}; an implementation is a usage error (it is the process's). */
        static final class LayoutConverter implements CommandLine.ITypeConverter<KernelChoice> {
            @Override
            public KernelChoice convert(String value) {
                for (KernelChoice k : KernelChoice.values()) if (k.name().equalsIgnoreCase(value.trim())) return k;
                throw new CommandLine.TypeConversionException("'" + value + "' is not one of auto, stored, t2p, float");
            }
        }
    }

    @Command(name = "prefill", description = "Prefill tokens/s on windows of a text, as jquant eval (llama-perplexity) computes them.")
    static final class Prefill implements Callable<Integer> {
        @Mixin
        RunOptions run = new RunOptions();

        @Option(names = "--data", required = true, paramLabel = "<text>", description = "UTF-8 text file.")
        Path data;

        @Option(names = "--ctx", defaultValue = "256", description = "Window length (default: ${DEFAULT-VALUE}).")
        int ctx;

        @Option(names = "--windows", defaultValue = "16", description = "Timed windows (default: ${DEFAULT-VALUE}).")
        int windows;

        @Override
        public Integer call() throws Exception {
            if (ctx < 2 || windows < 1) throw usage(run.command, "--ctx must be ≥ 2 and --windows ≥ 1, got " + ctx + " and " + windows);
            run.measure((tokenizer, loaders) -> {
                int[] tokens = tokenizer.encode(Evaluation.readText(data));
                System.out.printf("prefill: %s on %s, %d windows of %d tokens%n", run.model.path, data, windows, ctx);
                PrefillBench.run(loaders.on(run.options.kernels), tokens, tokenizer.bos(), ctx, windows, run.threadCounts, System.out);
            });
            return 0;
        }
    }

    @Command(name = "ttft", description = "Time to first token of jquant run in a fresh process, cold and warm page cache, layer-pipelined against eager loading.")
    static final class Ttft implements Callable<Integer> {
        @Mixin
        ModelArgument model = new ModelArgument();

        @Option(names = "--data", required = true, paramLabel = "<text>", description = "Text whose start is the prompt.")
        Path data;

        @Option(names = "--prompt-tokens", defaultValue = "256", description = "Prompt length (default: ${DEFAULT-VALUE}).")
        int promptTokens;

        @Option(names = "--repeats", defaultValue = "3", description = "Runs per case; the median is reported (default: ${DEFAULT-VALUE}).")
        int repeats;

        @Mixin
        ModelOptions options = new ModelOptions();

        @Spec
        CommandSpec command;

        @Override
        public Integer call() throws Exception {
            if (promptTokens < 1 || repeats < 1) {
                throw usage(command, "--prompt-tokens and --repeats must be ≥ 1, got " + promptTokens + " and " + repeats);
            }
            String prompt;
            try (LoadedModel m = LoadedModel.open(model.path, options.tokenizer.path, options.mode.mode, options.kernels)) {
                int[] ids = m.tokenizer().encode(Evaluation.readText(data));
                if (ids.length < promptTokens) throw new IllegalArgumentException(data + " has only " + ids.length + " tokens");
                int skipBos = m.tokenizer().addsBos() ? 1 : 0;
                prompt = m.tokenizer().decode(Arrays.copyOfRange(ids, skipBos, promptTokens));
            }
            List<String> command = new ArrayList<>();
            command.add(ProcessHandle.current().info().command().orElse("java"));
            command.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
            command.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName()));
            List<String> modelArgs = new ArrayList<>(List.of("--mode", options.mode.name().replace('_', '-'), "--kernels",
                    options.kernels.name() + "," + KernelSource.chosen().name()));
            if (options.tokenizer.path != null) modelArgs.addAll(List.of("--tokenizer", options.tokenizer.path.toString()));
            PrintStream out = System.out;
            out.printf("ttft: %s, prompt of %d tokens, %d runs per case (median)%n", model.path, promptTokens, repeats);
            TtftBench.run(command, model.path, prompt, modelArgs, repeats, out);
            return 0;
        }
    }

    /** The bench module's programs, which take their own arguments. */
    abstract static class Program implements Callable<Integer> {
        @Parameters(paramLabel = "<arg>", description = "Arguments passed to the program.")
        List<String> args = new ArrayList<>();

        abstract void main(String[] args) throws Exception;

        @Override
        public Integer call() throws Exception {
            main(args.toArray(String[]::new));
            return 0;
        }
    }

    @Command(name = "runtime", description = "[stories260K.bin] memory bandwidth, f32 matvec, eval tokens/s (vector vs scalar)")
    static final class Runtime extends Program {
        @Override void main(String[] a) throws Exception { RuntimeBench.main(a); }
    }

    @Command(name = "unpack", description = "[channels length reps] weightlet unpack GB/s vs memcpy, vs the Figure-13 baselines")
    static final class Unpack extends Program {
        @Override void main(String[] a) throws Exception { UnpackBench.main(a); }
    }

    @Command(name = "allocator", description = "RE tables and greedy allocation of a 4096×14336 tensor")
    static final class Allocator extends Program {
        @Override void main(String[] a) throws Exception { AllocatorBench.main(a); }
    }

    @Command(name = "ternary", description = "Ternary decode on TinyLlama-1.1B shapes (GB/s vs a memory probe) and prefill GMAC/s: T2P, TQ2_0, PQ2_0, PTQ1_0")
    static final class Ternary implements Callable<Integer> {
        @Option(names = "--quick", description = "Four layers instead of 22, fewer repetitions.")
        boolean quick;

        @Override
        public Integer call() {
            TernaryBench.main(quick ? new String[] {"--quick"} : new String[0]);
            return 0;
        }
    }

    @Command(name = "kernels", description = "Each ternary format's kernel families (Java, native per instruction set) on the same bytes, alternating in one JVM: decode and prefill")
    static final class Kernels implements Callable<Integer> {
        @Option(names = "--quick", description = "Four layers instead of 22, fewer rounds.")
        boolean quick;

        @Override
        public Integer call() {
            KernelFamilyBench.main(quick ? new String[] {"--quick"} : new String[0]);
            return 0;
        }
    }
}
