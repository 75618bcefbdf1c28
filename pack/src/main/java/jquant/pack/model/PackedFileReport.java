package jquant.pack.model;

import jquant.formats.jqw.TensorEncoding;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwLayer;
import jquant.formats.jqw.JqwTensor;
import jquant.formats.weightlet.ChannelBitWidths;
import jquant.quantize.QuantLimits;

import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Map;

/**
 * What {@code jquant inspect model.jqw} shows: a packed model file's metadata summary (model,
 * tokenizer, quantization and smoothing), bytes per layer, and per tensor its encoding, bytes and
 * (weightlet tensors) the histogram of channel bit widths.
 */
public final class PackedFileReport {
    private PackedFileReport() {}

    /** The report as JSON: what {@code jquant inspect --json} prints and its tables show. */
    public static ObjectNode describe(JqwFile f) {
        ObjectMapper json = new ObjectMapper();
        ObjectNode r = json.createObjectNode();
        JsonNode meta = f.metadata();
        r.put("file", f.path().toString());
        r.put("format", meta.path("format").asText());
        r.put("bytes", f.size());
        r.set("model", meta.path("model"));
        JsonNode tok = meta.path("tokenizer");
        ObjectNode tokenizer = r.putObject("tokenizer");
        tokenizer.put("kind", tok.path("kind").asText()).put("size", tok.path("pieces").size())
                .put("bos", tok.path("bos").asInt()).put("eos", tok.path("eos").asInt()).put("addBos", tok.path("addBos").asBoolean());
        r.set("quantization", meta.path(ModelPacker.QUANTIZATION));
        r.put("planTensors", meta.path(ModelPacker.PLAN).path("tensors").size());
        ArrayNode layers = r.putArray("layers");
        ArrayNode tensors = r.putArray("tensors");
        for (JqwLayer l : f.layers()) {
            layers.addObject().put("name", l.name()).put("offset", l.offset()).put("bytes", l.length()).put("tensors", l.tensors().size());
            for (JqwTensor t : l.tensors()) {
                ObjectNode row = tensors.addObject();
                row.put("name", t.name()).put("layer", l.name()).put("encoding", t.encoding());
                ArrayNode shape = row.putArray("shape");
                for (long d : t.shape()) shape.add(d);
                row.put("bytes", t.parts().values().stream().mapToLong(p -> p[1]).sum());
                if (t.encoding().equals(TensorEncoding.WEIGHTLET)) {
                    int[] bits = ChannelBitWidths.decode(f.part(t, TensorEncoding.WIDTHS).toArray(ValueLayout.JAVA_BYTE), TensorEncoding.matrixShape(t)[0]);
                    int[] histogram = new int[QuantLimits.MAX_BITS];
                    for (int b : bits) histogram[b - QuantLimits.MIN_BITS]++;
                    ArrayNode h = row.putArray("bitHistogram");
                    for (int n : histogram) h.add(n);
                    row.put("averageBits", Arrays.stream(bits).average().orElse(0));
                }
                ObjectNode attrs = row.putObject("attrs");
                for (Map.Entry<String, Object> a : t.attrs().entrySet()) attrs.set(a.getKey(), json.valueToTree(a.getValue()));
            }
        }
        return r;
    }
}
