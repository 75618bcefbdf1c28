package jquant.formats.jqw;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.util.List;
import java.util.Map;
import jquant.formats.CheckpointException;

/**
 * The {@code quantization} object of a packed model file's metadata ({@code docs/jqw-format.md}): what
 * the file was packed with, written by the packer (jquant.pack.model.ModelPacker) and read back by
 * Jackson's data binding (verify, eval, inspect). Files packed before {@code keepType}, {@code rounding} and the smoothing's
 * {@code rule} were recorded lack them: their kept tensors are f32, their rounding rtn, their rule
 * EdgeFlow's.
 *
 * @param keep             canonical names of the tensors kept out of the plan
 * @param activationScales whether the linear layers carry static int8 activation scales (packed with stats)
 * @param smoothing        the calibration stats applied, or null
 */
@JsonIgnoreProperties(ignoreUnknown = true)
@JsonPropertyOrder({"budget", "averageBits", "keep", "keepType", "activationScales", "rounding", "smoothing"})
public record QuantizationMetadata(@JsonProperty(required = true) double budget, @JsonProperty(required = true) double averageBits,
                                   @JsonProperty(required = true) List<String> keep, String keepType,
                                   @JsonProperty(required = true) boolean activationScales, String rounding,
                                   @JsonProperty(required = true) Smoothing smoothing) {

    /** Metadata key of this object. */
    public static final String SECTION = "quantization";

    /**
     * @param head  whether the classifier was smoothed too
     * @param alpha α per layer group, in forward order
     */
    @JsonIgnoreProperties(ignoreUnknown = true)
    @JsonPropertyOrder({"modelFingerprint", "statsSha256", "head", "rule", "alpha"})
    public record Smoothing(@JsonProperty(required = true) String modelFingerprint, @JsonProperty(required = true) String statsSha256,
                            @JsonProperty(required = true) boolean head, String rule,
                            @JsonProperty(required = true) Map<String, Double> alpha) {

        /** The smoothing rule's label; files from before SmoothQuant's rule was recorded are EdgeFlow's. */
        public String ruleLabel() {
            return rule == null ? "edgeflow" : rule;
        }
    }

    /** The rounding's label; files from before GPTQ were rounded to nearest. */
    public String roundingLabel() {
        return rounding == null ? "rtn" : rounding;
    }

    /** How kept tensors are stored ({@code f32}, {@code f16}, {@code q8}); files from before there was a choice kept them as f32. */
    public String keepTypeLabel() {
        return keepType == null ? "f32" : keepType;
    }

    /** The section of {@code file}, or a {@link CheckpointException} naming the file and what is wrong with it. */
    public static QuantizationMetadata of(JqwFile file) throws CheckpointException {
        return file.section(SECTION, QuantizationMetadata.class);
    }
}
