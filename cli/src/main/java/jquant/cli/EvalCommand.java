package jquant.cli;

import jquant.distributed.ShardedEvaluation;
import jquant.reports.EvalResult;
import jquant.reports.Evaluation;
import jquant.runtime.Perplexity;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code jquant eval}: perplexity on a text, and with {@code --base} the KL divergence from a base model
 * and top-1 agreement ({@link Evaluation}); prints the result and, with {@code --out}, writes it as JSON.
 */
@Command(name = "eval", description = "Perplexity on a text; with --base, KL divergence from and top-1 agreement with a base model.")
final class EvalCommand implements Callable<Integer> {

    @Mixin
    ModelArgument model = new ModelArgument();

    @Option(names = "--data", required = true, paramLabel = "<text>", description = "UTF-8 text file.")
    Path data;

    @Option(names = "--ctx", defaultValue = "" + Evaluation.Request.DEFAULT_CTX, description = "Window length in tokens (default: ${DEFAULT-VALUE}).")
    int ctx;

    @Option(names = "--base", paramLabel = "<model>", description = "Reference model for KL divergence and top-1 agreement (same vocabulary; "
            + "one without a tokenizer of its own takes the model's).")
    Path base;

    @Option(names = "--out", paramLabel = "<file>", description = "Also write the results as JSON to this file, per-token figures included.")
    Path json;

    @Option(names = "--json", hidden = true, paramLabel = "<file>")
    void oldJson(Path file) {
        json = file;
        OldOptionName.used(spec, "--json", "--out");
    }

    @Option(names = "--series", defaultValue = "", paramLabel = "<name>", description = "The series 'jquant report' draws this result in (e.g. the method), with its run mode.")
    String series;

    @Option(names = "--layerwise", description = "Go through each model one decoder layer at a time over all windows, holding one layer of "
            + "its file in memory (a model larger than memory; the same figures); with --base, the base runs first, alone.")
    boolean layerwise;

    @Mixin
    ModelOptions options = new ModelOptions();

    @Option(names = "--shards", defaultValue = "1", paramLabel = "<n>", description = "Split the text's windows into this many parts, each scored by "
            + "a worker of --runner and summed in window order: the same figures, digit for digit (default: ${DEFAULT-VALUE}, in this process).")
    int shards;

    @Mixin
    RunnerOptions runner = new RunnerOptions();

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (ctx < Perplexity.MIN_CONTEXT) throw new ParameterException(spec.commandLine(), "--ctx must be at least " + Perplexity.MIN_CONTEXT + " tokens, got " + ctx);
        if (json != null) new OutputSafety().model(model.path, options.tokenizer.path).model(base, options.tokenizer.path).inputs(data).check(json);
        if (shards < 1) throw new ParameterException(spec.commandLine(), "--shards must be at least 1, got " + shards);
        runner.check(spec.commandLine());
        boolean engine = shards > 1 || runner.flink();
        if (engine && layerwise) throw new ParameterException(spec.commandLine(), "--layerwise goes through every window at once: it has no --shards or --runner");
        if (runner.remote() && json == null) {
            throw new ParameterException(spec.commandLine(), "--runner flink needs --out on a path the cluster's workers share: a worker writes the result there");
        }
        if (engine) {
            print(sharded(), spec.commandLine().getOut());
            return 0;
        }
        Progress[] bar = new Progress[1];
        EvalResult result;
        try {
            result = Evaluation.run(request(),
                    (done, total, where) -> {
                        if (bar[0] == null) bar[0] = new Progress("eval", total, layerwise ? "layers" : "windows");
                        bar[0].stepTo(done);
                    });
        } catch (Perplexity.ContextTooLong e) {
            throw new ParameterException(spec.commandLine(), "--ctx " + ctx + " exceeds the " + e.which() + "'s maximum of " + e.maximum() + " positions");
        } finally {
            if (bar[0] != null) bar[0].close();
        }
        print(result, spec.commandLine().getOut());
        if (json != null) result.write(json);
        return 0;
    }

    /** The evaluation in {@code shards} parts on the engine, its result written to {@code --out} (or a scratch file, deleted). */
    private EvalResult sharded() throws IOException {
        Path result = json != null ? json : Files.createTempFile("jquant-eval", ".json");
        try {
            return ShardedEvaluation.run(request(), shards, runner.engine(shards), result);
        } catch (Perplexity.ContextTooLong e) {
            throw new ParameterException(spec.commandLine(), "--ctx " + ctx + " exceeds the " + e.which() + "'s maximum of " + e.maximum() + " positions");
        } finally {
            if (json == null) Files.deleteIfExists(result);
        }
    }

    Evaluation.Request request() {
        return Evaluation.Request.of(model.path, data).ctx(ctx).base(base).tokenizer(options.tokenizer.path).mode(options.mode.mode)
                .kernels(options.kernels).series(series).layerwise(layerwise);
    }

    private static void print(EvalResult e, PrintWriter out) {
        Perplexity.Result r = e.result();
        out.printf("%s%s on %s (ctx %d): %,d tokens, %,d windows, %,d scored (second half of each window)%n",
                e.model(), e.mode().isEmpty() ? "" : " [" + e.mode() + "]", e.data(), e.ctx(), r.tokens(), r.windows(), r.scored());
        out.printf("  perplexity       %.4f ± %.5f%n", r.perplexity(), r.stderr());
        if (e.base() != null) {
            EvalResult.Divergence d = e.divergence();
            out.printf("  base perplexity  %.4f ± %.5f  (%s)%n", e.baseResult().perplexity(), e.baseResult().stderr(), e.base());
            out.printf("  KL divergence    mean %.6f, p99 %.6f, max %.6f nats%n", d.meanKl(), d.klP99(), d.maxKl());
            out.printf("  top-1 agreement  %.4f%n", d.top1Agreement());
        }
        out.printf("  %.1f s%n", e.seconds());
        out.flush();
    }
}
