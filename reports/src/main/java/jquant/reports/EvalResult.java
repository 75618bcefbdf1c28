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
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Base64;
import java.util.Objects;

/**
 * One evaluation, as {@code jquant eval} computes it ({@link Evaluation}), writes it with {@code --json}
 * and {@code jquant report} reads it back: the model, how it was run, its perplexity and, when it was
 * compared with a base model, the divergence from it, with the per-token figures a paired comparison
 * of two evaluations on the same tokens needs.
 *
 * <pre>
 * { "model": "m.jqw", "data": "text.txt", "dataSha256": "06869b…",   SHA-256 of the text file's bytes
 *   "ctx": 256,
 *   "mode": "npu",                                      only for a packed model
 *   "series": "edgeflow",                               only when given (eval --series): the report's series
 *   "fileBytes": 400000,
 *   "parameters": 4984064,                              weights of the base model (or of the model without one)
 *   "quantization": { "budget", "averageBits", "rounding", "smoothing" },   only for a packed model
 *   "base": "m.bin",                                    only with a base model
 *   "result":     { "perplexity", "stderr", "meanNll", "tokens", "windows", "scored" },
 *   "baseResult": { the same, for the base },           only with a base model
 *   "divergence": { "meanKl", "klP99", "maxKl", "top1Agreement" },   only with a base model
 *   "seconds": 2.5,
 *   "threads": 4,                                       kernel threads the evaluation ran on (--threads)
 *   "perToken": { "encoding": "float32-le-base64",      per scored position, in scoring order
 *                 "nll": "…", "baseNll": "…", "kl": "…" } }          baseNll and kl only with a base model
 * </pre>
 * Files from before {@code dataSha256}, {@code series}, {@code parameters}, {@code quantization},
 * {@code threads} and {@code perToken} still read; what they lack reads as absent.
 *
 * @param model        model file or folder
 * @param data         the text file
 * @param dataSha256   SHA-256 (hex) of the text file, or "" if the file does not say
 * @param ctx          window length in tokens
 * @param mode         run mode of a packed model ({@code weight-only}, {@code npu}), or "" for a checkpoint
 * @param series       the name the report gives this run's series, or ""
 * @param fileBytes    bytes of the model on disk, or -1 if a file does not say
 * @param parameters   weights of the base model (of the model itself without a base), or -1 if a file does not say
 * @param quantization what a packed model's metadata says of its quantization, or null
 * @param result       the model's perplexity
 * @param base         the base model, or null
 * @param baseResult   the base model's perplexity on the same windows, or null
 * @param divergence   the divergence from the base, or null
 * @param seconds      wall-clock seconds of the evaluation (loading included)
 * @param threads      kernel threads the evaluation ran on, or -1 if a file does not say
 * @param perToken     per-token figures, or null if a file does not have them
 */
public record EvalResult(String model, String data, String dataSha256, int ctx, String mode, String series, long fileBytes, long parameters,
                         Quantization quantization, Perplexity.Result result, String base, Perplexity.Result baseResult, Divergence divergence,
                         double seconds, int threads, TokenFigures perToken) {

    /**
     * @param meanKl        mean KL(base ‖ model), nats
     * @param klP99         99th percentile of the per-token KL
     * @param maxKl         largest per-token KL
     * @param top1Agreement fraction of scored positions where both models' argmax tokens agree
     */
    public record Divergence(double meanKl, double klP99, double maxKl, double top1Agreement) {}

    /**
     * A packed file's quantization, from its metadata.
     *
     * @param budget      the plan's requested average bits per weight
     * @param averageBits the plan's achieved average over the linear layers' weights
     * @param rounding    {@code rtn} or {@code gptq}
     * @param smoothing   the smoothing rule ({@code edgeflow}, {@code smoothquant}), or "" without smoothing
     */
    public record Quantization(double budget, double averageBits, String rounding, String smoothing) {}

    /**
     * Per scored position, in scoring order: the model's negative log-likelihood of the next token, and
     * with a base model the base's and KL(base ‖ model); float32, enough for means over thousands of tokens.
     */
    public record TokenFigures(float[] nll, float[] baseNll, float[] kl) {
        public TokenFigures {
            if ((baseNll == null) != (kl == null)) throw new IllegalArgumentException("base NLL and KL per token come together");
            if (baseNll != null && (baseNll.length != nll.length || kl.length != nll.length)) {
                throw new IllegalArgumentException(nll.length + " NLLs but " + baseNll.length + " base NLLs and " + kl.length + " KLs");
            }
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof TokenFigures t && Arrays.equals(nll, t.nll) && Arrays.equals(baseNll, t.baseNll) && Arrays.equals(kl, t.kl);
        }

        @Override
        public int hashCode() {
            return Objects.hash(Arrays.hashCode(nll), Arrays.hashCode(baseNll), Arrays.hashCode(kl));
        }

        @Override
        public String toString() {
            return "TokenFigures[" + nll.length + " tokens" + (kl == null ? "" : ", with base") + "]";
        }
    }

    /** The per-token encoding: little-endian float32 values, base64. */
    public static final String TOKEN_ENCODING = "float32-le-base64";

    /** Writes the JSON above through an {@link AtomicOutput}. */
    public void write(Path file) throws IOException {
        ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        ObjectNode j = json.createObjectNode();
        j.put("model", model).put("data", data);
        if (!dataSha256.isEmpty()) j.put("dataSha256", dataSha256);
        j.put("ctx", ctx);
        if (!mode.isEmpty()) j.put("mode", mode);
        if (!series.isEmpty()) j.put("series", series);
        j.put("fileBytes", fileBytes);
        if (parameters >= 0) j.put("parameters", parameters);
        if (quantization != null) {
            j.putObject("quantization").put("budget", quantization.budget()).put("averageBits", quantization.averageBits())
                    .put("rounding", quantization.rounding()).put("smoothing", quantization.smoothing());
        }
        if (base != null) j.put("base", base);
        scores(j.putObject("result"), result);
        if (base != null) {
            scores(j.putObject("baseResult"), baseResult);
            j.putObject("divergence").put("meanKl", divergence.meanKl()).put("klP99", divergence.klP99())
                    .put("maxKl", divergence.maxKl()).put("top1Agreement", divergence.top1Agreement());
        }
        j.put("seconds", seconds);
        if (threads >= 1) j.put("threads", threads);
        if (perToken != null) {
            ObjectNode t = j.putObject("perToken").put("encoding", TOKEN_ENCODING).put("nll", encode(perToken.nll()));
            if (perToken.kl() != null) t.put("baseNll", encode(perToken.baseNll())).put("kl", encode(perToken.kl()));
        }
        byte[] bytes = json.writeValueAsBytes(j);
        AtomicOutput.write(file, out -> out.write(bytes));
    }

    private static void scores(ObjectNode o, Perplexity.Result r) {
        o.put("perplexity", r.perplexity()).put("stderr", r.stderr()).put("meanNll", r.meanNll())
                .put("tokens", r.tokens()).put("windows", r.windows()).put("scored", r.scored());
    }

    /**
     * Reads one {@code jquant eval --json} file; a file of another shape is an error naming it. Fields a
     * file lacks read as absent: "" for the mode, series and text hash, -1 for sizes and threads, null for the
     * quantization and per-token figures, NaN for figures, 0 for counts.
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
        JsonNode d = j.path("divergence"), q = j.path("quantization");
        TokenFigures perToken;
        try {
            perToken = tokenFigures(j.path("perToken"));
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file, "its per-token figures are not valid: " + e.getMessage());
        }
        return new EvalResult(j.get("model").asText(), j.path("data").asText(""), j.path("dataSha256").asText(""), j.path("ctx").asInt(),
                j.path("mode").asText(""), j.path("series").asText(""), j.path("fileBytes").asLong(-1), j.path("parameters").asLong(-1),
                q.isObject() ? new Quantization(q.path("budget").asDouble(Double.NaN), q.path("averageBits").asDouble(Double.NaN),
                        q.path("rounding").asText(""), q.path("smoothing").asText("")) : null,
                scores(r), j.has("base") ? j.get("base").asText() : null,
                j.has("baseResult") ? scores(j.get("baseResult")) : null,
                d.isObject() ? new Divergence(d.path("meanKl").asDouble(Double.NaN), d.path("klP99").asDouble(Double.NaN),
                        d.path("maxKl").asDouble(Double.NaN), d.path("top1Agreement").asDouble(Double.NaN)) : null,
                j.path("seconds").asDouble(Double.NaN), j.path("threads").asInt(-1), perToken);
    }

    private static Perplexity.Result scores(JsonNode r) {
        return new Perplexity.Result(r.path("perplexity").asDouble(Double.NaN), r.path("stderr").asDouble(Double.NaN),
                r.path("meanNll").asDouble(Double.NaN), r.path("tokens").asInt(), r.path("windows").asInt(), r.path("scored").asInt());
    }

    private static TokenFigures tokenFigures(JsonNode t) {
        if (!t.isObject()) return null;
        if (!TOKEN_ENCODING.equals(t.path("encoding").asText())) throw new IllegalArgumentException("encoding is not " + TOKEN_ENCODING);
        return new TokenFigures(decode(t.path("nll").asText()), t.has("baseNll") ? decode(t.get("baseNll").asText()) : null,
                t.has("kl") ? decode(t.get("kl").asText()) : null);
    }

    private static String encode(float[] values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        return Base64.getEncoder().encodeToString(b.array());
    }

    private static float[] decode(String base64) {
        byte[] bytes = Base64.getDecoder().decode(base64);
        if (bytes.length % Float.BYTES != 0) throw new IllegalArgumentException(bytes.length + " bytes are not whole float32 values");
        float[] values = new float[bytes.length / Float.BYTES];
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(values);
        return values;
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

    /** Bits per weight of the whole file: 8 · bytes on disk / the weights of the (base) model, or NaN if either is unknown. */
    public double bitsPerWeight() {
        return fileBytes > 0 && parameters > 0 ? 8.0 * fileBytes / parameters : Double.NaN;
    }

    /** A short label: the file name, with the mode for packed models. */
    public String label() {
        String name = Path.of(model).getFileName().toString();
        return mode.isEmpty() ? name : name + " (" + mode + ")";
    }

    public boolean hasBase() {
        return !Double.isNaN(meanKl());
    }
}
