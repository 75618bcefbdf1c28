package jquant.cli;

import jquant.calibration.allocation.BitAllocation;
import jquant.calibration.CalibrationStats;
import jquant.calibration.CalibrationStatsFile;
import jquant.calibration.allocation.SmoothingChoice;
import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoints;
import jquant.formats.InputFiles;
import jquant.quantize.BitPlan;
import jquant.quantize.BitPlanJson;
import jquant.quantize.Metric;
import jquant.quantize.SmoothingRule;
import jquant.quantize.TensorPlan;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code jquant allocate}: per-output-channel bit widths under an average budget (EdgeFlow Algorithm 1). */
@Command(name = "allocate", description = {"Allocate per-channel bit widths (1..8) to every linear layer under an average bit budget; writes a plan JSON.",
        "Default with --stats from this jquant's calibrate: the best plan measured, one budget over the blocks (model scope), output-weighted, each block matrix "
                + "weighed by its loss sensitivity probed on the stats' sample of the calibration text (as --scope model --output-weighted --sensitivity CALIB.txt). "
                + "Without stats, or with older ones that have no sample: the paper's plan (as --scope tensor)."})
final class AllocateCommand implements Callable<Integer> {

    @Mixin
    ModelArgument model = new ModelArgument();

    @Option(names = "--budget", required = true, paramLabel = "<bits>", converter = BudgetConverter.FileBudget.class,
            description = "Average bits per weight of the planned tensors, in [1, 8]; with --whole-file, of the whole file, in [1, 16].")
    double budget;

    @Mixin
    OutputFile out = new OutputFile();

    @Option(names = "--stats", paramLabel = "<stats>", description = "Calibration stats of this model (jquant calibrate): allocate on the smoothed weights W'.")
    Path stats;

    @Option(names = "--scope", paramLabel = "tensor|model",
            description = "tensor: the budget holds for every tensor (the paper's plan); model: one budget over all weights. "
                    + "Naming the plan (--scope, --metric, --weighted, --output-weighted, --uniform) allocates just as named, without the default's loss probe.")
    BitAllocation.Scope scope;

    @Option(names = "--metric", defaultValue = "approx", paramLabel = "approx|exact",
            description = "approx: the paper's closed-form RE (default); exact: cosine distance on the real grid.")
    Metric metric;

    @Option(names = "--weighted", description = "Weigh channel errors by E[x²] per input channel from calibration (needs --stats).")
    boolean weighted;

    @Option(names = "--output-weighted", description = "Weigh each channel's error by its share of the layer's output energy on the calibration text "
            + "(E[o_i²] ≈ Σ_j W_ij² E[x_j²]; needs --stats): the layer's relative output error instead of the mean relative error of its channels.")
    boolean outputWeighted;

    @Option(names = "--sensitivity", paramLabel = "<text>", description = "Probe the loss sensitivity on this UTF-8 text instead of the stats' sample "
            + "(with a named plan: needs --scope model): each block matrix's error weighed by the KL divergence from the float model when it alone is rounded to 3 bits, "
            + "per unit of the error the allocator predicts for it.")
    Path sensitivity;

    @Option(names = "--sensitivity-tokens", paramLabel = "<N>",
            description = "Tokens the loss probe runs, windows of 256 (default: " + BitAllocation.Sensitivity.DEFAULT_TOKENS + ", or all of a shorter sample of the stats).")
    Integer sensitivityTokens;

    @Option(names = "--whole-file", description = "The budget counts the whole file as llama.cpp's bits per weight do: every byte of the packed tensors "
            + "(channel scales and widths, norms, the embedding and the classifier) × 8 over every weight of the model. The embedding and classifier then "
            + "share the budget with the blocks, each as weightlets at the widths the allocator gives its channels, or float16 if all reached 8 bits and the "
            + "budget pays for it; pack keeps what the plan chose. Needs --stats and model scope (the default's).")
    boolean wholeFile;

    @Option(names = "--uniform", description = "Every channel at the budget, a whole number of bits: plain per-channel quantization, no allocation.")
    boolean uniform;

    @Option(names = "--alpha", defaultValue = "searched", paramLabel = "searched|<α>",
            description = "With --stats: the smoothing α of every group, searched (by calibrate, for this budget; default) or one fixed α in [0, 1] (0: no smoothing).")
    String alpha;

    @Option(names = "--smoothing", defaultValue = "edgeflow", paramLabel = "edgeflow|smoothquant",
            description = "With --stats: how α becomes factors: EdgeFlow's S_I^α (default) or SmoothQuant's S_I^α / max|W|^(1−α) (give it an --alpha; its baseline is 0.5).")
    SmoothingRule smoothing;

    @Mixin
    TokenizerOption tokenizer = new TokenizerOption();

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        BitAllocation.Options options = options();
        new OutputSafety().model(model.path, tokenizer.path).inputs(stats, sensitivity).check(out.path);
        CalibrationStats calibration = stats == null ? null : CalibrationStatsFile.read(stats);
        boolean best = !namesPlan() && (sensitivity != null || calibration != null && calibration.hasProbeTokens());
        if (best) {
            options = bestOptions(options, calibration);
        } else if (sensitivity != null) {
            options = options.sensitivity(textSensitivity(sensitivityTokens == null ? BitAllocation.Sensitivity.DEFAULT_TOKENS : sensitivityTokens));
        } else if (sensitivityTokens != null) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--sensitivity-tokens: no loss probe runs here ("
                    + (namesPlan() ? "a named plan probes only a --sensitivity text" : stats + " has no sample of the calibration text: calibrate again, or give --sensitivity TEXT") + ")");
        }
        if (calibration != null && options.smoothing().alpha() == null) {
            try {
                calibration.alphas(options.alphaBudget());  // searched α for this budget, before the model is opened
            } catch (IllegalArgumentException e) {
                throw new CheckpointException(stats, e.getMessage());
            }
        }
        PrintWriter log = spec.commandLine().getOut();
        if (!namesPlan() && !best) {
            log.println(calibration == null
                    ? "Note: without --stats this is the paper's per-tensor plan; calibrate the model (jquant calibrate) and give --stats for the better default (docs/calibration.md §5)."
                    : "Note: " + stats.getFileName() + " has no sample for the loss probe, so this is the paper's per-tensor plan; calibrate again for the better default (docs/calibration.md §5).");
        }
        BitPlan plan;
        try (Checkpoint c = Checkpoints.open(model.path, tokenizer.path)) {
            if (options.sensitivity() != null) predictProbe(log, c.config().layers(), options.sensitivity().tokens(), options.wholeFile());
            try (Progress bar = new Progress("allocate", BitAllocation.planned(c.config().layers(), options).size(), "tensors")) {
                plan = BitAllocation.allocate(c, calibration, options, (done, total, name) -> bar.stepTo(done));
            }
        }
        BitPlanJson.write(plan, out.path);
        log.printf("Allocated %d tensors of %s: budget %s, achieved %.4f bits per weight (%s%s%s)%n",
                plan.tensors().size(), model.path.getFileName(), budget, plan.averageBits(),
                uniform ? "uniform widths" : options.scope().name().toLowerCase() + " scope, " + options.metric().name().toLowerCase() + " metric",
                calibration == null ? ", raw weights" : ", smoothed weights, " + options.smoothing().describe(),
                (weighted ? ", E[x²]-weighted" : "") + (options.outputWeighted() ? ", output-weighted" : "")
                        + (options.sensitivity() == null ? "" : ", loss sensitivity from " + options.sensitivity().tokens() + " tokens of "
                        + (sensitivity != null ? sensitivity.getFileName() : "the stats' sample")));
        printHistograms(log, plan);
        if (plan.wholeFile() != null) {
            log.printf("Whole file: %,d bytes of tensors over %,d weights, %.4f bits per weight as llama.cpp counts them; token_embd and output %s%n",
                    plan.wholeFile().bytes(), plan.wholeFile().weights(), plan.wholeFile().bitsPerWeight(),
                    plan.wholeFile().float16().isEmpty() ? "as weightlets" : "with " + String.join(" and ", plan.wholeFile().float16()) + " in float16");
        }
        log.printf("Wrote %s%n", out.path);
        log.flush();
        return 0;
    }

    /**
     * The loss probe's work before it starts, in one line: each block matrix of layer l reruns layers l … L−1, so
     * the probe costs about (matrices per layer) · (L + 1) / 2 forward passes of its sample, which on a large model
     * is the longest part of allocate (docs/calibration.md §5).
     */
    private static void predictProbe(PrintWriter log, int layers, int tokens, boolean wholeFile) {
        int matrices = BitAllocation.linears(layers).size() - 1;   // the block matrices, not the classifier
        long passes = Math.round(matrices / (double) layers * (layers + 1) / 2) + (wholeFile ? 1 : 0);   // the embedding reruns every layer
        log.printf("Loss probe: %d block matrices%s, each rounded alone and the model rerun from its layer on %d tokens: about %d "
                + "forward passes, as much work as eval on %,d tokens (--scope model --output-weighted allocates without it)%n",
                matrices, wholeFile ? ", the embedding and the classifier" : "", tokens, passes, passes * tokens);
        log.flush();
    }

    /** Whether the command line names a plan, which then is allocated as named, with no loss probe but a --sensitivity text's. */
    private boolean namesPlan() {
        CommandLine.ParseResult parsed = spec.commandLine().getParseResult();
        for (String name : new String[] {"--scope", "--metric", "--weighted", "--output-weighted", "--uniform"}) {
            if (parsed.hasMatchedOption(name)) return true;
        }
        return false;
    }

    /** The best plan: model scope, output-weighted, probed on the --sensitivity text or else the stats' sample. */
    private BitAllocation.Options bestOptions(BitAllocation.Options named, CalibrationStats calibration) throws java.io.IOException {
        CommandLine cmd = spec.commandLine();
        if (calibration == null) {
            throw new CommandLine.ParameterException(cmd, "--sensitivity without a named plan gives the default, model scope and output-weighted, "
                    + "which needs --stats (or name the plan: --scope model --sensitivity TEXT)");
        }
        if (sensitivity != null) {
            return named.scope(BitAllocation.Scope.MODEL).outputWeighted(true)
                    .sensitivity(textSensitivity(sensitivityTokens == null ? BitAllocation.Sensitivity.DEFAULT_TOKENS : sensitivityTokens));
        }
        int sample = calibration.probeTokens().length;
        if (sensitivityTokens != null && sensitivityTokens > sample) {
            throw new CommandLine.ParameterException(cmd, "--sensitivity-tokens " + sensitivityTokens + " is more than the " + sample
                    + " tokens of the calibration text " + stats + " keeps for the loss probe (give --sensitivity TEXT for more)");
        }
        int tokens = sensitivityTokens != null ? sensitivityTokens : Math.min(BitAllocation.Sensitivity.DEFAULT_TOKENS, sample);
        return BitAllocation.Options.best(named, calibration, tokens);
    }

    private BitAllocation.Sensitivity textSensitivity(int tokens) throws java.io.IOException {
        try {
            return BitAllocation.Sensitivity.ofText(InputFiles.readText(sensitivity), tokens);
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(sensitivity, e.getMessage());
        }
    }

    BitAllocation.Options options() {
        CommandLine cmd = spec.commandLine();
        if ((weighted || outputWeighted) && stats == null) {
            throw new CommandLine.ParameterException(cmd, (weighted ? "--weighted" : "--output-weighted") + " needs --stats (E[x²] comes from calibration)");
        }
        if (sensitivity != null && namesPlan() && (scope != BitAllocation.Scope.MODEL || uniform)) {
            throw new CommandLine.ParameterException(cmd, "--sensitivity weighs tensors against each other: it needs --scope model (and greedy widths)");
        }
        if (sensitivityTokens != null && sensitivityTokens < 2) {
            throw new CommandLine.ParameterException(cmd, "--sensitivity-tokens must be at least 2, not " + sensitivityTokens);
        }
        if (wholeFile && stats == null) throw new CommandLine.ParameterException(cmd, "--whole-file needs --stats (the embedding and classifier are weighed against the blocks on calibration's statistics)");
        if (wholeFile && namesPlan() && (scope != BitAllocation.Scope.MODEL || uniform)) {
            throw new CommandLine.ParameterException(cmd, "--whole-file is one budget over every tensor: it needs --scope model (and greedy widths)");
        }
        if (uniform && budget != Math.rint(budget)) throw new CommandLine.ParameterException(cmd, "--uniform needs a whole number of bits, not --budget " + budget);
        SmoothingChoice choice;
        if (alpha.equalsIgnoreCase("searched")) {
            if (smoothing != SmoothingRule.EDGEFLOW) throw new CommandLine.ParameterException(cmd, "--smoothing smoothquant needs a fixed --alpha (its baseline uses 0.5)");
            choice = SmoothingChoice.searched();
        } else {
            float a;
            try {
                a = Float.parseFloat(alpha);
            } catch (NumberFormatException e) {
                throw new CommandLine.ParameterException(cmd, "--alpha must be 'searched' or a number in [0, 1], not '" + alpha + "'");
            }
            if (!(a >= 0 && a <= 1)) throw new CommandLine.ParameterException(cmd, "--alpha " + alpha + " is outside [0, 1]");
            choice = SmoothingChoice.fixed(smoothing, a);
        }
        if (!wholeFile && !BitPlan.isBudget(budget)) {
            throw new CommandLine.ParameterException(cmd, "--" + BudgetConverter.outside(budget));
        }
        return (wholeFile ? BitAllocation.Options.fileBudget(budget) : BitAllocation.Options.budget(budget)).scope(scope == null ? BitAllocation.Scope.TENSOR : scope).metric(metric).weighted(weighted)
                .outputWeighted(outputWeighted).widths(uniform ? BitAllocation.Widths.UNIFORM : BitAllocation.Widths.GREEDY).smoothing(choice);
    }

    /** Channels at 1..8 bits and the average, summed per tensor kind (attn_q, ffn_down, output, …). */
    static void printHistograms(PrintWriter log, BitPlan plan) {
        Map<String, long[]> byKind = new LinkedHashMap<>();
        for (TensorPlan t : plan.tensors()) {
            String kind = kindOf(t.name());
            long[] h = byKind.computeIfAbsent(kind, k -> new long[10]);
            int[] histogram = t.histogram();
            for (int b = 0; b < 8; b++) h[b] += histogram[b];
            h[8] += t.totalChannelBits() * t.cols();
            h[9] += t.weights();
        }
        log.printf("  %-12s %8s %8s %8s %8s %8s %8s %8s %8s %8s%n", "kind", "1 bit", "2", "3", "4", "5", "6", "7", "8", "avg");
        byKind.forEach((kind, h) -> {
            StringBuilder row = new StringBuilder(String.format("  %-12s", kind));
            for (int b = 0; b < 8; b++) row.append(String.format(" %8d", h[b]));
            row.append(String.format(" %8.4f", (double) h[8] / h[9]));
            log.println(row);
        });
    }

    /** {@code blk.3.attn_q.weight} → {@code attn_q}; {@code output.weight} → {@code output}. */
    private static String kindOf(String name) {
        String s = name.endsWith(".weight") ? name.substring(0, name.length() - ".weight".length()) : name;
        return s.startsWith("blk.") ? s.substring(s.indexOf('.', 4) + 1) : s;
    }
}
