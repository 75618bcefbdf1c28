package jquant.cli;

import jquant.calibration.StatsSmoothing;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.pack.model.PackedModelVerifier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code jquant verify}: recomputes a packed file from its source, the plan it records and (if it was
 * packed with them) the same calibration stats, checks
 * every byte and every layer checksum; exit 0 only if all match, else 1 naming the first mismatch.
 */
@Command(name = "verify", description = "Check a .jqw file byte for byte against its source model and plan, and its checksums.")
final class VerifyCommand implements Callable<Integer> {

    @Parameters(paramLabel = "<file.jqw>", description = "Packed model file.")
    Path packed;

    @Option(names = "--source", required = true, paramLabel = "<model>", description = "The checkpoint it was packed from.")
    Path source;

    @Option(names = "--stats", paramLabel = "<stats>", description = "The calibration stats it was packed with (required for a file packed with --stats; checked by SHA-256).")
    Path stats;

    @Mixin
    TokenizerOption tokenizer = new TokenizerOption();

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        PackedModelVerifier.Report report;
        try (Checkpoint c = Checkpoints.open(source, tokenizer.path);
             Progress bar = new Progress("verify", 0, "tensors")) {
            report = PackedModelVerifier.verify(packed, c, stats == null ? null : StatsSmoothing.of(c, stats, PackedModelVerifier.recordedPlan(packed)),
                    (done, total, name) -> bar.stepTo(done, total));
        }
        PrintWriter out = spec.commandLine().getOut();
        for (String p : report.problems()) out.println("MISMATCH " + p);
        out.printf("%s: %d tensors, %,d bytes checked against %s: %s%n", packed, report.tensorsChecked(), report.bytesChecked(), source,
                report.ok() ? "all bytes and checksums match" : report.problems().size() + " problem(s)");
        out.flush();
        if (!report.ok()) throw new IllegalStateException(packed + ": " + report.problems().getFirst());
        return 0;
    }
}
