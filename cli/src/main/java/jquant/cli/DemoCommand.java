package jquant.cli;

import jquant.formats.AtomicOutput;
import jquant.formats.ModelConfig;
import jquant.formats.Vocabulary;
import jquant.formats.llama2c.Llama2cWriter;
import jquant.formats.synthetic.SyntheticLlama;
import jquant.formats.synthetic.SyntheticVocabulary;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.Callable;

/**
 * {@code jquant demo}: the built-in example. Copies stories260K (a real 260K-parameter Llama trained on
 * TinyStories, shipped in the repository with two pieces of held-out TinyStories text) into a folder
 * and runs the pipeline's commands on it — calibrate, allocate, pack, verify, inspect, eval in both
 * run modes, report — printing each command line as it goes so a user can re-run any step. With
 * {@code --generated} it writes a seeded random Llama-shaped model instead (dims multiples of 128, so
 * the ternary T2P layout applies) and also ternarizes it.
 */
@Command(name = "demo", description = "Run the jquant pipeline on stories260K (shipped with jquant), or on a generated model, in a folder.")
final class DemoCommand implements Callable<Integer> {
    static final ModelConfig DEMO_CONFIG = new ModelConfig(256, 768, 2, 4, 2, 512, 256, 10000f, 1e-5f, false);
    /** Where the shipped model and text are on the class path (models/stories260K in the repository). */
    private static final String STORIES = "demo/stories260K/";

    @Option(names = "--out", paramLabel = "<dir>", defaultValue = "jquant-demo", description = "Folder to write into (default: ${DEFAULT-VALUE}).")
    Path out;

    @Option(names = "--generated", description = "Generate a seeded random model (no real quality figures) instead of using stories260K.")
    boolean generated;

    @Option(names = "--seed", paramLabel = "<seed>", description = "Seed for the --generated weights (default: 42).")
    Long seed;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (seed != null && !generated) throw new CommandLine.ParameterException(spec.commandLine(), "--seed applies to --generated");
        Files.createDirectories(out);
        return generated ? generatedModel(seed == null ? 42 : seed) : stories260K();
    }

    /** stories260K: calibrated on one piece of text, evaluated on the other, fp32 against 5-bit weightlets in both run modes. */
    private int stories260K() throws Exception {
        PrintWriter log = spec.commandLine().getOut();
        Path model = copy("stories260K.bin"), calibration = copy("tinystories-calibration.txt"), text = copy("tinystories-eval.txt");
        copy("tok512.bin");
        log.printf("Copied stories260K (MIT, Andrej Karpathy's llama2.c / tinyllamas) with tok512.bin and TinyStories text into %s%n%n", out);
        step(log, "inspect", model.toString());
        step(log, "run", model.toString(), "-p", "Once upon a time", "-n", "48");
        Path fp32 = out.resolve("eval-fp32.json");
        step(log, "eval", model.toString(), "--data", text.toString(), "--out", fp32.toString());
        Path stats = out.resolve("stats.gguf"), plan = out.resolve("plan.json"), packed = out.resolve("stories260K.jqw");
        step(log, "calibrate", model.toString(), "--data", calibration.toString(), "--second-moments", "--out", stats.toString());
        step(log, "allocate", model.toString(), "--budget", "5", "--stats", stats.toString(), "--out", plan.toString());
        step(log, "pack", model.toString(), "--plan", plan.toString(), "--stats", stats.toString(), "--rounding", "gptq", "--out", packed.toString());
        step(log, "verify", packed.toString(), "--source", model.toString(), "--stats", stats.toString());
        step(log, "inspect", packed.toString());
        for (String mode : new String[] {"weight-only", "npu"}) {
            step(log, "eval", packed.toString(), "--mode", mode, "--base", model.toString(), "--data", text.toString(),
                    "--out", out.resolve("eval-" + mode + ".json").toString());
        }
        step(log, "report", fp32.toString(), out.resolve("eval-weight-only.json").toString(), out.resolve("eval-npu.json").toString(),
                "--title", "jquant demo: stories260K fp32 and 5-bit weightlets (weight-only, NPU W5A8) on held-out TinyStories",
                "--out", out.resolve("report").toString());
        return 0;
    }

    /** Copies a shipped file into the output folder, under its own name. */
    private Path copy(String name) throws IOException {
        Path target = out.resolve(name);
        try (InputStream in = DemoCommand.class.getResourceAsStream(STORIES + name)) {
            if (in == null) throw new IllegalStateException("the jquant jar has no " + STORIES + name + " (rebuild it from a full clone)");
            AtomicOutput.write(target, in::transferTo);
        }
        return target;
    }

    /** The seeded random model, with a tokenizer and a short story written for it; the ternary T2P path too. */
    private int generatedModel(long seed) throws Exception {
        PrintWriter log = spec.commandLine().getOut();
        String text = demoText();
        Path textFile = out.resolve("story.txt");
        AtomicOutput.write(textFile, o -> o.write(text.getBytes(StandardCharsets.UTF_8)));
        Vocabulary vocab = SyntheticVocabulary.build(text, DEMO_CONFIG.vocabSize());
        SyntheticLlama model = new SyntheticLlama(DEMO_CONFIG, seed);
        Path modelFile = out.resolve("model.bin");
        Llama2cWriter.writeTokenizer(out.resolve("tokenizer.bin"), vocab);
        Llama2cWriter.writeCheckpoint(modelFile, DEMO_CONFIG, model::weights);
        log.printf("Generated %s (seed %d) with tokenizer.bin and story.txt%n%n", modelFile, seed);
        step(log, "inspect", modelFile.toString());
        step(log, "run", modelFile.toString(), "-p", "Once upon a time", "-n", "24");
        step(log, "eval", modelFile.toString(), "--data", textFile.toString(), "--ctx", "128", "--out", out.resolve("eval.json").toString());
        Path stats = out.resolve("stats.gguf");
        step(log, "calibrate", modelFile.toString(), "--data", textFile.toString(), "--second-moments", "--out", stats.toString());
        Path plan = out.resolve("plan.json"), packed = out.resolve("model.jqw");
        step(log, "allocate", modelFile.toString(), "--budget", "5", "--stats", stats.toString(), "--out", plan.toString());
        step(log, "pack", modelFile.toString(), "--plan", plan.toString(), "--stats", stats.toString(), "--rounding", "gptq", "--out", packed.toString());
        step(log, "verify", packed.toString(), "--source", modelFile.toString(), "--stats", stats.toString());
        step(log, "inspect", packed.toString());
        for (String mode : new String[] {"weight-only", "npu"}) {
            step(log, "eval", packed.toString(), "--mode", mode, "--base", modelFile.toString(), "--data", textFile.toString(), "--ctx", "128",
                    "--out", out.resolve("eval-" + mode + ".json").toString());
        }
        Path ternary = out.resolve("model-ternary.gguf");
        step(log, "ternarize", modelFile.toString(), "--out", ternary.toString(), "--type", "t2p");
        step(log, "eval", ternary.toString(), "--base", modelFile.toString(), "--data", textFile.toString(), "--ctx", "128",
                "--out", out.resolve("eval-ternary.json").toString());
        step(log, "report", out.resolve("eval.json").toString(), out.resolve("eval-weight-only.json").toString(),
                out.resolve("eval-npu.json").toString(), out.resolve("eval-ternary.json").toString(),
                "--title", "jquant demo: fp32, 5-bit weightlets (weight-only, NPU W5A8), ternary T2P", "--out", out.resolve("report").toString());
        return 0;
    }

    /** Runs one jquant command as a user would type it, echoing it first. */
    private void step(PrintWriter log, String... args) {
        log.println("$ jquant " + String.join(" ", Arrays.stream(args).map(DemoCommand::quote).toList()));
        log.flush();
        CommandLine root = spec.root().commandLine();
        int code = Main.commandLine(args).setOut(root.getOut()).setErr(root.getErr()).execute(args);
        log.println();
        if (code != 0) throw new CommandLine.ExecutionException(spec.commandLine(), "demo step 'jquant " + String.join(" ", args) + "' failed with exit code " + code);
    }

    private static String quote(String arg) {
        return arg.matches("[\\w./:=-]+") ? arg : "'" + arg.replace("'", "'\\''") + "'";
    }

    static String demoText() throws IOException {
        try (InputStream in = DemoCommand.class.getResourceAsStream("demo/story.txt")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
