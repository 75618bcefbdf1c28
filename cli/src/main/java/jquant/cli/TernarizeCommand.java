package jquant.cli;

import jquant.pack.ternary.TernaryModelWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.util.concurrent.Callable;

/** {@code jquant ternarize}: a ternary test model from a float checkpoint ({@link TernaryModelWriter#ternarize}). */
@Command(name = "ternarize", description = "Make a ternary test model (absmean, BitNet b1.58 style) from a float checkpoint, as GGUF.")
final class TernarizeCommand implements Callable<Integer> {

    @Mixin
    ModelArgument model = new ModelArgument();

    @Mixin
    OutputFile out = new OutputFile();

    @Option(names = "--type", defaultValue = "pq2_0", paramLabel = "<type>",
            description = "Storage of the ternary matrices: pq2_0, tq2_0, ptq1_0, t2p, or f32 (exact s·{-1,0,+1} floats) (default: ${DEFAULT-VALUE}).")
    String type;

    @Mixin
    TokenizerOption tokenizer = new TokenizerOption();

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (!type.equalsIgnoreCase("f32")) RepackCommand.layout(spec, "--type", type);
        new OutputSafety().model(model.path, tokenizer.path).check(out.path);
        PrintWriter log = spec.commandLine().getOut();
        TernaryModelWriter.Summary s = TernaryModelWriter.ternarize(model.path, tokenizer.path, out.path, type, RepackCommand.tensorLines(log));
        if (s.repacked()) {
            log.printf("Wrote %s: every block matrix was already ternary, so the model was repacked losslessly (as jquant repack --type %s): "
                    + "%d tensors converted, %d kept their layout%n", out.path, type, s.converted().size(), s.otherwise().size());
        } else {
            log.printf("Wrote %s: %d matrices ternarized, %d in a fallback layout%n", out.path, s.converted().size(), s.otherwise().size());
        }
        log.flush();
        return 0;
    }
}
