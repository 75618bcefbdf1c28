package jquant.formats.jqw;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.formats.CheckpointException;
import jquant.formats.ModelConfig;
import jquant.formats.PreTokenizer;
import jquant.formats.RopeConvention;
import jquant.formats.Vocabulary;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The model description a packed file carries so that it runs without its source checkpoint
 * ({@code docs/jqw-format.md}, "Metadata"):
 * <pre>
 * "model":     { "dim", "hiddenDim", "layers", "heads", "kvHeads", "vocabSize", "maxSeqLen",
 *                "ropeTheta", "rmsEps", "tiedEmbeddings", "rope": "ADJACENT_PAIRS" | "ROTATE_HALF" }
 * "tokenizer": { "kind": "SENTENCEPIECE" | "BPE", "bos", "eos", "addBos",
 *                "pieces": [...], "scores": [...], "merges": [...],
 *                "types": [GGUF token type codes], "preTokenizer": { "llamaCppName", "patterns": [...] },
 *                "ignoreMerges" }
 * </pre>
 * Files written before {@code types}, {@code preTokenizer} and {@code ignoreMerges} existed read as
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
            return new ModelConfig(integer(file, m, "dim"), integer(file, m, "hiddenDim"), integer(file, m, "layers"),
                    integer(file, m, "heads"), integer(file, m, "kvHeads"), integer(file, m, "vocabSize"),
                    integer(file, m, "maxSeqLen"), (float) number(file, m, "ropeTheta"), (float) number(file, m, "rmsEps"),
                    field(file, m, "tiedEmbeddings").asBoolean());
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
