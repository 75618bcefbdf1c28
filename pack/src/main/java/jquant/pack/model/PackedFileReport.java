package jquant.pack.model;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import jquant.formats.CheckpointException;
import jquant.formats.JsonRecords;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwLayer;
import jquant.formats.jqw.JqwModelMetadata;
import jquant.formats.jqw.JqwTensor;
import jquant.formats.jqw.QuantizationMetadata;
import jquant.formats.jqw.TensorEncoding;
import jquant.formats.weightlet.ChannelBitWidths;
import jquant.quantize.QuantLimits;

/**
 * What {@code jquant inspect model.jqw} shows, and as JSON what {@code inspect --json} prints: a packed
 * model file's metadata summary (model, tokenizer, quantization and smoothing), bytes per layer, and per
 * tensor its encoding, bytes and (weightlet tensors) the histogram of channel bit widths.
 *
 * @param format      the metadata's {@code format} ({@value ModelPacker#FORMAT})
 * @param planTensors tensors in the recorded bit plan
 */
public record PackedFileReport(String file, String format, long bytes, JqwModelMetadata.ModelJson model, Tokenizer tokenizer,
                               QuantizationMetadata quantization, int planTensors, List<Layer> layers, List<TensorRow> tensors) {

    /** The tokenizer's kind and size, BOS and EOS. */
    public record Tokenizer(String kind, int size, int bos, int eos, boolean addBos) {}

    public record Layer(String name, long offset, long bytes, int tensors) {}

    /** One tensor; a weightlet tensor also has its channels at 1..8 bits and their average. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record TensorRow(String name, String layer, String encoding, long[] shape, long bytes, int[] bitHistogram, Double averageBits,
                            Map<String, Object> attrs) {}

    /** The metadata's top-level {@code format}. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    record Format(@JsonProperty(required = true) String format) {}

    public static PackedFileReport describe(JqwFile f) throws CheckpointException {
        JqwModelMetadata.TokenizerJson tok = JqwModelMetadata.tokenizer(f);
        List<Layer> layers = new ArrayList<>();
        List<TensorRow> tensors = new ArrayList<>();
        for (JqwLayer l : f.layers()) {
            layers.add(new Layer(l.name(), l.offset(), l.length(), l.tensors().size()));
            for (JqwTensor t : l.tensors()) {
                int[] histogram = null;
                Double averageBits = null;
                if (t.encoding().equals(TensorEncoding.WEIGHTLET)) {
                    int[] bits = ChannelBitWidths.decode(f.part(t, TensorEncoding.WIDTHS).toArray(ValueLayout.JAVA_BYTE), TensorEncoding.matrixShape(t)[0]);
                    histogram = new int[QuantLimits.MAX_BITS];
                    for (int b : bits) histogram[b - QuantLimits.MIN_BITS]++;
                    averageBits = Arrays.stream(bits).average().orElse(0);
                }
                tensors.add(new TensorRow(t.name(), l.name(), t.encoding(), t.shape(), t.parts().values().stream().mapToLong(p -> p[1]).sum(),
                        histogram, averageBits, t.attrs()));
            }
        }
        String format;
        try {
            format = JsonRecords.convert("metadata", f.metadata(), Format.class).format();
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(f.path(), e.getMessage(), e);
        }
        return new PackedFileReport(f.path().toString(), format, f.size(), JqwModelMetadata.model(f),
                new Tokenizer(tok.kind().name(), tok.pieces().size(), tok.bos(), tok.eos(), tok.addBos()), QuantizationMetadata.of(f),
                PackedModelVerifier.plan(f).tensors().size(), layers, tensors);
    }
}
