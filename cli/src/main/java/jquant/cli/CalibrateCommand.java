package jquant.cli;

import jquant.calibration.CalibrationStats;
import jquant.calibration.Calibrator;
import jquant.calibration.GroupStats;
import jquant.core.Memory;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.InputFiles;
import jquant.quantize.BitPlan;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code jquant calibrate}: activation statistics and smoothing α per group and budget, from the fp32 model on calibration text. */
@Command(name = "calibrate", description = "Run the fp32 model on calibration text; record S_I, E[x²], S_O per linear layer (and E[x·xᵀ] with --second-moments) "
        + "and choose the smoothing α per group for every budget.")
final class CalibrateCommand implements Callable<Integer> {

    @Parameters(paramLabel = "<model>", description = "llama2.c .bin, GGUF file, or Hugging Face folder / .safetensors")
    Path model;

    @Option(names = "--data", required = true, paramLabel = "<text>", description = "UTF-8 calibration text.")
    Path data;

    @Option(names = "--out", required = true, paramLabel = "<stats>", description = "Stats file to write (GGUF, general.architecture = jquant-calibration).")
    Path out;

    @Option(names = "--tokens", paramLabel = "<N>", defaultValue = "8192", description = "Calibration tokens to run at most (default: ${DEFAULT-VALUE}).")
    int tokens;

    @Option(names = "--context", paramLabel = "<N>", defaultValue = "512", description = "Tokens per window, capped at the model's context (default: ${DEFAULT-VALUE}).")
    int context;

    @Option(names = "--sample", paramLabel = "<N>", defaultValue = "512", description = "Input rows per group sampled for the α search (default: ${DEFAULT-VALUE}).")
    int sample;

    @Option(names = "--budgets", split = ",", paramLabel = "<bits,…>", defaultValue = "3,4,5,6,8", converter = BudgetConverter.class,
            description = "Bit budgets to search α for; allocate --budget must be one of them unless it fixes α (default: ${DEFAULT-VALUE}).")
    List<Double> budgets;

    @Option(names = "--second-moments", description = "Also record E[x·xᵀ] of every group's input (its upper triangle, D(D+1)/2 floats each), which pack --rounding gptq needs.")
    boolean secondMoments;

    @Option(names = "--memory", paramLabel = "<size>", description = "Heap the run may use, such as 12G (default: the JVM's, set by the launcher); "
            + "the hidden states beyond it go to a scratch file beside the output.")
    String memory;

    @Option(names = "--seed", defaultValue = "0", description = "Seed of the row sample (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--tokenizer", paramLabel = "<file>", description = "llama2.c tokenizer.bin for a .bin model (default: the one beside it)")
    Path tokenizer;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        Calibrator.Options options;
        try {
            long bound = memory == null ? Memory.heap() : Memory.parse(memory);
            if (bound > Memory.heap()) {
                throw new IllegalArgumentException("--memory " + memory + " is more than the JVM's heap (" + Memory.format(Memory.heap())
                        + "): give the JVM more with " + Memory.JAVA_OPTS + "=-Xmx…");
            }
            options = new Calibrator.Options(tokens, context, sample, budgets, secondMoments, seed, bound);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), (memory != null && e.getMessage().startsWith("'") ? "--memory: " : "") + e.getMessage());
        }
        new OutputSafety().model(model, tokenizer).inputs(data).check(out);
        String text = InputFiles.readText(data);
        CalibrationStats stats;
        try (Checkpoint c = Checkpoints.open(model, tokenizer)) {
            stats = run(c, text, options, out);
        }
        PrintWriter log = spec.commandLine().getOut();
        log.printf("Calibrated %s on %d tokens of %s (α search: %d sampled rows per group, budgets %s%s)%n",
                model.getFileName(), stats.tokens(), data.getFileName(), stats.sampleTokens(), CalibrationStats.budgetList(stats.budgets()),
                stats.hasSecondMoments() ? ", E[x·xᵀ] recorded" : "");
        printAlphas(log, stats);
        log.printf("Wrote %s%n", out);
        log.flush();
        return 0;
    }

    /** One bar over the layers (a thousand steps each), the layer and the token rate beside it, with the library's ETA. */
    private static CalibrationStats run(Checkpoint c, String text, Calibrator.Options options, Path out) throws java.io.IOException {
        try (Progress bar = new Progress("calibrate", 0, "")) {
            return Calibrator.calibrate(c, text, options, out, (done, total, stage) -> {
                bar.stepTo(done, total);
                bar.detail(stage);
            });
        }
    }

    /** α per group and budget, how much of the unsmoothed error the chosen α and clip leave (error / error(0)), and the clip. */
    static void printAlphas(PrintWriter log, CalibrationStats stats) {
        StringBuilder header = new StringBuilder(String.format("  %-20s %10s", "group", "max |x|"));
        for (double b : stats.budgets()) header.append(String.format(" %21s", "B=" + CalibrationStats.budgetList(List.of(b)) + ":  α   left  clip"));
        log.println(header);
        for (GroupStats g : stats.groups()) {
            StringBuilder row = new StringBuilder(String.format("  %-20s %10.4g", g.name(), g.inputRange()));
            for (GroupStats.SearchedAlpha a : g.alphas()) {
                row.append(String.format(" %8.3f %6.3f %5.2f", a.alpha(), a.unsmoothedError() > 0 ? a.error() / a.unsmoothedError() : 1, a.inputClip()));
            }
            log.println(row);
        }
        log.println("  (left: the quantized matmul's error at α and clip over its error without smoothing, on the sampled calibration rows;");
        log.println("   clip: the static input range as a fraction of max |x / f|)");
    }
}
