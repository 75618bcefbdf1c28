package jquant.reports;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.formats.AtomicOutput;
import jquant.formats.CheckpointException;
import jquant.formats.InputFiles;
import jquant.runtime.Perplexity;

import java.io.IOException;
import java.nio.file.Path;

/**
 * One evaluation, as {@code jquant eval} computes it ({@link Evaluation}), writes it with {@code --json}
 * and {@code jquant report} reads it back: the model, how it was run, its perplexity and, when it was
 * compared with a base model, the divergence from it.
 *
 * <pre>
 * { "model": "m.jqw", "data": "text.txt", "ctx": 256,
 *   "mode": "npu",                                      only for a packed model
 *   "fileBytes": 400000,
 *   "base": "m.bin",                                    only with a base model
 *   "result":     { "perplexity", "stderr", "meanNll", "tokens", "windows", "scored" },
 *   "baseResult": { the same, for the base },           only with a base model
 *   "divergence": { "meanKl", "klP99", "maxKl", "top1Agreement" },   only with a base model
 *   "seconds": 2.5 }
 * </pre>
 *
 * @param model      model file or folder
 * @param data       the text file
 * @param ctx        window length in tokens
 * @param mode       run mode of a packed model ({@code weight-only}, {@code npu}), or "" for a checkpoint
 * @param fileBytes  bytes of the model on disk, or -1 if a file does not say
 * @param result     the model's perplexity
 * @param base       the base model, or null
 * @param baseResult the base model's perplexity on the same windows, or null
 * @param divergence the divergence from the base, or null
 * @param seconds    wall-clock seconds of the evaluation (loading included)
 */
public record EvalResult(String model, String data, int ctx, String mode, long fileBytes, Perplexity.Result result,
                         String base, Perplexity.Result baseResult, Divergence divergence, double seconds) {

    /**
     * @param meanKl        mean KL(base ‖ model), nats
     * @param klP99         99th percentile of the per-token KL
     * @param maxKl         largest per-token KL
     * @param top1Agreement fraction of scored positions where both models' argmax tokens agree
     */
    public record Divergence(double meanKl, double klP99, double maxKl, double top1Agreement) {}

    /** Writes the JSON above through an {@link AtomicOutput}. */
    public void write(Path file) throws IOException {
        ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        ObjectNode j = json.createObjectNode();
        j.put("model", model).put("data", data).put("ctx", ctx);
        if (!mode.isEmpty()) j.put("mode", mode);
        j.put("fileBytes", fileBytes);
        if (base != null) j.put("base", base);
        scores(j.putObject("result"), result);
        if (base != null) {
            scores(j.putObject("baseResult"), baseResult);
            j.putObject("divergence").put("meanKl", divergence.meanKl()).put("klP99", divergence.klP99())
                    .put("maxKl", divergence.maxKl()).put("top1Agreement", divergence.top1Agreement());
        }
        j.put("seconds", seconds);
        byte[] bytes = json.writeValueAsBytes(j);
        AtomicOutput.write(file, out -> out.write(bytes));
    }

    private static void scores(ObjectNode o, Perplexity.Result r) {
        o.put("perplexity", r.perplexity()).put("stderr", r.stderr()).put("meanNll", r.meanNll())
                .put("tokens", r.tokens()).put("windows", r.windows()).put("scored", r.scored());
    }

    /**
     * Reads one {@code jquant eval --json} file; a file of another shape is an error naming it. Fields a
     * file lacks read as absent: "" for the mode, -1 for sizes, NaN for figures, 0 for counts.
     */
    public static EvalResult read(Path file) throws IOException {
        JsonNode j;
        try {
            j = new ObjectMapper().readTree(InputFiles.readAllBytes(file));
        } catch (CheckpointException e) {
            throw e;
        } catch (IOException e) {
            throw new CheckpointException(file, "not a JSON file: " + e.getMessage());
        }
        JsonNode r = j == null ? null : j.get("result");
        if (r == null || !r.has("perplexity") || !j.has("model")) {
            throw new CheckpointException(file, "not a 'jquant eval --json' result (no model or result.perplexity)");
        }
        JsonNode d = j.path("divergence");
        return new EvalResult(j.get("model").asText(), j.path("data").asText(""), j.path("ctx").asInt(), j.path("mode").asText(""),
                j.path("fileBytes").asLong(-1), scores(r), j.has("base") ? j.get("base").asText() : null,
                j.has("baseResult") ? scores(j.get("baseResult")) : null,
                d.isObject() ? new Divergence(d.path("meanKl").asDouble(Double.NaN), d.path("klP99").asDouble(Double.NaN),
                        d.path("maxKl").asDouble(Double.NaN), d.path("top1Agreement").asDouble(Double.NaN)) : null,
                j.path("seconds").asDouble(Double.NaN));
    }

    private static Perplexity.Result scores(JsonNode r) {
        return new Perplexity.Result(r.path("perplexity").asDouble(Double.NaN), r.path("stderr").asDouble(Double.NaN),
                r.path("meanNll").asDouble(Double.NaN), r.path("tokens").asInt(), r.path("windows").asInt(), r.path("scored").asInt());
    }

    public double perplexity() { return result.perplexity(); }

    public double stderr() { return result.stderr(); }

    public int scored() { return result.scored(); }

    /** The base model's perplexity, or NaN without a base. */
    public double basePerplexity() { return baseResult == null ? Double.NaN : baseResult.perplexity(); }

    /** Mean KL(base ‖ model), or NaN without a base. */
    public double meanKl() { return divergence == null ? Double.NaN : divergence.meanKl(); }

    /** 99th percentile of the per-token KL, or NaN without a base. */
    public double klP99() { return divergence == null ? Double.NaN : divergence.klP99(); }

    /** Top-1 agreement with the base, or NaN without a base. */
    public double top1() { return divergence == null ? Double.NaN : divergence.top1Agreement(); }

    /** A short label: the file name, with the mode for packed models. */
    public String label() {
        String name = Path.of(model).getFileName().toString();
        return mode.isEmpty() ? name : name + " (" + mode + ")";
    }

    public boolean hasBase() {
        return !Double.isNaN(meanKl());
    }
}
