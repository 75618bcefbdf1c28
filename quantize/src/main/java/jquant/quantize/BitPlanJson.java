package jquant.quantize;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jquant.formats.AtomicOutput;
import jquant.formats.CheckpointException;
import jquant.formats.FileFormat;
import jquant.formats.InputFiles;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * The bit plan file: UTF-8 JSON, fields always in this order, two-space indent, '\n' line ends,
 * so the same plan always gives the same bytes.
 * <pre>
 * {
 *   "format" : "jquant-bitplan",
 *   "version" : 2,
 *   "budget" : 5.0,                 requested average bits per weight, [1, 8]
 *   "averageBits" : 4.998046875,    achieved, over all weights (derived; checked on read)
 *   "smoothing" : "edgeflow",       the rule of the tensors' α: edgeflow | smoothquant, null without α
 *   "model" : {                     the model it was allocated for (null if unknown)
 *     "fingerprint" : "3f…",        calibration's ModelFingerprint, 64 hex digits
 *     "name" : "stories260K.bin"    its file or folder name, for messages
 *   },
 *   "tensors" : [ {
 *     "name" : "blk.0.attn_q.weight",
 *     "rows" : 64, "cols" : 64,      output channels, channel length
 *     "metric" : "APPROX",           APPROX | EXACT
 *     "alpha" : null,                smoothing factor in [0, 1], null until calibration sets it
 *     "averageBits" : 5.0,           derived; checked on read
 *     "histogram" : [ 0, 3, … ],     channels at 1..8 bits (derived; checked on read)
 *     "bits" : "5546…"               one digit '1'..'8' per row, row 0 first
 *   } ]
 * }
 * </pre>
 * Reading rejects unknown or missing fields, duplicate keys, and anything inconsistent, naming the
 * tensor and field. Version 1 files (no {@code smoothing}: their α, if any, are EdgeFlow's; {@code model}
 * optional, as plans written before it was recorded lack it) still read.
 */
public final class BitPlanJson {

    /** Version 2 added {@code smoothing}; version 1 still reads. */
    public static final FileFormat FORMAT = new FileFormat("bit plan", "jquant-bitplan", 1, 2);

    private static final ObjectMapper MAPPER = new ObjectMapper(JsonFactory.builder()
            .enable(com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION).build());
    /** Version 2: the smoothing rule and the model (null when unknown), both always present. */
    private static final Set<String> PLAN_FIELDS = Set.of("format", "version", "budget", "averageBits", "smoothing", "model", "tensors");
    /** Version 1 as shipped: no smoothing rule (any α is EdgeFlow's); the model was added later, optional. */
    private static final Set<String> PLAN_FIELDS_V1 = Set.of("format", "version", "budget", "averageBits", "model", "tensors");
    private static final Set<String> PLAN_FIELDS_V1_BEFORE_MODEL = Set.of("format", "version", "budget", "averageBits", "tensors");
    private static final Set<String> MODEL_FIELDS = Set.of("fingerprint", "name");
    private static final Set<String> TENSOR_FIELDS =
            Set.of("name", "rows", "cols", "metric", "alpha", "averageBits", "histogram", "bits");

    private BitPlanJson() {}

    public static byte[] toBytes(BitPlan plan) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        DefaultIndenter indenter = new DefaultIndenter("  ", "\n");
        try (JsonGenerator g = MAPPER.getFactory().createGenerator(out)) {
            g.setPrettyPrinter(new DefaultPrettyPrinter().withObjectIndenter(indenter));
            g.writeStartObject();
            g.writeStringField("format", FORMAT.identifier());
            g.writeNumberField("version", FORMAT.current());
            g.writeNumberField("budget", plan.budget());
            g.writeNumberField("averageBits", plan.averageBits());
            if (plan.smoothing() == null) g.writeNullField("smoothing");
            else g.writeStringField("smoothing", plan.smoothing().label());
            if (plan.model() == null) {
                g.writeNullField("model");
            } else {
                g.writeObjectFieldStart("model");
                g.writeStringField("fingerprint", plan.model().fingerprint());
                g.writeStringField("name", plan.model().name());
                g.writeEndObject();
            }
            g.writeArrayFieldStart("tensors");
            for (TensorPlan t : plan.tensors()) {
                g.writeStartObject();
                g.writeStringField("name", t.name());
                g.writeNumberField("rows", t.rows());
                g.writeNumberField("cols", t.cols());
                g.writeStringField("metric", t.metric().name());
                if (t.alpha() == null) g.writeNullField("alpha");
                else g.writeNumberField("alpha", t.alpha());
                g.writeNumberField("averageBits", t.averageBits());
                g.writeFieldName("histogram");
                int[] histogram = t.histogram();
                g.writeArray(histogram, 0, histogram.length);
                g.writeStringField("bits", digits(t.bits()));
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        out.write('\n');
        return out.toByteArray();
    }

    /** Writes {@code file} through an {@link AtomicOutput}: complete or not at all. */
    public static void write(BitPlan plan, Path file) throws IOException {
        byte[] bytes = toBytes(plan);
        AtomicOutput.write(file, out -> out.write(bytes));
    }

    /** Reads and checks a plan file; anything wrong with it is a {@link CheckpointException} naming the file. */
    public static BitPlan read(Path file) throws CheckpointException {
        try {
            return fromBytes(InputFiles.readAllBytes(file));
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file, e.getMessage(), e);
        }
    }

    private static BitPlan.ModelId model(JsonNode node) {
        if (node == null || node.isNull()) return null;
        if (!node.isObject()) throw new IllegalArgumentException("bit plan: \"model\" must be an object or null");
        checkFields(node, MODEL_FIELDS, "bit plan model");
        return new BitPlan.ModelId(text(node, "fingerprint", "bit plan model"), text(node, "name", "bit plan model"));
    }

    private static SmoothingRule smoothing(JsonNode root) {
        JsonNode node = root.get("smoothing");
        if (node.isNull()) return null;
        try {
            return SmoothingRule.of(text(root, "smoothing", "bit plan"));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("bit plan: " + e.getMessage(), e);
        }
    }

    public static BitPlan fromBytes(byte[] json) {
        JsonNode root;
        try {
            root = MAPPER.readTree(json);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException("not a valid JSON bit plan: " + e.getOriginalMessage(), e);
        } catch (IOException e) {
            // Jackson detects UTF-16 and UTF-32 too; bytes that are valid in none fail below the JSON level.
            throw new IllegalArgumentException("not a valid JSON bit plan: not readable as text (" + e.getMessage() + ")", e);
        }
        if (root == null || !root.isObject()) throw new IllegalArgumentException("bit plan must be a JSON object");
        for (String field : List.of("format", "version")) {
            if (!root.has(field)) throw new IllegalArgumentException("bit plan: missing field \"" + field + "\"");
        }
        FORMAT.checkIdentifier("format", text(root, "format", "bit plan"));
        int version = FORMAT.checkVersion(integer(root, "version", "bit plan"));
        checkFields(root, version == 2 ? PLAN_FIELDS : root.has("model") ? PLAN_FIELDS_V1 : PLAN_FIELDS_V1_BEFORE_MODEL, "bit plan");
        double budget = number(root, "budget", "bit plan");
        JsonNode tensorsNode = root.get("tensors");
        if (!tensorsNode.isArray()) throw new IllegalArgumentException("bit plan: \"tensors\" must be an array");
        List<TensorPlan> tensors = new ArrayList<>();
        for (JsonNode node : tensorsNode) tensors.add(tensor(node, tensors.size()));
        BitPlan.ModelId model = model(root.get("model"));
        BitPlan plan = version == 1 ? new BitPlan(budget, tensors).withModel(model)
                : new BitPlan(budget, tensors, smoothing(root), model);
        double average = number(root, "averageBits", "bit plan");
        if (average != plan.averageBits()) {
            throw new IllegalArgumentException("bit plan: averageBits " + average + " does not match its tensors (" + plan.averageBits() + ")");
        }
        return plan;
    }

    private static TensorPlan tensor(JsonNode node, int index) {
        String where = "tensor #" + index;
        if (!node.isObject()) throw new IllegalArgumentException(where + " is not a JSON object");
        checkFields(node, TENSOR_FIELDS, where);
        String name = text(node, "name", where);
        where = "tensor " + name;
        int rows = integer(node, "rows", where);
        int cols = integer(node, "cols", where);
        String metricName = text(node, "metric", where);
        Metric metric;
        try {
            metric = Metric.valueOf(metricName);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(where + ": metric \"" + metricName + "\" is not one of " + Arrays.toString(Metric.values()));
        }
        JsonNode alphaNode = node.get("alpha");
        Double alpha = alphaNode.isNull() ? null : number(node, "alpha", where);
        String digits = text(node, "bits", where);
        if (digits.length() != rows) {
            throw new IllegalArgumentException(where + ": \"bits\" has " + digits.length() + " digits for " + rows + " rows");
        }
        byte[] bits = new byte[rows];
        for (int r = 0; r < rows; r++) {
            char c = digits.charAt(r);
            if (!QuantLimits.isBitWidth(c - '0')) throw new IllegalArgumentException(where + ": bit width '" + c + "' of row " + r + " is not a digit " + QuantLimits.BIT_RANGE);
            bits[r] = (byte) (c - '0');
        }
        TensorPlan plan = new TensorPlan(name, rows, cols, bits, metric, alpha);
        double average = number(node, "averageBits", where);
        if (average != plan.averageBits()) {
            throw new IllegalArgumentException(where + ": averageBits " + average + " does not match its bits (" + plan.averageBits() + ")");
        }
        JsonNode histogramNode = node.get("histogram");
        int[] histogram = new int[QuantLimits.MAX_BITS];
        if (!histogramNode.isArray() || histogramNode.size() != histogram.length) {
            throw new IllegalArgumentException(where + ": \"histogram\" must be an array of 8 counts");
        }
        for (int b = 0; b < histogram.length; b++) {
            JsonNode count = histogramNode.get(b);
            if (!count.isInt()) throw new IllegalArgumentException(where + ": histogram entry " + b + " is not an integer");
            histogram[b] = count.intValue();
        }
        if (!Arrays.equals(histogram, plan.histogram())) {
            throw new IllegalArgumentException(where + ": histogram " + Arrays.toString(histogram)
                    + " does not match its bits " + Arrays.toString(plan.histogram()));
        }
        return plan;
    }

    private static String digits(byte[] bits) {
        StringBuilder sb = new StringBuilder(bits.length);
        for (byte b : bits) sb.append((char) ('0' + b));
        return sb.toString();
    }

    private static void checkFields(JsonNode node, Set<String> expected, String where) {
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String field = it.next();
            if (!expected.contains(field)) throw new IllegalArgumentException(where + ": unknown field \"" + field + "\"");
        }
        for (String field : expected) {
            if (!node.has(field)) throw new IllegalArgumentException(where + ": missing field \"" + field + "\"");
        }
    }

    private static String text(JsonNode node, String field, String where) {
        JsonNode v = node.get(field);
        if (!v.isTextual()) throw new IllegalArgumentException(where + ": \"" + field + "\" must be a string");
        return v.textValue();
    }

    private static int integer(JsonNode node, String field, String where) {
        JsonNode v = node.get(field);
        if (!v.isInt()) throw new IllegalArgumentException(where + ": \"" + field + "\" must be an integer, got " + v);
        return v.intValue();
    }

    private static double number(JsonNode node, String field, String where) {
        JsonNode v = node.get(field);
        if (!v.isNumber()) throw new IllegalArgumentException(where + ": \"" + field + "\" must be a number, got " + v);
        return v.doubleValue();
    }

}
