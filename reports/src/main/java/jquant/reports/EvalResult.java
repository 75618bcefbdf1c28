package jquant.reports;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import jquant.formats.AtomicOutput;
import jquant.formats.CheckpointException;
import jquant.formats.InputFiles;
import jquant.formats.JsonRecords;
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

    /**
     * The file as written and read (Jackson's data binding, {@link JsonRecords}): a field that is absent, as
     * in files from before it existed, is null; fields this version does not know are skipped.
     */
    @JsonIgnoreProperties(ignoreUnknown = true)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"model", "data", "dataSha256", "ctx", "mode", "series", "fileBytes", "parameters", "quantization", "base",
            "result", "baseResult", "divergence", "seconds", "threads", "perToken"})
    record EvalJson(@JsonProperty(required = true) String model, String data, String dataSha256, Integer ctx, String mode, String series,
                    Long fileBytes, Long parameters, QuantizationJson quantization, String base, @JsonProperty(required = true) ScoresJson result,
                    ScoresJson baseResult, DivergenceJson divergence, Double seconds, Integer threads, TokensJson perToken) {}

    @JsonPropertyOrder({"perplexity", "stderr", "meanNll", "tokens", "windows", "scored"})
    record ScoresJson(@JsonProperty(required = true) Double perplexity, Double stderr, Double meanNll, Integer tokens, Integer windows,
                      Integer scored) {
        static ScoresJson of(Perplexity.Result r) {
            return r == null ? null : new ScoresJson(r.perplexity(), r.stderr(), r.meanNll(), r.tokens(), r.windows(), r.scored());
        }

        Perplexity.Result result() {
            return new Perplexity.Result(perplexity, orNaN(stderr), orNaN(meanNll), orZero(tokens), orZero(windows), orZero(scored));
        }
    }

    @JsonPropertyOrder({"meanKl", "klP99", "maxKl", "top1Agreement"})
    record DivergenceJson(Double meanKl, Double klP99, Double maxKl, Double top1Agreement) {
        static DivergenceJson of(Divergence d) {
            return d == null ? null : new DivergenceJson(d.meanKl(), d.klP99(), d.maxKl(), d.top1Agreement());
        }

        Divergence divergence() {
            return new Divergence(orNaN(meanKl), orNaN(klP99), orNaN(maxKl), orNaN(top1Agreement));
        }
    }

    @JsonPropertyOrder({"budget", "averageBits", "rounding", "smoothing"})
    record QuantizationJson(Double budget, Double averageBits, String rounding, String smoothing) {
        static QuantizationJson of(Quantization q) {
            return q == null ? null : new QuantizationJson(q.budget(), q.averageBits(), q.rounding(), q.smoothing());
        }

        Quantization quantization() {
            return new Quantization(orNaN(budget), orNaN(averageBits), orEmpty(rounding), orEmpty(smoothing));
        }
    }

    private static double orNaN(Double d) {
        return d == null ? Double.NaN : d;
    }

    private static int orZero(Integer i) {
        return i == null ? 0 : i;
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"encoding", "nll", "baseNll", "kl"})
    record TokensJson(@JsonProperty(required = true) String encoding, @JsonProperty(required = true) String nll, String baseNll, String kl) {}

    /** Writes the JSON above through an {@link AtomicOutput}. */
    public void write(Path file) throws IOException {
        TokensJson tokens = perToken == null ? null : new TokensJson(TOKEN_ENCODING, encode(perToken.nll()),
                perToken.kl() == null ? null : encode(perToken.baseNll()), perToken.kl() == null ? null : encode(perToken.kl()));
        EvalJson json = new EvalJson(model, data, absentIfEmpty(dataSha256), ctx, absentIfEmpty(mode), absentIfEmpty(series), fileBytes,
                parameters >= 0 ? parameters : null, QuantizationJson.of(quantization), base, ScoresJson.of(result),
                base == null ? null : ScoresJson.of(baseResult), base == null ? null : DivergenceJson.of(divergence), seconds, threads >= 1 ? threads : null, tokens);
        byte[] bytes = JsonRecords.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsBytes(json);
        AtomicOutput.write(file, out -> out.write(bytes));
    }

    private static String absentIfEmpty(String s) {
        return s.isEmpty() ? null : s;
    }

    /**
     * Reads one {@code jquant eval --json} file; a file of another shape is an error naming it. Fields a
     * file lacks read as absent: "" for the mode, series and text hash, -1 for sizes and threads, null for the
     * quantization and per-token figures, NaN for figures, 0 for counts.
     */
    public static EvalResult read(Path file) throws IOException {
        EvalJson j;
        try {
            j = JsonRecords.read("not a 'jquant eval --json' result", InputFiles.readAllBytes(file), EvalJson.class);
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file, e.getMessage(), e);
        }
        TokenFigures perToken;
        try {
            perToken = tokenFigures(j.perToken());
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file, "its per-token figures are not valid: " + e.getMessage());
        }
        return new EvalResult(j.model(), orEmpty(j.data()), orEmpty(j.dataSha256()), j.ctx() == null ? 0 : j.ctx(), orEmpty(j.mode()),
                orEmpty(j.series()), j.fileBytes() == null ? -1 : j.fileBytes(), j.parameters() == null ? -1 : j.parameters(),
                j.quantization() == null ? null : j.quantization().quantization(), j.result().result(), j.base(),
                j.baseResult() == null ? null : j.baseResult().result(), j.divergence() == null ? null : j.divergence().divergence(),
                j.seconds() == null ? Double.NaN : j.seconds(), j.threads() == null ? -1 : j.threads(), perToken);
    }

    private static String orEmpty(String s) {
        return s == null ? "" : s;
    }

    private static TokenFigures tokenFigures(TokensJson t) {
        if (t == null) return null;
        if (!TOKEN_ENCODING.equals(t.encoding())) throw new IllegalArgumentException("encoding is not " + TOKEN_ENCODING);
        return new TokenFigures(decode(t.nll()), t.baseNll() == null ? null : decode(t.baseNll()), t.kl() == null ? null : decode(t.kl()));
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
