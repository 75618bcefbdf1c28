package jquant.cli;

import jquant.pack.ternary.TernaryModelWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code jquant repack}: a ternary model written in a ternary GGUF layout, losslessly ({@link TernaryModelWriter#repack}). */
@Command(name = "repack", description = "Write a ternary model (GGUF, llama2.c or HF folder whose matrices are ternary) in a ternary GGUF layout (t2p, pq2_0, ptq1_0, tq2_0), losslessly.")
final class RepackCommand implements Callable<Integer> {

    @Mixin
    ModelArgument model = new ModelArgument();

    @Option(names = "--type", paramLabel = "<layout>", description = "Target layout: t2p, pq2_0, ptq1_0, tq2_0 (required).")
    String type;

    @Option(names = "--format", hidden = true, paramLabel = "<layout>")
    void oldFormat(String layout) {
        type = layout;
        OldOptionName.used(spec, "--format", "--type");
    }

    @Mixin
    OutputFile out = new OutputFile();

    @Mixin
    TokenizerOption tokenizer = new TokenizerOption();

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (type == null) throw new ParameterException(spec.commandLine(), "Missing required option: '--type=<layout>'");
        return repack(spec, model.path, tokenizer.path, type, out.path);
    }

    /** Repacks {@code model} to {@code format}, one line per converted or kept tensor; also {@code pack --type}. */
    static int repack(CommandSpec spec, Path model, Path tokenizer, String format, Path out) throws IOException {
        layout(spec, "--type", format);
        new OutputSafety().model(model, tokenizer).check(out);
        PrintWriter log = spec.commandLine().getOut();
        TernaryModelWriter.Summary s = TernaryModelWriter.repack(model, tokenizer, out, format, tensorLines(log));
        log.printf("Wrote %s: %d tensors as %s, %d kept their layout%n", out, s.converted().size(), TernaryModelWriter.Format.parse(format).dtype,
                s.otherwise().size());
        log.flush();
        return 0;
    }

    /** {@code 64×512}. */
    static String shapeString(long[] shape) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < shape.length; i++) sb.append(i > 0 ? "×" : "").append(shape[i]);
        return sb.toString();
    }

    /** One line per tensor as it is written: name, shape, what became of it (none under {@code --quiet}). */
    static TernaryModelWriter.Listener tensorLines(PrintWriter log) {
        return (name, shape, outcome) -> {
            if (!Progress.quiet) log.printf("  %-28s %-10s %s%n", name, shapeString(shape), outcome);
        };
    }

    /** A ternary layout name, in any case; any other is a usage error. */
    static TernaryModelWriter.Format layout(CommandSpec spec, String option, String name) {
        try {
            return TernaryModelWriter.Format.parse(name);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), option + ": " + e.getMessage());
        }
    }
}
