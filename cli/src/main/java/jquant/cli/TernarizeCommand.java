package jquant.cli;

import jquant.pack.ternary.TernaryModelWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code jquant ternarize}: a ternary test model from a float checkpoint ({@link TernaryModelWriter#ternarize}). */
@Command(name = "ternarize", description = "Make a ternary test model (absmean, BitNet b1.58 style) from a float checkpoint, as GGUF.")
final class TernarizeCommand implements Callable<Integer> {

    @Parameters(paramLabel = "<model>", description = "Checkpoint (llama2.c .bin, GGUF, HF folder); matrices already ternary keep their scales.")
    Path model;

    @Option(names = "--out", required = true, paramLabel = "<gguf>", description = "GGUF file to write.")
    Path out;

    @Option(names = "--type", defaultValue = "pq2_0", paramLabel = "<type>",
            description = "Storage of the ternary matrices: pq2_0, tq2_0, ptq1_0, t2p, or f32 (exact s·{-1,0,+1} floats) (default: ${DEFAULT-VALUE}).")
    String type;

    @Option(names = "--tokenizer", paramLabel = "<file>", description = "llama2.c tokenizer.bin for a .bin checkpoint.")
    Path tokenizer;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (!type.equalsIgnoreCase("f32")) RepackCommand.layout(spec, "--type", type);
        new OutputSafety().model(model, tokenizer).check(out);
        PrintWriter log = spec.commandLine().getOut();
        TernaryModelWriter.Summary s = TernaryModelWriter.ternarize(model, tokenizer, out, type, RepackCommand.tensorLines(log));
        if (s.repacked()) {
            log.printf("Wrote %s: every block matrix was already ternary, so the model was repacked losslessly (as jquant repack --format %s): "
                    + "%d tensors converted, %d kept their layout%n", out, type, s.converted().size(), s.otherwise().size());
        } else {
            log.printf("Wrote %s: %d matrices ternarized, %d in a fallback layout%n", out, s.converted().size(), s.otherwise().size());
        }
        log.flush();
        return 0;
    }
}
