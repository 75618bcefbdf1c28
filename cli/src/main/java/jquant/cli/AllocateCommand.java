package jquant.cli;

import jquant.calibration.BitAllocation;
import jquant.calibration.CalibrationStats;
import jquant.calibration.CalibrationStatsFile;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.quantize.BitPlan;
import jquant.quantize.BitPlanJson;
import jquant.quantize.Metric;
import jquant.quantize.QuantLimits;
import jquant.quantize.TensorPlan;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code jquant allocate}: per-output-channel bit widths under an average budget (EdgeFlow Algorithm 1). */
@Command(name = "allocate", description = "Allocate per-channel bit widths (1..8) to every linear layer under an average bit budget; writes a plan JSON.")
final class AllocateCommand implements Callable<Integer> {

    @Parameters(paramLabel = "<model>", description = "llama2.c .bin, GGUF file, or Hugging Face folder / .safetensors")
    Path model;

    @Option(names = "--budget", required = true, paramLabel = "<bits>", description = "Average bits per weight, in [1, 8].")
    double budget;

    @Option(names = "--out", required = true, paramLabel = "<plan.json>", description = "Plan file to write.")
    Path out;

    @Option(names = "--stats", paramLabel = "<stats>", description = "Calibration stats of this model (jquant calibrate): allocate on the smoothed weights W'.")
    Path stats;

    @Option(names = "--scope", defaultValue = "tensor", paramLabel = "tensor|model",
            description = "tensor: the budget holds for every tensor (default); model: one budget over all weights.")
    String scope;

    @Option(names = "--metric", defaultValue = "approx", paramLabel = "approx|exact",
            description = "approx: the paper's closed-form RE (default); exact: cosine distance on the real grid.")
    String metric;

    @Option(names = "--weighted", description = "Weigh channel errors by E[x²] per input channel from calibration (needs --stats).")
    boolean weighted;

    @Option(names = "--tokenizer", paramLabel = "<file>", description = "llama2.c tokenizer.bin for a .bin model (default: the one beside it)")
    Path tokenizer;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        BitAllocation.Options options = options();
        new OutputSafety().model(model, tokenizer).inputs(stats).check(out);
        CalibrationStats calibration = stats == null ? null : CalibrationStatsFile.read(stats);
        BitPlan plan;
        try (Checkpoint c = Checkpoints.open(model, tokenizer);
             Progress bar = new Progress("allocate", BitAllocation.linears(c.config().layers()).size(), "tensors")) {
            plan = BitAllocation.allocate(c, calibration, options, (done, total) -> bar.stepTo(done));
        }
        BitPlanJson.write(plan, out);
        PrintWriter log = spec.commandLine().getOut();
        log.printf("Allocated %d tensors of %s: budget %s, achieved %.4f bits per weight (%s scope, %s metric%s%s)%n",
                plan.tensors().size(), model.getFileName(), budget, plan.averageBits(), options.scope().name().toLowerCase(),
                options.metric().name().toLowerCase(), calibration == null ? ", raw weights" : ", smoothed weights", weighted ? ", E[x²]-weighted" : "");
        printHistograms(log, plan);
        log.printf("Wrote %s%n", out);
        log.flush();
        return 0;
    }

    private BitAllocation.Options options() {
        CommandLine cmd = spec.commandLine();
        if (!QuantLimits.isBudget(budget)) {
            throw new CommandLine.ParameterException(cmd, "--budget " + budget + " is outside " + QuantLimits.BUDGET_RANGE + " bits per weight");
        }
        BitAllocation.Scope s = switch (scope.toLowerCase(java.util.Locale.ROOT)) {
            case "tensor" -> BitAllocation.Scope.TENSOR;
            case "model" -> BitAllocation.Scope.MODEL;
            default -> throw new CommandLine.ParameterException(cmd, "--scope must be 'tensor' or 'model', not '" + scope + "'");
        };
        Metric m = switch (metric.toLowerCase(java.util.Locale.ROOT)) {
            case "approx" -> Metric.APPROX;
            case "exact" -> Metric.EXACT;
            default -> throw new CommandLine.ParameterException(cmd, "--metric must be 'approx' or 'exact', not '" + metric + "'");
        };
        if (weighted && stats == null) throw new CommandLine.ParameterException(cmd, "--weighted needs --stats (E[x²] comes from calibration)");
        return new BitAllocation.Options(budget, s, m, weighted);
    }

    /** Channels at 1..8 bits and the average, summed per tensor kind (attn_q, ffn_down, output, …). */
    static void printHistograms(PrintWriter log, BitPlan plan) {
        Map<String, long[]> byKind = new LinkedHashMap<>();
        Map<String, Double> alphas = new LinkedHashMap<>();
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
