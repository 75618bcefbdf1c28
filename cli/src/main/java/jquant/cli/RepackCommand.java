package jquant.cli;

import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoints;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.formats.TernaryCodecs;
import jquant.formats.gguf.GgufCheckpoint;
import jquant.formats.gguf.GgufValue;
import jquant.formats.gguf.GgufWriter;
import jquant.formats.quant.T2pShapeException;
import jquant.formats.quant.TernaryTensor;
import jquant.pack.ternary.TernaryDetector;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * {@code jquant repack}: converts a ternary GGUF between ternary layouts, losslessly. Ternary tensors
 * (PQ2_0, TQ2_0, PTQ1_0, T2P) are decoded to codes and fp16 scales and re-encoded; block linear
 * matrices stored as floats must be exactly ternary per 128-block ({@link TernaryDetector}) or the
 * write is refused naming the tensor, row, column and value — nothing is rounded. A tensor whose shape
 * the target cannot hold (T2P: rows % 4, cols % 128) keeps its stored layout, and the report and the
 * output's {@code jquant.ternary.kept} key say so. Every source metadata key is carried over.
 */
@Command(name = "repack", description = "Convert a ternary GGUF between ternary layouts (t2p, pq2_0, ptq1_0), losslessly.")
final class RepackCommand implements Callable<Integer> {

    @Parameters(paramLabel = "<gguf>", description = "Ternary GGUF (ternary types, or exactly ternary float matrices).")
    Path model;

    @Option(names = "--format", required = true, paramLabel = "<layout>", description = "Target layout: t2p, pq2_0, ptq1_0, tq2_0.")
    String format;

    @Option(names = "--out", required = true, paramLabel = "<gguf>", description = "GGUF file to write.")
    Path out;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        DType target = TernarizeCommand.parse(format).dtype;
        if (out.toAbsolutePath().normalize().equals(model.toAbsolutePath().normalize())) {
            throw new IllegalArgumentException("--out " + out + " would overwrite the input");
        }
        PrintWriter log = spec.commandLine().getOut();
        try (Checkpoint c = Checkpoints.open(model, null)) {
            if (!(c instanceof GgufCheckpoint)) {
                throw new CheckpointException(model, "repack reads GGUF files (" + c.format() + " given); make one with jquant ternarize");
            }
            SequencedMap<String, GgufValue> source = TernaryGguf.sourceMetadata(c);
            Set<String> linear = TernaryGguf.blockLinearNames(c, c.tensors());
            List<Tensor> written = new ArrayList<>();
            List<String> repacked = new ArrayList<>(), kept = new ArrayList<>();
            for (Tensor t : c.tensors().values()) {
                boolean ternaryType = TernaryCodecs.isTernary(t.dtype());
                if (!ternaryType && !linear.contains(t.name())) {
                    written.add(t);
                    continue;
                }
                if (!ternaryType && t.cols() % TernaryTensor.BLOCK != 0) {
                    kept.add(keep(log, written, t, "cols " + t.cols() + " not a multiple of 128: no ternary block layout fits, kept " + t.dtype()));
                    continue;
                }
                TernaryTensor tt = ternaryType ? TernaryCodecs.decode(t)
                        : TernaryDetector.detect(t.name(), t.toFloats(), t.rows(), t.cols(), TernaryDetector.Granularity.PER_BLOCK);
                try {
                    written.add(TernaryCodecs.encode(tt, t.shape(), target));
                    repacked.add(t.name());
                    log.printf("  %-28s %-10s %s -> %s%n", t.name(), t.shapeString(), t.dtype(), target);
                } catch (T2pShapeException e) {
                    kept.add(keep(log, written, t, e.getMessage() + ", kept " + t.dtype()));
                }
            }
            SequencedMap<String, GgufValue> kv = new LinkedHashMap<>(source);
            kv.put(TernaryGguf.KEY_PREFIX + "layout", GgufValue.string(format));
            kv.put(TernaryGguf.KEY_PREFIX + "repacked", GgufValue.stringArray(repacked));
            kv.put(TernaryGguf.KEY_PREFIX + "kept", GgufValue.stringArray(kept));
            TernaryGguf.requireCarried(model, source, kv);
            GgufWriter.write(out, kv, written);
            log.printf("Wrote %s: %d tensors as %s, %d kept their layout%n", out, repacked.size(), target, kept.size());
        }
        log.flush();
        return 0;
    }

    private static String keep(PrintWriter log, List<Tensor> written, Tensor t, String why) {
        written.add(t);
        log.printf("  %-28s %-10s %s%n", t.name(), t.shapeString(), why);
        return t.name() + ": " + why;
    }
}
