package jquant.distributed;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.reports.EvalResult;
import jquant.reports.Evaluation;
import jquant.runtime.PackedModelLoader;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

@Slow
class ShardedEvaluationTest {

    /**
     * tinystories-6M's Q4_0 file against its float32 one on a piece of the TinyStories sample: in four shards through
     * Beam's direct runner, the JSON is the one-process evaluation's, digit for digit, but for the seconds it took.
     */
    @Test
    void fourShardsGiveTheOneProcessJsonDigitForDigit(@TempDir Path dir) throws Exception {
        String sample = Files.readString(SharedFiles.data("tinystories-valid-sample.txt"));
        Path text = Files.writeString(dir.resolve("text.txt"), sample.substring(0, 24_000));
        Evaluation.Request request = Evaluation.Request.of(SharedFiles.model("tinystories-6M/tinystories-6M-Q4_0.gguf"), text).ctx(128)
                .base(SharedFiles.model("tinystories-6M/tinystories-6M-f32.gguf")).mode(PackedModelLoader.Mode.WEIGHT_ONLY).series("q4_0");
        Path whole = dir.resolve("whole.json"), sharded = dir.resolve("sharded.json");
        Evaluation.run(request, (done, total, where) -> {}).write(whole);
        EvalResult result = ShardedEvaluation.run(request, 4, Engine.direct(4), sharded);

        assertThat(result.scored()).isGreaterThan(1000);
        assertThat(result.meanKl()).isPositive();
        assertThat(withoutSeconds(sharded)).isEqualTo(withoutSeconds(whole));
    }

    private static String withoutSeconds(Path json) throws Exception {
        ObjectNode tree = (ObjectNode) new ObjectMapper().readTree(json.toFile());
        tree.remove("seconds");
        return tree.toPrettyString();
    }
}
