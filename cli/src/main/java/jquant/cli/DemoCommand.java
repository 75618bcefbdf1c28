package jquant.cli;

import jquant.formats.ModelConfig;
import jquant.formats.Vocabulary;
import jquant.formats.llama2c.Llama2cWriter;
import jquant.formats.synthetic.SyntheticLlama;
import jquant.formats.synthetic.SyntheticVocabulary;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code jquant demo}: the built-in example. Generates a small Llama-shaped checkpoint (seeded, dims
 * multiples of 128, a few outlier channels) with a tokenizer and a text, then runs the pipeline's
 * commands on it, printing each command line as it goes so a user can re-run any step.
 */
@Command(name = "demo", description = "Generate a small example model into a folder and run the jquant pipeline on it.")
final class DemoCommand implements Callable<Integer> {
    static final ModelConfig DEMO_CONFIG = new ModelConfig(256, 768, 2, 4, 2, 512, 256, 10000f, 1e-5f, false);

    @Option(names = "--out", paramLabel = "<dir>", defaultValue = "jquant-demo", description = "Folder to write into (default: ${DEFAULT-VALUE}).")
    Path out;

    @Option(names = "--seed", defaultValue = "42", description = "Seed for the generated weights (default: ${DEFAULT-VALUE}).")
    long seed;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        PrintWriter log = spec.commandLine().getOut();
        Files.createDirectories(out);
        String text = demoText();
        Path textFile = out.resolve("story.txt");
        Files.writeString(textFile, text, StandardCharsets.UTF_8);
        Vocabulary vocab = SyntheticVocabulary.build(text, DEMO_CONFIG.vocabSize());
        SyntheticLlama model = new SyntheticLlama(DEMO_CONFIG, seed);
        Path modelFile = out.resolve("model.bin");
        Llama2cWriter.writeTokenizer(out.resolve("tokenizer.bin"), vocab);
        Llama2cWriter.writeCheckpoint(modelFile, DEMO_CONFIG, model::weights);
        log.printf("Generated %s (seed %d) with tokenizer.bin and story.txt%n%n", modelFile, seed);
        step(log, "inspect", modelFile.toString());
        step(log, "run", modelFile.toString(), "-p", "Once upon a time", "-n", "24");
        step(log, "eval", modelFile.toString(), "--data", textFile.toString(), "--ctx", "128", "--json", out.resolve("eval.json").toString());
        Path stats = out.resolve("stats.gguf");
        step(log, "calibrate", modelFile.toString(), "--data", textFile.toString(), "--out", stats.toString());
        Path plan = out.resolve("plan.json"), packed = out.resolve("model.jqw");
        step(log, "allocate", modelFile.toString(), "--budget", "5", "--stats", stats.toString(), "--out", plan.toString());
        step(log, "pack", modelFile.toString(), "--plan", plan.toString(), "--stats", stats.toString(), "--out", packed.toString());
        step(log, "verify", packed.toString(), "--source", modelFile.toString(), "--stats", stats.toString());
        step(log, "inspect", packed.toString());
        for (String mode : new String[] {"weight-only", "npu"}) {
            step(log, "eval", packed.toString(), "--mode", mode, "--base", modelFile.toString(), "--data", textFile.toString(), "--ctx", "128",
                    "--json", out.resolve("eval-" + mode + ".json").toString());
        }
        Path ternary = out.resolve("model-ternary.gguf");
        step(log, "ternarize", modelFile.toString(), "--out", ternary.toString(), "--type", "t2p");
        step(log, "eval", ternary.toString(), "--base", modelFile.toString(), "--data", textFile.toString(), "--ctx", "128",
                "--json", out.resolve("eval-ternary.json").toString());
        step(log, "report", out.resolve("eval.json").toString(), out.resolve("eval-weight-only.json").toString(),
                out.resolve("eval-npu.json").toString(), out.resolve("eval-ternary.json").toString(),
                "--title", "jquant demo: fp32, 5-bit weightlets (weight-only, NPU W5A8), ternary T2P", "--out", out.resolve("report").toString());
        return 0;
    }

    /** Runs one jquant command as a user would type it, echoing it first. */
    private int step(PrintWriter log, String... args) {
        log.println("$ jquant " + String.join(" ", java.util.Arrays.stream(args).map(DemoCommand::quote).toList()));
        log.flush();
        CommandLine root = spec.root().commandLine();
        int code = Main.commandLine().setOut(root.getOut()).setErr(root.getErr()).execute(args);
        log.println();
        if (code != 0) throw new CommandLine.ExecutionException(spec.commandLine(), "demo step 'jquant " + String.join(" ", args) + "' failed with exit code " + code);
        return code;
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
