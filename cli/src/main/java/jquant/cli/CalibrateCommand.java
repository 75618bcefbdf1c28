package jquant.cli;

import jquant.calibration.CalibrationStats;
import jquant.calibration.CalibrationStatsFile;
import jquant.calibration.Calibrator;
import jquant.calibration.GroupStats;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.InputFiles;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code jquant calibrate}: activation statistics and smoothing α per group, from the fp32 model on calibration text. */
@Command(name = "calibrate", description = "Run the fp32 model on calibration text; record S_I, E[x²], S_O per linear layer and choose the smoothing α per group.")
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

    @Option(names = "--reference-bits", paramLabel = "<B>", defaultValue = "5", description = "Weight width the α search quantizes at (default: ${DEFAULT-VALUE}).")
    int referenceBits;

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
            options = new Calibrator.Options(tokens, context, sample, referenceBits, seed);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        new OutputSafety().model(model, tokenizer).inputs(data).check(out);
        String text = InputFiles.readText(data);
        CalibrationStats stats;
        try (Checkpoint c = Checkpoints.open(model, tokenizer)) {
            stats = run(c, text, options);
        }
        CalibrationStatsFile.write(stats, out);
        PrintWriter log = spec.commandLine().getOut();
        log.printf("Calibrated %s on %d tokens of %s (α search: %d sampled rows per group, %d-bit weights)%n",
                model.getFileName(), stats.tokens(), data.getFileName(), stats.sampleTokens(), stats.referenceBits());
        printAlphas(log, stats);
        log.printf("Wrote %s%n", out);
        log.flush();
        return 0;
    }

    private static CalibrationStats run(Checkpoint c, String text, Calibrator.Options options) {
        Progress[] bar = new Progress[1];
        String[] stage = {""};
        try {
            return Calibrator.calibrate(c, text, options, (s, done, total) -> {
                if (!s.equals(stage[0])) {
                    if (bar[0] != null) bar[0].close();
                    bar[0] = new Progress(s.equals("forward") ? "calibrate" : "alpha search", total, s.equals("forward") ? "tok" : "groups");
                    stage[0] = s;
                }
                bar[0].stepTo(done);
            });
        } finally {
            if (bar[0] != null) bar[0].close();
        }
    }

    static void printAlphas(PrintWriter log, CalibrationStats stats) {
        log.printf("  %-20s %6s %10s %14s %14s%n", "group", "alpha", "max |x|", "error(alpha)", "error(0)");
        for (GroupStats g : stats.groups()) {
            log.printf("  %-20s %6.2f %10.4g %14.4e %14.4e%n", g.name(), g.alpha(), g.inputRange(), g.alphaError(), g.unsmoothedError());
        }
    }
}
