package jquant.cli;

import jquant.calibration.ModelFingerprint;
import jquant.calibration.StatsSmoothing;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.TensorKind;
import jquant.formats.jqw.JqwFile;
import jquant.pack.model.ModelPacker;
import jquant.pack.model.PackedFileReport;
import jquant.pack.model.SmoothedSource;
import jquant.quantize.BitPlan;
import jquant.quantize.BitPlanJson;
import jquant.quantize.Rounding;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Spec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * {@code jquant pack}: a checkpoint and a bit plan (and, with {@code --stats}, its calibration's
 * smoothing) into a jquant packed model file ({@code docs/jqw-format.md}), streamed tensor by tensor,
 * written to a temp file and renamed.
 */
@Command(name = "pack", description = "Quantize a model to its bit plan and write a jquant packed model file (.jqw).")
final class PackCommand implements Callable<Integer> {

    @Mixin
    ModelArgument model = new ModelArgument();

    // An initial value, not a defaultValue: picocli would apply that over what the old name's setter set.
    @Option(names = "--type", paramLabel = "weightlet|t2p|pq2_0|ptq1_0|tq2_0",
            description = "weightlet (default): EdgeFlow .jqw from --plan; a ternary layout: the same as 'jquant repack --type' (a ternary model in, a ternary GGUF out, no plan).")
    String format = "weightlet";

    @Option(names = "--format", hidden = true, paramLabel = "<type>")
    void oldFormat(String type) {
        format = type;
        OldOptionName.used(spec, "--format", "--type");
    }

    @Option(names = "--plan", paramLabel = "<plan.json>", description = "Bit plan (jquant allocate's plan.json); required for --type weightlet.")
    Path plan;

    @Mixin
    OutputFile out = new OutputFile();

    @Option(names = "--keep", defaultValue = "embedding,head", split = ",", paramLabel = "embedding,head|embedding|head|none",
            description = "Tensors kept out of the plan, stored as --keep-type (default: ${DEFAULT-VALUE}: the embedding is a lookup, "
                    + "not an NPU matmul, and the classifier's logits are the most error-sensitive output). With none they follow the plan. A whole-file plan "
                    + "(allocate --whole-file) chose them itself: then neither --keep nor --keep-type applies.")
    List<KeepOption> keep;

    @Option(names = "--keep-type", defaultValue = "auto", paramLabel = "auto|f32|f16|q8",
            description = "How kept tensors are stored (default: ${DEFAULT-VALUE}: q8 where that is smaller than f16, else f16). Size of a kept "
                    + "vocab×dim matrix: f32 4 bytes a weight, f16 2 (Llama-3-8B's embedding and head: 4.2 GB in f32, 2.1 GB in f16), q8 1 "
                    + "(8-bit weightlets, one float32 scale per row, run weight-only; rows padded to whole groups of 128 weights). On "
                    + "tinystories-6M at budget 3 q8 makes the file a tenth smaller than f16 at the same KL divergence.")
    ModelPacker.KeepType keepType;

    @Option(names = "--stats", paramLabel = "<stats>",
            description = "Calibration stats of this model (jquant calibrate): pack the smoothed weights W' with folded norms and output factors, "
                    + "and the static int8 activation scales --mode npu needs. The plan must have been allocated with the same stats.")
    Path stats;

    @Option(names = "--rounding", defaultValue = "rtn", paramLabel = "rtn|gptq|gptq-columns", converter = RoundingLabel.class,
            description = "rtn: every weight to its nearest level (default); gptq: GPTQ's error-compensated rounding on the calibration inputs' "
                    + "E[x·xᵀ] (needs --stats from calibrate --second-moments), same widths and grids, the columns in order of decreasing "
                    + "E[x²] (act-order); gptq-columns: the same in the columns' own order.")
    Rounding rounding;

    /** {@code --rounding} by its label ({@link Rounding#of}). */
    static final class RoundingLabel implements CommandLine.ITypeConverter<Rounding> {
        @Override
        public Rounding convert(String value) {
            return Rounding.of(value);
        }
    }

    @Mixin
    TokenizerOption tokenizer = new TokenizerOption();

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (!format.equalsIgnoreCase("weightlet")) return repackTernary();
        if (plan == null) throw new ParameterException(spec.commandLine(), "--type weightlet needs --plan (make one with jquant allocate)");
        if (rounding.compensated() && stats == null) throw new ParameterException(spec.commandLine(), "--rounding " + rounding.label() + " needs --stats (E[x·xᵀ] comes from calibration)");
        Set<TensorKind> kept = KeepOption.kinds(spec.commandLine(), keep);
        new OutputSafety().model(model.path, tokenizer.path).inputs(plan, stats).check(out.path);
        BitPlan bitPlan = BitPlanJson.read(plan);
        ModelPacker.KeepType keepAs = keepType;
        if (bitPlan.wholeFile() != null) {
            CommandLine.ParseResult given = spec.commandLine().getParseResult();
            if (given.hasMatchedOption("--keep") || given.hasMatchedOption("--keep-type")) {
                throw new ParameterException(spec.commandLine(), plan + " counts the whole file (allocate --whole-file) and chose the embedding's "
                        + "and classifier's encodings: --keep and --keep-type do not apply");
            }
            kept = ModelPacker.wholeFileKeep(bitPlan);
            keepAs = ModelPacker.KeepType.f16;
        }
        try (Checkpoint c = Checkpoints.open(model.path, tokenizer.path)) {
            ModelFingerprint.requireSameModel(bitPlan, plan, c);
            SmoothedSource smoothing = stats == null ? null : StatsSmoothing.of(c, stats, bitPlan);
            try (Progress bar = new Progress("pack", 0, "tensors")) {
                ModelPacker.pack(c, new ModelPacker.Options(bitPlan, kept, keepAs, smoothing, rounding), out.path, (done, total, name) -> bar.stepTo(done, total));
            }
        }
        spec.commandLine().getOut().printf("wrote %s (%,d bytes, plan average %.3f bits, %s rounding%s)%n", out.path, Files.size(out.path),
                bitPlan.averageBits(), rounding.label(), stats == null ? ", raw weights, no activation scales: --mode npu unavailable" : ", smoothed with " + stats.getFileName() + ", static activation scales");
        if (bitPlan.wholeFile() != null) {
            long tensorBytes;
            try (JqwFile f = JqwFile.open(out.path)) {
                tensorBytes = PackedFileReport.describe(f).tensors().stream().mapToLong(PackedFileReport.TensorRow::bytes).sum();
            }
            spec.commandLine().getOut().printf("whole file: %,d bytes of tensors over %,d weights, %.4f bits per weight as llama.cpp counts them (budget %s)%n",
                    tensorBytes, bitPlan.wholeFile().weights(), 8.0 * tensorBytes / bitPlan.wholeFile().weights(), bitPlan.budget());
        }
        spec.commandLine().getOut().flush();
        return 0;
    }

    /** {@code pack --type t2p} and the other ternary layouts: a lossless repack, exactly as {@code jquant repack}. */
    private int repackTernary() throws Exception {
        CommandLine.ParseResult given = spec.commandLine().getParseResult();
        for (String option : List.of("--plan", "--stats", "--keep", "--keep-type", "--rounding")) {
            if (given.hasMatchedOption(option)) {
                throw new ParameterException(spec.commandLine(), "--type " + format
                        + " repacks a ternary model: --plan, --stats, --keep, --keep-type and --rounding do not apply");
            }
        }
        return RepackCommand.repack(spec, model.path, tokenizer.path, format, out.path);
    }
}
