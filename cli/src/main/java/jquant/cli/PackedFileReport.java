package jquant.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwLayer;
import jquant.formats.jqw.JqwTensor;
import jquant.pack.ChannelBitWidths;
import jquant.pack.model.ModelPacker;
import jquant.pack.model.TensorEncoding;

import java.io.PrintWriter;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Map;

/**
 * {@code jquant inspect model.jqw}: a packed model file's metadata summary (model, tokenizer,
 * quantization and smoothing), bytes per layer, and per tensor its encoding, bytes and (weightlet
 * tensors) the histogram of channel bit widths. The JSON form is {@link #describe}; the tables print
 * the same content.
 */
final class PackedFileReport {
    private PackedFileReport() {}

    static ObjectNode describe(JqwFile f) {
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
                    int[] histogram = new int[8];
                    for (int b : bits) histogram[b - 1]++;
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

    static void print(ObjectNode r, PrintWriter out) {
        JsonNode m = r.path("model"), q = r.path("quantization"), tok = r.path("tokenizer");
        out.printf("%s  (%s, %,d bytes)%n", r.path("file").asText(), r.path("format").asText(), r.path("bytes").asLong());
        out.printf("  dim %d, hidden %d, layers %d, heads %d / kv heads %d, vocab %d, context %d, rope %s, %s embeddings%n",
                m.path("dim").asInt(), m.path("hiddenDim").asInt(), m.path("layers").asInt(), m.path("heads").asInt(), m.path("kvHeads").asInt(),
                m.path("vocabSize").asInt(), m.path("maxSeqLen").asInt(), m.path("rope").asText().toLowerCase().replace('_', '-'),
                m.path("tiedEmbeddings").asBoolean() ? "tied" : "separate");
        out.printf("  tokenizer: %s, %d tokens, BOS %d, EOS %d%n", tok.path("kind").asText().toLowerCase(), tok.path("size").asInt(),
                tok.path("bos").asInt(), tok.path("eos").asInt());
        out.printf("  plan: budget %s, average %.4f bits over %d tensors; kept float32: %s; static activation scales: %s%n",
                q.path("budget").asText(), q.path("averageBits").asDouble(), r.path("planTensors").asInt(),
                q.path("keep").isEmpty() ? "none" : q.path("keep").toString(), q.path("activationScales").asBoolean() ? "yes" : "no");
        JsonNode s = q.path(ModelPacker.SMOOTHING);
        if (s.isObject()) {
            out.printf("  smoothing: stats SHA-256 %s, model fingerprint %s, classifier smoothed: %s%n",
                    s.path(ModelPacker.STATS_SHA256).asText(), s.path(ModelPacker.MODEL_FINGERPRINT).asText(), s.path("head").asBoolean());
            StringBuilder alphas = new StringBuilder("  α:");
            s.path("alpha").properties().forEach(e -> alphas.append(String.format(" %s %.2f", e.getKey(), e.getValue().asDouble())));
            out.println(alphas);
        } else {
            out.println("  smoothing: none");
        }
        out.println();
        out.printf("  %-12s %12s %12s %8s%n", "layer", "offset", "bytes", "tensors");
        for (JsonNode l : r.path("layers")) {
            out.printf("  %-12s %12d %,12d %8d%n", l.path("name").asText(), l.path("offset").asLong(), l.path("bytes").asLong(), l.path("tensors").asInt());
        }
        out.println();
        out.printf("  %-18s %-10s %-12s %12s %7s  %-40s %s%n", "tensor", "encoding", "shape", "bytes", "avg", "channels at 1..8 bits", "input scale");
        for (JsonNode t : r.path("tensors")) {
            StringBuilder shape = new StringBuilder();
            for (JsonNode d : t.path("shape")) shape.append(shape.isEmpty() ? "" : "×").append(d.asLong());
            StringBuilder h = new StringBuilder();
            for (JsonNode n : t.path("bitHistogram")) h.append(String.format("%5d", n.asInt()));
            JsonNode in = t.path("attrs").path(TensorEncoding.INPUT_SCALE);
            out.printf("  %-18s %-10s %-12s %,12d %7s  %-40s %s%n", t.path("name").asText(), t.path("encoding").asText(), shape,
                    t.path("bytes").asLong(), t.has("averageBits") ? String.format("%.3f", t.path("averageBits").asDouble()) : "",
                    h, in.isNumber() ? String.format("%.4g", in.asDouble()) : "");
        }
    }
}
