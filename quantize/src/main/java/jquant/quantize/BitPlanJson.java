package jquant.quantize;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.databind.ObjectWriter;
import jquant.formats.AtomicOutput;
import jquant.formats.CheckpointException;
import jquant.formats.FileFormat;
import jquant.formats.InputFiles;
import jquant.formats.JsonRecords;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * The bit plan file: UTF-8 JSON, fields always in this order, two-space indent, '\n' line ends,
 * so the same plan always gives the same bytes.
 * <pre>
 * {
 *   "format" : "jquant-bitplan",
 *   "version" : 4,                  3 for a plan without "wholeFile"
 *   "budget" : 5.0,                 requested average bits per weight, [1, 8]
 *   "averageBits" : 4.998046875,    achieved, over all weights (derived; checked on read)
 *   "smoothing" : "edgeflow",       the rule of the tensors' α: edgeflow | smoothquant, null without α
 *   "model" : {                     the model it was allocated for (null if unknown)
 *     "fingerprint" : "3f…",        calibration's ModelFingerprint, 64 hex digits
 *     "name" : "stories260K.bin"    its file or folder name, for messages
 *   },
 *   "wholeFile" : {                 only when the budget counts the whole file (allocate --whole-file)
 *     "weights" : 6283008,          the model's weights: the budget is bits per weight of the file's tensors
 *     "bytes" : 3275392,            the packed tensors' bytes the allocation counted
 *     "float16" : [ ]               tensors kept in float16 (token_embd, output), not in "tensors"
 *   },
 *   "tensors" : [ {
 *     "name" : "blk.0.attn_q.weight",
 *     "rows" : 64, "cols" : 64,      output channels, channel length
 *     "metric" : "APPROX",           APPROX | EXACT
 *     "alpha" : null,                smoothing factor in [0, 1], null until calibration sets it
 *     "inputClip" : 0.85,            static input range / calibrated max |x / f|, in (0, 1]; null: 1
 *     "averageBits" : 5.0,           derived; checked on read
 *     "histogram" : [ 0, 3, … ],     channels at 1..8 bits (derived; checked on read)
 *     "bits" : "5546…"               one digit '1'..'8' per row, row 0 first
 *   } ]
 * }
 * </pre>
 * The records below are that shape, read and written by Jackson's data binding ({@link JsonRecords}):
 * reading rejects unknown or missing fields, duplicate keys, values of the wrong type and anything
 * inconsistent, naming the field. The version is read first and chooses the shape: version 1 files (no
 * {@code smoothing}: their α, if any, are EdgeFlow's; {@code model} optional, as plans written before it
 * was recorded lack it), version 2 files (no {@code inputClip}: the full range) and version 3 files (no
 * {@code wholeFile}) still read.
 */
public final class BitPlanJson {

    /** Version 2 added {@code smoothing}, version 3 {@code inputClip}, version 4 {@code wholeFile}; versions 1 to 3 still read. */
    public static final FileFormat FORMAT = new FileFormat("bit plan", "jquant-bitplan", 1, 4);
    private static final String WHAT = FORMAT.name();
    /** The version of plans whose budget is the planned tensors' average width. */
    private static final int WITHOUT_WHOLE_FILE = 3;
    private static final ObjectWriter WRITER = JsonRecords.MAPPER.writer(
            new DefaultPrettyPrinter().withObjectIndenter(new DefaultIndenter("  ", "\n")));

    /** What every version starts with, read first to choose the version's shape. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    record Header(@JsonProperty(required = true) String format, @JsonProperty(required = true) int version) {}

    /** Version 4, as written: every field present, {@code smoothing}, {@code model} and {@code wholeFile} null when unknown. */
    @JsonPropertyOrder({"format", "version", "budget", "averageBits", "smoothing", "model", "wholeFile", "tensors"})
    record PlanJson(@JsonProperty(required = true) String format, @JsonProperty(required = true) int version,
                    @JsonProperty(required = true) double budget, @JsonProperty(required = true) double averageBits,
                    @JsonProperty(required = true) String smoothing, @JsonProperty(required = true) ModelJson model,
                    @JsonProperty(required = true) WholeFileJson wholeFile, @JsonProperty(required = true) List<TensorJson> tensors) {}

    /** Versions 2 and 3: no {@code wholeFile}. */
    @JsonPropertyOrder({"format", "version", "budget", "averageBits", "smoothing", "model", "tensors"})
    record PlanJsonV2(@JsonProperty(required = true) String format, @JsonProperty(required = true) int version,
                      @JsonProperty(required = true) double budget, @JsonProperty(required = true) double averageBits,
                      @JsonProperty(required = true) String smoothing, @JsonProperty(required = true) ModelJson model,
                      @JsonProperty(required = true) List<TensorJson> tensors) {}

    @JsonPropertyOrder({"weights", "bytes", "float16"})
    record WholeFileJson(@JsonProperty(required = true) long weights, @JsonProperty(required = true) long bytes,
                         @JsonProperty(required = true) List<String> float16) {}

    /** Version 1 as shipped: no smoothing rule (any α is EdgeFlow's); the model was added later, so optional. */
    record PlanJsonV1(@JsonProperty(required = true) String format, @JsonProperty(required = true) int version,
                      @JsonProperty(required = true) double budget, @JsonProperty(required = true) double averageBits,
                      ModelJson model, @JsonProperty(required = true) List<TensorJson> tensors) {}

    @JsonPropertyOrder({"fingerprint", "name"})
    record ModelJson(@JsonProperty(required = true) String fingerprint, @JsonProperty(required = true) String name) {}

    /** A tensor; {@code inputClip} is absent (null) in versions 1 and 2. */
    @JsonPropertyOrder({"name", "rows", "cols", "metric", "alpha", "inputClip", "averageBits", "histogram", "bits"})
    record TensorJson(@JsonProperty(required = true) String name, @JsonProperty(required = true) int rows,
                      @JsonProperty(required = true) int cols, @JsonProperty(required = true) Metric metric,
                      @JsonProperty(required = true) Double alpha, Double inputClip, @JsonProperty(required = true) double averageBits,
                      @JsonProperty(required = true) int[] histogram, @JsonProperty(required = true) String bits) {}

    private BitPlanJson() {}

    public static byte[] toBytes(BitPlan plan) {
        List<TensorJson> tensors = plan.tensors().stream().map(t -> new TensorJson(t.name(), t.rows(), t.cols(), t.metric(),
                t.alpha(), t.inputClip(), t.averageBits(), t.histogram(), digits(t.bits()))).toList();
        String smoothing = plan.smoothing() == null ? null : plan.smoothing().label();
        ModelJson model = plan.model() == null ? null : new ModelJson(plan.model().fingerprint(), plan.model().name());
        BitPlan.WholeFile whole = plan.wholeFile();
        // A plan without a whole-file budget is written as version 3, so jquant before version 4 reads it too.
        Object json = whole == null
                ? new PlanJsonV2(FORMAT.identifier(), WITHOUT_WHOLE_FILE, plan.budget(), plan.averageBits(), smoothing, model, tensors)
                : new PlanJson(FORMAT.identifier(), FORMAT.current(), plan.budget(), plan.averageBits(), smoothing, model,
                        new WholeFileJson(whole.weights(), whole.bytes(), whole.float16()), tensors);
        try {
            byte[] bytes = WRITER.writeValueAsBytes(json);
            byte[] line = Arrays.copyOf(bytes, bytes.length + 1);
            line[bytes.length] = '\n';
            return line;
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
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

    public static BitPlan fromBytes(byte[] json) {
        Header header = JsonRecords.read(WHAT, json, Header.class);
        FORMAT.checkIdentifier("format", header.format());
        BitPlan plan;
        double averageBits;
        int version = FORMAT.checkVersion(header.version());
        if (version == 1) {
            PlanJsonV1 v1 = JsonRecords.read(WHAT, json, PlanJsonV1.class);
            plan = new BitPlan(v1.budget(), tensors(v1.tensors())).withModel(model(v1.model()));
            averageBits = v1.averageBits();
        } else if (version < 4) {
            PlanJsonV2 v2 = JsonRecords.read(WHAT, json, PlanJsonV2.class);
            plan = new BitPlan(v2.budget(), tensors(v2.tensors()), smoothing(v2.smoothing()), model(v2.model()));
            averageBits = v2.averageBits();
        } else {
            PlanJson v4 = JsonRecords.read(WHAT, json, PlanJson.class);
            BitPlan.WholeFile wholeFile;
            try {
                wholeFile = v4.wholeFile() == null ? null : new BitPlan.WholeFile(v4.wholeFile().weights(), v4.wholeFile().bytes(), v4.wholeFile().float16());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(WHAT + ": wholeFile: " + e.getMessage(), e);
            }
            plan = new BitPlan(v4.budget(), tensors(v4.tensors()), smoothing(v4.smoothing()), model(v4.model()), wholeFile);
            averageBits = v4.averageBits();
        }
        if (averageBits != plan.averageBits()) {
            throw new IllegalArgumentException(WHAT + ": averageBits " + averageBits + " does not match its tensors (" + plan.averageBits() + ")");
        }
        return plan;
    }

    private static SmoothingRule smoothing(String label) {
        try {
            return label == null ? null : SmoothingRule.of(label);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(WHAT + ": " + e.getMessage(), e);
        }
    }

    private static BitPlan.ModelId model(ModelJson json) {
        return json == null ? null : new BitPlan.ModelId(json.fingerprint(), json.name());
    }

    private static List<TensorPlan> tensors(List<TensorJson> json) {
        return json.stream().map(BitPlanJson::tensor).toList();
    }

    private static TensorPlan tensor(TensorJson json) {
        String where = "tensor " + json.name();
        String digits = json.bits();
        if (digits.length() != json.rows()) {
            throw new IllegalArgumentException(where + ": \"bits\" has " + digits.length() + " digits for " + json.rows() + " rows");
        }
        byte[] bits = new byte[json.rows()];
        for (int r = 0; r < bits.length; r++) {
            char c = digits.charAt(r);
            if (!QuantLimits.isBitWidth(c - '0')) throw new IllegalArgumentException(where + ": bit width '" + c + "' of row " + r + " is not a digit " + QuantLimits.BIT_RANGE);
            bits[r] = (byte) (c - '0');
        }
        TensorPlan plan = new TensorPlan(json.name(), json.rows(), json.cols(), bits, json.metric(), json.alpha(), json.inputClip());
        if (json.averageBits() != plan.averageBits()) {
            throw new IllegalArgumentException(where + ": averageBits " + json.averageBits() + " does not match its bits (" + plan.averageBits() + ")");
        }
        if (!Arrays.equals(json.histogram(), plan.histogram())) {
            throw new IllegalArgumentException(where + ": histogram " + Arrays.toString(json.histogram())
                    + " does not match its bits " + Arrays.toString(plan.histogram()));
        }
        return plan;
    }

    private static String digits(byte[] bits) {
        StringBuilder sb = new StringBuilder(bits.length);
        for (byte b : bits) sb.append((char) ('0' + b));
        return sb.toString();
    }
}
