package jquant.formats.jqw;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.formats.Architecture;
import jquant.formats.CheckpointException;
import jquant.formats.ModelConfig;
import jquant.formats.PreTokenizer;
import jquant.formats.RopeConvention;
import jquant.formats.RopeScaling;
import jquant.formats.Vocabulary;

import java.util.List;
import java.util.Optional;

/**
 * The model description a packed file carries so that it runs without its source checkpoint
 * ({@code docs/jqw-format.md}, "Metadata"):
 * <pre>
 * "model":     { "dim", "hiddenDim", "layers", "heads", "kvHeads", "vocabSize", "maxSeqLen",
 *                "ropeTheta", "rmsEps", "tiedEmbeddings", "rope": "ADJACENT_PAIRS" | "ROTATE_HALF",
 *                only when not a plain Llama ({@link ModelConfig#isPlainLlama()}):
 *                "architecture": "llama" | "qwen2", "headDim", "ropeFactors": [per-frequency divisors] | null }
 * "tokenizer": { "kind": "SENTENCEPIECE" | "BPE", "bos", "eos", "addBos",
 *                "pieces": [...], "scores": [...], "merges": [...],
 *                "types": [GGUF token type codes], "preTokenizer": { "llamaCppName", "patterns": [...] },
 *                "ignoreMerges" }
 * </pre>
 * A file without {@code architecture} is a Llama with heads of dim / heads and plain RoPE. Files written
 * before {@code types}, {@code preTokenizer} and {@code ignoreMerges} existed read as
 * {@link Vocabulary}'s short constructor makes them: normal tokens, GPT-2's split for BPE, merging every word.
 * The records below are what is read, by Jackson's data binding ({@link jquant.formats.JsonRecords}).
 */
public final class JqwModelMetadata {
    public static final String MODEL = "model";
    public static final String TOKENIZER = "tokenizer";

    private JqwModelMetadata() {}

    /** Writes {@code model} and {@code tokenizer} into {@code meta}. */
    public static void put(ObjectNode meta, ModelConfig c, RopeConvention rope, Vocabulary v) {
        ObjectNode m = meta.putObject(MODEL);
        m.put("dim", c.dim()).put("hiddenDim", c.hiddenDim()).put("layers", c.layers()).put("heads", c.heads())
                .put("kvHeads", c.kvHeads()).put("vocabSize", c.vocabSize()).put("maxSeqLen", c.maxSeqLen())
                .put("ropeTheta", c.ropeTheta()).put("rmsEps", c.rmsEps()).put("tiedEmbeddings", c.tiedEmbeddings())
                .put("rope", rope.name());
        if (!c.isPlainLlama()) {
            m.put("architecture", c.architecture().ggufName()).put("headDim", c.headDim());
            if (c.ropeScaling() == null) {
                m.putNull("ropeFactors");
            } else {
                ArrayNode factors = m.putArray("ropeFactors");
                for (float f : c.ropeScaling().factors()) factors.add(f);
            }
        }
        ObjectNode t = meta.putObject(TOKENIZER);
        t.put("kind", v.kind().name()).put("bos", v.bos()).put("eos", v.eos()).put("addBos", v.addBos());
        ArrayNode pieces = t.putArray("pieces");
        v.pieces().forEach(pieces::add);
        ArrayNode scores = t.putArray("scores");
        for (float s : v.scores()) scores.add(s);
        ArrayNode merges = t.putArray("merges");
        v.merges().forEach(merges::add);
        ArrayNode types = t.putArray("types");
        v.types().forEach(type -> types.add(type.code()));
        ObjectNode pre = t.putObject("preTokenizer");
        pre.put("llamaCppName", v.preTokenizer().llamaCppName().orElse(null));
        ArrayNode patterns = pre.putArray("patterns");
        v.preTokenizer().patterns().forEach(patterns::add);
        t.put("ignoreMerges", v.ignoreMerges());
    }

    /** The {@code model} object as {@link #put} writes it; the last three only when not a plain Llama. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record ModelJson(@JsonProperty(required = true) int dim, @JsonProperty(required = true) int hiddenDim,
                     @JsonProperty(required = true) int layers, @JsonProperty(required = true) int heads,
                     @JsonProperty(required = true) int kvHeads, @JsonProperty(required = true) int vocabSize,
                     @JsonProperty(required = true) int maxSeqLen, @JsonProperty(required = true) float ropeTheta,
                     @JsonProperty(required = true) float rmsEps, @JsonProperty(required = true) boolean tiedEmbeddings,
                     @JsonProperty(required = true) RopeConvention rope,
                     String architecture, Integer headDim, float[] ropeFactors) {}

    /**
     * The {@code tokenizer} object as {@link #put} writes it; {@code types}, {@code preTokenizer} and
     * {@code ignoreMerges} are null in files written before they existed.
     */
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record TokenizerJson(@JsonProperty(required = true) Vocabulary.Kind kind, @JsonProperty(required = true) int bos,
                         @JsonProperty(required = true) int eos, @JsonProperty(required = true) boolean addBos,
                         @JsonProperty(required = true) List<String> pieces, @JsonProperty(required = true) float[] scores,
                         @JsonProperty(required = true) List<String> merges, List<Long> types, PreTokenizerJson preTokenizer,
                         Boolean ignoreMerges) {}

    public record PreTokenizerJson(@JsonProperty(required = true) String llamaCppName, @JsonProperty(required = true) List<String> patterns) {}

    /** The {@code model} object of {@code file}, as stored. */
    public static ModelJson model(JqwFile file) throws CheckpointException {
        return file.section(MODEL, ModelJson.class);
    }

    /** The {@code tokenizer} object of {@code file}, as stored. */
    public static TokenizerJson tokenizer(JqwFile file) throws CheckpointException {
        return file.section(TOKENIZER, TokenizerJson.class);
    }

    public static ModelConfig config(JqwFile file) throws CheckpointException {
        ModelJson m = model(file);
        try {
            if (m.architecture() == null) {
                return new ModelConfig(m.dim(), m.hiddenDim(), m.layers(), m.heads(), m.kvHeads(), m.vocabSize(), m.maxSeqLen(),
                        m.ropeTheta(), m.rmsEps(), m.tiedEmbeddings());
            }
            Architecture arch = Architecture.byGgufName(m.architecture()).orElseThrow(() -> new CheckpointException(file.path(),
                    "architecture '" + m.architecture() + "' is not supported: jquant runs " + Architecture.names()));
            if (m.headDim() == null) throw new CheckpointException(file.path(), "metadata model of architecture " + m.architecture() + " lacks 'headDim'");
            RopeScaling scaling = m.ropeFactors() == null ? null : RopeScaling.ofFactors(m.ropeFactors());
            return new ModelConfig(arch, m.dim(), m.hiddenDim(), m.layers(), m.heads(), m.kvHeads(), m.headDim(), m.vocabSize(),
                    m.maxSeqLen(), m.ropeTheta(), scaling, m.rmsEps(), m.tiedEmbeddings());
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file.path(), "model config: " + e.getMessage());
        }
    }

    public static RopeConvention rope(JqwFile file) throws CheckpointException {
        return model(file).rope();
    }

    public static Vocabulary vocabulary(JqwFile file) throws CheckpointException {
        TokenizerJson t = tokenizer(file);
        try {
            Vocabulary v = new Vocabulary(t.kind(), t.pieces(), t.scores(), t.merges(), t.bos(), t.eos(), t.addBos());
            if (t.types() == null) return v;
            if (t.preTokenizer() == null || t.ignoreMerges() == null) {
                throw new CheckpointException(file.path(), "metadata tokenizer has types but lacks 'preTokenizer' or 'ignoreMerges'");
            }
            List<Vocabulary.TokenType> types = t.types().stream().map(Vocabulary.TokenType::of).toList();
            PreTokenizer preTokenizer = new PreTokenizer(Optional.ofNullable(t.preTokenizer().llamaCppName()), t.preTokenizer().patterns());
            return new Vocabulary(v.kind(), t.pieces(), t.scores(), v.merges(), v.bos(), v.eos(), v.addBos(), types, preTokenizer,
                    t.ignoreMerges());
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file.path(), "tokenizer: " + e.getMessage());
        }
    }
}
