package jquant.formats;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.type.LogicalType;
import java.io.IOException;
import java.util.Arrays;

/**
 * jquant's own JSON (bit plans, a packed file's metadata, evaluation results) read into records by
 * Jackson's data binding, strictly: a field of the wrong type is refused, never coerced (no "4" for 4,
 * no 4.5 for an int, no number for a string, no null for a primitive), duplicate keys and trailing
 * content are refused, and a field a record marks {@code @JsonProperty(required = true)} must be present
 * (it may still be null). A record refuses fields it does not declare unless it says
 * {@code @JsonIgnoreProperties(ignoreUnknown = true)}. Foreign JSON (a tokenizer.json, a Hugging Face
 * config) is read by its own readers, which accept what its writers write.
 *
 * <p>Every problem is one line naming where it is, for a reader to prefix with its file:
 * {@code bit plan: tensors[0]: missing field "alpha"}.
 */
public final class JsonRecords {

    /** The mapper our files are read and written with. */
    public static final ObjectMapper MAPPER = strict();

    private JsonRecords() {}

    private static ObjectMapper strict() {
        ObjectMapper mapper = JsonMapper.builder(JsonFactory.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build())
                .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
                .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
                .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
                .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
                .build();
        mapper.coercionConfigFor(LogicalType.Textual).setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Float, CoercionAction.Fail).setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
        return mapper;
    }

    /** {@code json} as a {@code type}; anything wrong is an {@link IllegalArgumentException} "what: where: problem". */
    public static <T> T read(String what, byte[] json, Class<T> type) {
        try {
            return MAPPER.readValue(json, type);
        } catch (IOException e) {
            throw problem(what, e);
        }
    }

    /** A section of a document already parsed (a packed file's metadata), as a {@code type}. */
    public static <T> T convert(String what, JsonNode section, Class<T> type) {
        try {
            return MAPPER.treeToValue(section, type);
        } catch (IOException e) {
            throw problem(what, e);
        }
    }

    /** The one-line reason {@code e} gives, where it is in the document. */
    static IllegalArgumentException problem(String what, IOException e) {
        if (!(e instanceof JsonMappingException m)) {
            String detail = e instanceof JsonProcessingException p ? p.getOriginalMessage() : e.getMessage();
            return new IllegalArgumentException(what + ": not valid JSON (" + detail + ")", e);
        }
        String at = path(m, m instanceof UnrecognizedPropertyException || isMissing(m) ? m.getPath().size() - 1 : m.getPath().size());
        String reason = switch (m) {
            case UnrecognizedPropertyException u -> "unknown field \"" + u.getPropertyName() + "\"";
            case MismatchedInputException missing when isMissing(missing) -> "missing field \"" + m.getPath().getLast().getFieldName() + "\"";
            case InvalidFormatException f when f.getTargetType() != null && f.getTargetType().isEnum() ->
                    "\"" + f.getValue() + "\" is not one of " + Arrays.toString(f.getTargetType().getEnumConstants());
            case MismatchedInputException object when object.getTargetType() != null && object.getTargetType().isRecord() ->
                    "expected a JSON object";
            default -> m.getOriginalMessage().replaceAll(" \\((but|set) .*\\)$", "").replace("`", "")
                    .replace("java.lang.", "");
        };
        return new IllegalArgumentException(what + ": " + (at.isEmpty() ? "" : at + ": ") + reason, e);
    }

    private static boolean isMissing(JsonMappingException e) {
        return e instanceof MismatchedInputException && e.getOriginalMessage().startsWith("Missing required creator property");
    }

    /** {@code tensors[0].rows}: the first {@code depth} steps of the path to the problem. */
    private static String path(JsonMappingException e, int depth) {
        StringBuilder s = new StringBuilder();
        for (JsonMappingException.Reference r : e.getPath().subList(0, Math.max(0, depth))) {
            if (r.getFieldName() != null) s.append(s.isEmpty() ? "" : ".").append(r.getFieldName());
            else s.append('[').append(r.getIndex()).append(']');
        }
        return s.toString();
    }
}
