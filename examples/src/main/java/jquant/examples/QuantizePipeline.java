package jquant.examples;

import jquant.calibration.allocation.BitAllocation;
import jquant.calibration.CalibrationStats;
import jquant.calibration.Calibrator;
import jquant.calibration.StatsSmoothing;
import jquant.core.ProgressListener;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.pack.model.ModelPacker;
import jquant.pack.model.PackedModelVerifier;
import jquant.quantize.BitPlan;
import jquant.reports.EvalResult;
import jquant.reports.Evaluation;
import jquant.runtime.PackedModelLoader;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The jquant pipeline as a library, on stories260K: load a checkpoint, calibrate it on text, allocate
 * 1..8 bits per output channel under a 5-bit budget, pack the smoothed weights into a .jqw, verify
 * every byte of it, and evaluate it against the float model in both run modes — what
 * {@code jquant demo} does with commands. {@code docs/api.md} walks through it.
 *
 * <pre>
 * java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
 *     -cp "examples/target/classes:$(cat examples/target/classpath.txt)" \
 *     jquant.examples.QuantizePipeline models/stories260K target/pipeline
 * </pre>
 */
public final class QuantizePipeline {
    private QuantizePipeline() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: QuantizePipeline <folder with stories260K.bin, tok512.bin and the TinyStories texts> <output folder>");
            System.exit(2);
        }
        Path in = Path.of(args[0]), out = Path.of(args[1]);
        Path model = in.resolve("stories260K.bin"), tokenizer = in.resolve("tok512.bin");
        Path statsFile = out.resolve("stats.gguf"), packed = out.resolve("stories260K.jqw");

        // Every stage tells its progress the same way: done of total units and where it is (a layer, a tensor); this program shows none.
        ProgressListener quiet = (done, total, where) -> {};
        try (Checkpoint checkpoint = Checkpoints.open(model, tokenizer)) {
            // Calibrate: activation ranges and the smoothing α of each layer group for each budget, from the fp32 model on text,
            // one decoder layer at a time, the stats file written as it goes.
            String text = Files.readString(in.resolve("tinystories-calibration.txt"));
            CalibrationStats stats = Calibrator.calibrate(checkpoint, text, Calibrator.Options.defaults(), statsFile, quiet);

            // Allocate: 1..8 bits per output channel of the weights smoothed with the α searched for 5 bits, 5 on average in every tensor.
            BitAllocation.Options budget = BitAllocation.Options.budget(5);
            BitPlan plan = BitAllocation.allocate(checkpoint, stats, budget, quiet);

            // Pack: smoothed weights as weightlets with static int8 activation scales; embedding and classifier stay float.
            StatsSmoothing smoothing = StatsSmoothing.of(checkpoint, stats, plan);
            ModelPacker.pack(checkpoint, new ModelPacker.Options(plan, ModelPacker.KEEPABLE, smoothing), packed, quiet);

            // Verify: every byte recomputed from the source and the same stats, every checksum.
            PackedModelVerifier.Report report = PackedModelVerifier.verify(packed, checkpoint, smoothing, quiet);
            if (!report.ok()) throw new IllegalStateException(packed + ": " + report.problems().getFirst());
            System.out.printf("%s: %.3f bits per weight, %,d bytes, %d tensors verified%n",
                    packed, plan.averageBits(), Files.size(packed), report.tensorsChecked());
        }

        // Eval: perplexity on held-out text, KL divergence from the fp32 model and top-1 agreement, in both run modes.
        for (PackedModelLoader.Mode mode : PackedModelLoader.Mode.values()) {
            EvalResult r = Evaluation.run(Evaluation.Request.of(packed, in.resolve("tinystories-eval.txt")).base(model).tokenizer(tokenizer).mode(mode), quiet);
            System.out.printf("%-11s perplexity %.4f (fp32 %.4f), mean KL %.6f, top-1 agreement %.4f%n",
                    r.mode(), r.perplexity(), r.basePerplexity(), r.meanKl(), r.top1());
        }
    }
}
