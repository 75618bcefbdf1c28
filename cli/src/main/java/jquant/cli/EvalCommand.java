package jquant.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import jquant.formats.AtomicOutput;
import jquant.formats.CheckpointException;
import jquant.runtime.LoadedModel;
import jquant.runtime.Perplexity;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code jquant eval}: perplexity on a text by llama.cpp's {@code llama-perplexity} protocol (see
 * {@link Perplexity}: the text tokenized once with BOS, cut into windows of {@code --ctx} tokens, each
 * starting with BOS, only the second half of each window scored), and with {@code --base} the KL
 * divergence from a base model and top-1 agreement.
 */
@Command(name = "eval", description = "Perplexity on a text; with --base, KL divergence from and top-1 agreement with a base model.")
final class EvalCommand implements Callable<Integer> {

    @Parameters(paramLabel = "<model>", description = "Model to evaluate (llama2.c .bin, GGUF, HF folder, jquant .jqw).")
    Path model;

    @Option(names = "--data", required = true, paramLabel = "<text>", description = "UTF-8 text file.")
    Path data;

    @Option(names = "--ctx", defaultValue = "256", description = "Window length in tokens (default: ${DEFAULT-VALUE}).")
    int ctx;

    @Option(names = "--base", paramLabel = "<model>", description = "Reference model for KL divergence and top-1 agreement (same vocabulary).")
    Path base;

    @Option(names = "--json", paramLabel = "<file>", description = "Also write the results as JSON to this file.")
    Path json;

    @Mixin
    ModelOptions options = new ModelOptions();

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        String text = readText(data);
        if (json != null && (json.toAbsolutePath().equals(data.toAbsolutePath()) || json.toAbsolutePath().equals(model.toAbsolutePath()))) {
            throw new IllegalArgumentException("--json " + json + " would overwrite an input");
        }
        long start = System.nanoTime();
        Perplexity ppl = new Perplexity(ctx);
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("model", model.toString());
        report.put("data", data.toString());
        report.put("ctx", ctx);
        if (LoadedModel.isPacked(model)) report.put("mode", options.mode.name().replace('_', '-'));
        report.put("fileBytes", bytesOnDisk(model));
        try (LoadedModel m = options.open(model)) {
            int[] tokens = m.tokenizer().encode(text);
            if (base == null) {
                Perplexity.Result r;
                try (Progress bar = new Progress("eval", tokens.length / Math.max(ctx, 1), "windows")) {
                    r = ppl.evaluate(m.model(), tokens, m.tokenizer().addsBos() ? m.tokenizer().bos() : -1, (done, total, p) -> bar.stepTo(done));
                }
                report.put("result", result(r));
            } else {
                try (LoadedModel b = options.open(base)) {
                    if (!b.vocabulary().pieces().equals(m.vocabulary().pieces())) {
                        throw new CheckpointException(base, "its vocabulary differs from " + model + "'s: KL divergence needs the same tokens");
                    }
                    report.put("base", base.toString());
                    Perplexity.Comparison c;
                    try (Progress bar = new Progress("eval", tokens.length / Math.max(ctx, 1), "windows")) {
                        c = ppl.compare(m.model(), b.model(), tokens, m.tokenizer().addsBos() ? m.tokenizer().bos() : -1, (done, total, p) -> bar.stepTo(done));
                    }
                    report.put("result", result(c.model()));
                    report.put("baseResult", result(c.base()));
                    Map<String, Object> d = new LinkedHashMap<>();
                    d.put("meanKl", c.meanKl());
                    d.put("klP99", c.klP99());
                    d.put("maxKl", c.maxKl());
                    d.put("top1Agreement", c.top1Agreement());
                    report.put("divergence", d);
                }
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        report.put("seconds", seconds);
        print(report, spec.commandLine().getOut());
        if (json != null) {
            byte[] bytes = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsBytes(report);
            AtomicOutput.write(json, out -> out.write(bytes));
        }
        return 0;
    }

    private static Map<String, Object> result(Perplexity.Result r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("perplexity", r.perplexity());
        m.put("stderr", r.stderr());
        m.put("meanNll", r.meanNll());
        m.put("tokens", r.tokens());
        m.put("windows", r.windows());
        m.put("scored", r.scored());
        return m;
    }

    @SuppressWarnings("unchecked")
    private static void print(Map<String, Object> report, PrintWriter out) {
        Map<String, Object> r = (Map<String, Object>) report.get("result");
        out.printf("%s%s on %s (ctx %d): %,d tokens, %,d windows, %,d scored (second half of each window)%n",
                report.get("model"), report.containsKey("mode") ? " [" + report.get("mode") + "]" : "", report.get("data"), report.get("ctx"), r.get("tokens"), r.get("windows"), r.get("scored"));
        out.printf("  perplexity       %.4f ± %.5f%n", r.get("perplexity"), r.get("stderr"));
        if (report.containsKey("base")) {
            Map<String, Object> b = (Map<String, Object>) report.get("baseResult");
            Map<String, Object> d = (Map<String, Object>) report.get("divergence");
            out.printf("  base perplexity  %.4f ± %.5f  (%s)%n", b.get("perplexity"), b.get("stderr"), report.get("base"));
            out.printf("  KL divergence    mean %.6f, p99 %.6f, max %.6f nats%n", d.get("meanKl"), d.get("klP99"), d.get("maxKl"));
            out.printf("  top-1 agreement  %.4f%n", d.get("top1Agreement"));
        }
        out.printf("  %.1f s%n", (double) report.get("seconds"));
        out.flush();
    }

    /** Size of a model file, or of everything in a model folder. */
    private static long bytesOnDisk(Path path) throws IOException {
        if (!Files.isDirectory(path)) return Files.size(path);
        try (var files = Files.walk(path)) {
            return files.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
        }
    }

    /** The whole file as strict UTF-8: a malformed byte is an error naming its offset, never a replacement character. */
    static String readText(Path file) throws IOException {
        if (!Files.isRegularFile(file)) throw new CheckpointException(file, "no such file");
        byte[] bytes = Files.readAllBytes(file);
        if (bytes.length == 0) throw new CheckpointException(file, "the text file is empty");
        var decoder = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(bytes);
        try {
            return decoder.decode(in).toString();
        } catch (CharacterCodingException e) {
            throw new CheckpointException(file, "not valid UTF-8 near byte " + in.position());
        }
    }
}
