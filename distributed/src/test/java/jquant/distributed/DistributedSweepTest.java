package jquant.distributed;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jquant.calibration.Calibrator;
import jquant.pack.model.ModelPacker;
import jquant.pipeline.QuantizationMethod;
import jquant.pipeline.Sweep;
import jquant.reports.QualityReport;
import jquant.runtime.PackedModelLoader;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

@Slow
class DistributedSweepTest {

    /**
     * A small sweep of stories260K three ways: in this JVM without an engine ({@link Sweep#run}), through Beam's direct
     * runner, and on a local Flink cluster of two task managers. The cluster's run has
     * a corrupt plan planted for one packed file: its two cells fail with their error in the report and the other six
     * finish, with llama.cpp's Q8_0 file of the model, compared; with the plan removed, the same folder resumes, makes
     * those two cells and skips the rest. All three reports then hold the same cells with the same figures, digit for digit.
     */
    @Test
    void directRunnerAndATwoWorkerFlinkClusterGiveTheOneJvmSweep(@TempDir Path dir) throws Exception {
        String sample = Files.readString(SharedFiles.data("tinystories-valid-sample.txt"));
        Path calibration = Files.writeString(dir.resolve("calib.txt"), sample.substring(0, 6000));
        Path eval = Files.writeString(dir.resolve("eval.txt"), sample.substring(6000, 12000));
        Path model = SharedFiles.model("stories260K.bin");

        Sweep.run(options(model, eval, calibration, dir.resolve("jvm")), new Quiet());
        DistributedSweep.run(options(model, eval, calibration, dir.resolve("direct")), Engine.direct(1), new Quiet(), false);

        Sweep.Options onCluster = options(model, eval, calibration, dir.resolve("flink"));
        Path plan = Files.createDirectories(onCluster.out().resolve("uniform-6")).resolve("plan.json");
        Files.writeString(plan, "{\"not\": \"a plan\"");
        Engine flink = Engine.localFlink(2);
        QualityReport failedOne = DistributedSweep.run(onCluster, flink, new Quiet(), false);
        assertThat(failedOne.failures()).extracting(QualityReport.Failure::label).containsExactly("uniform B=6 weight-only", "uniform B=6 npu");
        assertThat(failedOne.failures()).allSatisfy(f -> assertThat(f.error()).startsWith(plan.toString()));
        JsonNode partial = report(onCluster);
        assertThat(partial.at("/evaluations").size()).isEqualTo(7);
        assertThat(partial.at("/failed/0/error").asText()).startsWith(plan.toString());
        assertThat(Files.readString(onCluster.out().resolve("report/report.md"))).contains("## Failed", "uniform B=6 npu");

        Files.delete(plan);
        QualityReport resumed = DistributedSweep.run(onCluster, flink, new Quiet(), false);
        assertThat(resumed.failures()).isEmpty();

        List<String> jvm = figures(report(options(model, eval, calibration, dir.resolve("jvm"))));
        assertThat(jvm).hasSize(9);
        assertThat(jvm.getLast()).startsWith("stories260K-Q8_0 null 379168 ");
        assertThat(figures(report(options(model, eval, calibration, dir.resolve("direct"))))).containsExactlyElementsOf(jvm);
        assertThat(figures(report(onCluster))).containsExactlyElementsOf(jvm);
    }

    private static Sweep.Options options(Path model, Path eval, Path calibration, Path out) {
        Calibrator.Options defaults = Calibrator.Options.defaults();
        return new Sweep.Options(model, null, eval, calibration, 64, List.of(4.0, 6.0), List.of(QuantizationMethod.UNIFORM, QuantizationMethod.OURS),
                List.of(PackedModelLoader.Mode.WEIGHT_ONLY, PackedModelLoader.Mode.NPU),
                new Calibrator.Options(1024, defaults.context(), defaults.sampleTokens(), List.of(4.0, 6.0), false, defaults.seed()),
                ModelPacker.KEEPABLE, ModelPacker.KeepType.f16, List.of(SharedFiles.model("stories260K-Q8_0.gguf")), out);
    }

    private static JsonNode report(Sweep.Options o) throws Exception {
        return new ObjectMapper().readTree(o.out().resolve("report/report.json").toFile());
    }

    /** Each evaluation's series, budget and figures, in the report's order, with all their digits. */
    private static List<String> figures(JsonNode report) {
        List<String> rows = new ArrayList<>();
        for (JsonNode e : report.at("/evaluations")) {
            rows.add(String.join(" ", e.get("series").asText(), e.get("budget").asText(), e.get("fileBytes").asText(), e.get("perplexity").asText(),
                    e.get("stderr").asText(), e.get("meanKl").asText(), e.get("klP99").asText(), e.get("top1Agreement").asText()));
        }
        return rows;
    }

    private static final class Quiet implements Sweep.Listener {
        @Override
        public void calibrating(long done, long total, String stage) {}

        @Override
        public void working(Sweep.Cell cell, String step) {}

        @Override
        public void redoing(Path packed, String reason) {}

        @Override
        public void cellDone(Sweep.Outcome outcome, int done, int total) {}
    }
}
