package jquant.reports;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jquant.formats.CheckpointException;

import java.io.IOException;
import java.nio.file.Path;

/**
 * One evaluation as {@code jquant eval --json} writes it: the model, how it was run, its perplexity
 * and, when it was compared with a base model, the divergence from it.
 *
 * @param model         model file or folder
 * @param mode          run mode of a packed model ({@code weight-only}, {@code npu}), or "" for a checkpoint
 * @param fileBytes     bytes of the model on disk
 * @param perplexity    perplexity on the text
 * @param stderr        its standard error
 * @param scored        scored predictions
 * @param basePerplexity the base model's perplexity, or NaN without a base
 * @param meanKl        mean KL(base ‖ model), or NaN
 * @param klP99         99th percentile of the per-token KL, or NaN
 * @param top1          top-1 agreement with the base, or NaN
 * @param seconds       wall-clock seconds of the evaluation
 */
public record EvalRecord(String model, String mode, long fileBytes, double perplexity, double stderr, int scored,
                         double basePerplexity, double meanKl, double klP99, double top1, double seconds) {

    /** Reads one {@code jquant eval --json} file; a file of another shape is an error naming it. */
    public static EvalRecord read(Path file) throws IOException {
        JsonNode j;
        try {
            j = new ObjectMapper().readTree(file.toFile());
        } catch (IOException e) {
            throw new CheckpointException(file, "not a JSON file: " + e.getMessage());
        }
        JsonNode r = j == null ? null : j.get("result");
        if (r == null || !r.has("perplexity") || !j.has("model")) {
            throw new CheckpointException(file, "not a 'jquant eval --json' result (no model or result.perplexity)");
        }
        JsonNode b = j.path("baseResult");
        JsonNode d = j.path("divergence");
        return new EvalRecord(j.get("model").asText(), j.path("mode").asText(""), j.path("fileBytes").asLong(-1),
                r.get("perplexity").asDouble(), r.path("stderr").asDouble(Double.NaN), r.path("scored").asInt(),
                b.path("perplexity").asDouble(Double.NaN), d.path("meanKl").asDouble(Double.NaN),
                d.path("klP99").asDouble(Double.NaN), d.path("top1Agreement").asDouble(Double.NaN),
                j.path("seconds").asDouble(Double.NaN));
    }

    /** A short label: the file name, with the mode for packed models. */
    public String label() {
        String name = Path.of(model).getFileName().toString();
        return mode.isEmpty() ? name : name + " (" + mode + ")";
    }

    public boolean hasBase() {
        return !Double.isNaN(meanKl);
    }

}
