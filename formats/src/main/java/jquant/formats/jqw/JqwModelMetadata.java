package jquant.formats.jqw;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.formats.Architecture;
import jquant.formats.CheckpointException;
import jquant.formats.ModelConfig;
import jquant.formats.PreTokenizer;
import jquant.formats.RopeConvention;
import jquant.formats.RopeScaling;
import jquant.formats.Vocabulary;

import java.util.ArrayList;
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

    public static ModelConfig config(JqwFile file) throws CheckpointException {
        JsonNode m = section(file, MODEL);
        try {
            int dim = integer(file, m, "dim"), hiddenDim = integer(file, m, "hiddenDim"), layers = integer(file, m, "layers");
            int heads = integer(file, m, "heads"), kvHeads = integer(file, m, "kvHeads"), vocabSize = integer(file, m, "vocabSize");
            int maxSeqLen = integer(file, m, "maxSeqLen");
            float theta = (float) number(file, m, "ropeTheta"), eps = (float) number(file, m, "rmsEps");
            boolean tied = field(file, m, "tiedEmbeddings").asBoolean();
            if (!m.has("architecture")) return new ModelConfig(dim, hiddenDim, layers, heads, kvHeads, vocabSize, maxSeqLen, theta, eps, tied);
            String name = field(file, m, "architecture").asText();
            Architecture arch = Architecture.byGgufName(name).orElseThrow(() -> new CheckpointException(file.path(),
                    "architecture '" + name + "' is not supported: jquant runs " + Architecture.names()));
            JsonNode factors = m.path("ropeFactors");
            RopeScaling scaling = null;
            if (factors.isArray()) {
                float[] f = new float[factors.size()];
                for (int i = 0; i < f.length; i++) f[i] = (float) factors.get(i).asDouble();
                scaling = RopeScaling.ofFactors(f);
            }
            return new ModelConfig(arch, dim, hiddenDim, layers, heads, kvHeads, integer(file, m, "headDim"), vocabSize, maxSeqLen,
                    theta, scaling, eps, tied);
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file.path(), "model config: " + e.getMessage());
        }
    }

    public static RopeConvention rope(JqwFile file) throws CheckpointException {
        String name = field(file, section(file, MODEL), "rope").asText();
        try {
            return RopeConvention.valueOf(name);
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file.path(), "unknown rope convention '" + name + "'");
        }
    }

    public static Vocabulary vocabulary(JqwFile file) throws CheckpointException {
        JsonNode t = section(file, TOKENIZER);
        List<String> pieces = strings(file, t, "pieces");
        JsonNode s = field(file, t, "scores");
        float[] scores = new float[s.size()];
        for (int i = 0; i < scores.length; i++) scores[i] = (float) s.get(i).asDouble();
        try {
            Vocabulary v = new Vocabulary(Vocabulary.Kind.valueOf(field(file, t, "kind").asText()), pieces, scores,
                    strings(file, t, "merges"), integer(file, t, "bos"), integer(file, t, "eos"), field(file, t, "addBos").asBoolean());
            if (!t.has("types")) return v;
            List<Vocabulary.TokenType> types = new ArrayList<>(pieces.size());
            for (JsonNode code : t.get("types")) types.add(Vocabulary.TokenType.of(code.asLong()));
            JsonNode pre = field(file, t, "preTokenizer");
            JsonNode name = pre.path("llamaCppName");
            PreTokenizer preTokenizer = new PreTokenizer(name.isTextual() ? Optional.of(name.asText()) : Optional.empty(),
                    strings(file, pre, "patterns"));
            return new Vocabulary(v.kind(), pieces, scores, v.merges(), v.bos(), v.eos(), v.addBos(), types, preTokenizer,
                    field(file, t, "ignoreMerges").asBoolean());
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file.path(), "tokenizer: " + e.getMessage());
        }
    }

    private static JsonNode section(JqwFile file, String name) throws CheckpointException {
        JsonNode n = file.metadata().get(name);
        if (n == null || !n.isObject()) throw new CheckpointException(file.path(), "metadata has no '" + name + "' object");
        return n;
    }

    private static JsonNode field(JqwFile file, JsonNode parent, String name) throws CheckpointException {
        JsonNode n = parent.get(name);
        if (n == null || n.isNull()) throw new CheckpointException(file.path(), "metadata lacks '" + name + "'");
        return n;
    }

    private static int integer(JqwFile file, JsonNode parent, String name) throws CheckpointException {
        JsonNode n = field(file, parent, name);
        if (!n.canConvertToInt()) throw new CheckpointException(file.path(), "metadata '" + name + "' is not an int: " + n);
        return n.asInt();
    }

    private static double number(JqwFile file, JsonNode parent, String name) throws CheckpointException {
        JsonNode n = field(file, parent, name);
        if (!n.isNumber()) throw new CheckpointException(file.path(), "metadata '" + name + "' is not a number: " + n);
        return n.asDouble();
    }

    private static List<String> strings(JqwFile file, JsonNode parent, String name) throws CheckpointException {
        List<String> out = new ArrayList<>();
        for (JsonNode n : field(file, parent, name)) out.add(n.asText());
        return out;
    }
}
