package jquant.cli;

import jquant.calibration.Calibrator;
import jquant.distributed.DistributedSweep;
import jquant.pipeline.QuantizationMethod;
import jquant.reports.EvalResult;
import jquant.reports.QualityReport;
import jquant.pipeline.Sweep;
import jquant.pack.model.ModelPacker;
import jquant.runtime.PackedModelLoader;
import jquant.runtime.Perplexity;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code jquant sweep}: every method at every budget in both run modes, calibrated once, resumable, ending with the report
 * ({@link Sweep}), run as a pipeline on an engine ({@link DistributedSweep}).
 */
@Command(name = "sweep", description = "Calibrate once, then allocate, pack, verify and evaluate every method at every budget in each run mode; "
        + "resumable (done cells are skipped); ends with the report. Runs on an engine: Apache Beam's direct runner in this JVM, or Flink.")
final class SweepCommand implements Callable<Integer> {

    @Mixin
    ModelArgument model = new ModelArgument();

    @Option(names = "--data", required = true, paramLabel = "<text>", description = "UTF-8 evaluation text.")
    Path data;

    @Option(names = "--calibration-data", paramLabel = "<text>", description = "UTF-8 calibration text (default: --data; its first --tokens tokens).")
    Path calibrationData;

    @Option(names = "--budgets", split = ",", defaultValue = "3,4,5,6,8", paramLabel = "<bits,…>", converter = BudgetConverter.class,
            description = "Bit budgets (default: ${DEFAULT-VALUE}).")
    List<Double> budgets;

    @Option(names = "--methods", split = ",", defaultValue = "uniform,smoothquant,edgeflow,ours", paramLabel = "<method,…>",
            description = "uniform (every channel at the budget, no smoothing), smoothquant (α = 0.5, NPU output smoothing), edgeflow "
                    + "(Algorithm 1 allocation, α searched per budget), ours (edgeflow with GPTQ rounding) (default: ${DEFAULT-VALUE}).")
    List<QuantizationMethod> methods;

    @Option(names = "--modes", split = ",", defaultValue = "weight-only,npu", paramLabel = "<mode,…>", converter = ModeOption.Converter.class,
            description = "Run modes to evaluate (default: ${DEFAULT-VALUE}).")
    List<ModeOption> modes;

    @Option(names = "--ctx", defaultValue = "256", description = "Evaluation window in tokens (default: ${DEFAULT-VALUE}).")
    int ctx;

    @Option(names = "--tokens", defaultValue = "8192", paramLabel = "<N>", description = "Calibration tokens (default: ${DEFAULT-VALUE}).")
    int tokens;

    @Option(names = "--keep", defaultValue = "embedding,head", split = ",", paramLabel = "embedding,head|embedding|head|none",
            description = "Tensors kept out of the plan, as pack's --keep (default: ${DEFAULT-VALUE}).")
    List<KeepOption> keep;

    @Option(names = "--keep-type", defaultValue = "auto", paramLabel = "auto|f32|f16|q8", description = "How kept tensors are stored, as pack's --keep-type (default: ${DEFAULT-VALUE}).")
    ModelPacker.KeepType keepType;

    @Option(names = "--compare", split = ",", paramLabel = "<file,…>", description = "Other files of the model (any it opens: a llama.cpp GGUF, "
            + "another tool's quantization) evaluated beside the cells, on the same text, ctx and base, each once as 'jquant eval FILE --base MODEL' "
            + "does, and reported as a series named after the file at its file size.")
    List<Path> compare = new ArrayList<>();

    /** The sweep's folder: run again with the same folder to resume. */
    @Mixin
    OutputFolder out = new OutputFolder();

    @Mixin
    TokenizerOption tokenizer = new TokenizerOption();

    @Mixin
    RunnerOptions runner = new RunnerOptions();

    @Option(names = "--workers", paramLabel = "<n>", description = "Packed files worked on at once (default: 1 with the direct runner, "
            + "2 task managers on a local Flink cluster, the cluster's default parallelism with --flink-master).")
    Integer workers;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        CommandLine cmd = spec.commandLine();
        if (ctx < Perplexity.MIN_CONTEXT) throw new ParameterException(cmd, "--ctx must be at least " + Perplexity.MIN_CONTEXT + " tokens, got " + ctx);
        runner.check(cmd);
        if (workers != null && workers < 1) throw new ParameterException(cmd, "--workers must be at least 1, got " + workers);
        List<PackedModelLoader.Mode> runModes = modes.stream().map(m -> m.mode).toList();
        Calibrator.Options defaults = Calibrator.Options.defaults();
        Sweep.Options options;
        try {
            options = new Sweep.Options(model.path, tokenizer.path, data, calibrationData == null ? data : calibrationData, ctx, budgets, methods,
                    runModes, new Calibrator.Options(tokens, defaults.context(), defaults.sampleTokens(), budgets, false, defaults.seed()),
                    KeepOption.kinds(cmd, keep), keepType, compare, out.path);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(cmd, e.getMessage());
        }
        OutputSafety safety = new OutputSafety().model(model.path, tokenizer.path).inputs(data, calibrationData);
        for (Path file : compare) safety.model(file, null);
        safety.checkFolder(out.path);
        PrintWriter log = spec.commandLine().getOut();
        Progress[] bar = new Progress[1];
        QualityReport report = DistributedSweep.run(options, runner.engine(workers), new Sweep.Listener() {
            @Override
            public void calibrating(long done, long total, String stage) {
                if (bar[0] == null) bar[0] = new Progress("calibrate", 0, "");
                bar[0].stepTo(done, total);
                bar[0].detail(stage);
            }

            @Override
            public void working(Sweep.Cell cell, String step) {}

            @Override
            public void redoing(Path file, String reason) {
                log.printf("%s is made again: %s%n", file, reason);
                log.flush();
            }

            @Override
            public void cellDone(Sweep.Outcome outcome, int done, int total) {
                if (bar[0] != null) {
                    bar[0].close();
                    bar[0] = null;
                }
                EvalResult r = outcome.result();
                if (outcome.failed()) {
                    log.printf("[%d/%d] %-28s FAILED: %s%n", done, total, outcome.cell().label(), outcome.error());
                } else {
                    log.printf("[%d/%d] %-28s PPL %.4f ± %.4f  mean KLD %.6f  top-1 %.4f  %,d bytes%s%n", done, total, outcome.cell().label(), r.perplexity(),
                            r.stderr(), r.meanKl(), r.top1(), r.fileBytes(), outcome.resumed() ? "  (done before)" : String.format("  (eval %.0f s)", r.seconds()));
                }
                log.flush();
            }
        }, !Progress.quiet);
        log.println();
        log.print(report.markdown());
        log.printf("%nWrote %s%n", out.path.resolve("report"));
        log.flush();
        if (!report.failures().isEmpty()) {
            throw new IllegalStateException(out.path.resolve("report") + ": " + report.failures().size() + " of " + Sweep.cells(options).size()
                    + " cells failed, each with its error in the report; run again to retry them");
        }
        return 0;
    }
}
