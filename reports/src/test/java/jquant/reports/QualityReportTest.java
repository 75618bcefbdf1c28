package jquant.reports;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jquant.formats.CheckpointException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class QualityReportTest {

    private static Path evalJson(Path dir, String name, String mode, long bytes, double ppl, Double kl) throws Exception {
        String divergence = kl == null ? "" : ", \"baseResult\": {\"perplexity\": 4.12}, \"divergence\": {\"meanKl\": " + kl
                + ", \"klP99\": " + (kl * 5) + ", \"top1Agreement\": " + (1 - kl) + "}";
        String json = "{\"model\": \"/m/" + name + "\", " + (mode == null ? "" : "\"mode\": \"" + mode + "\", ")
                + "\"fileBytes\": " + bytes + ", \"result\": {\"perplexity\": " + ppl + ", \"stderr\": 0.03, \"scored\": 72263}"
                + divergence + ", \"seconds\": 2.5}";
        return Files.writeString(dir.resolve(name + "-" + mode + ".json"), json);
    }

    @Test
    void writesMarkdownHtmlWithChartsAndJson(@TempDir Path dir) throws Exception {
        List<EvalResult> records = List.of(
                EvalResult.read(evalJson(dir, "q4.jqw", "weight-only", 400_000, 4.75, 0.13)),
                EvalResult.read(evalJson(dir, "q4.jqw", "npu", 400_000, 4.82, 0.15)),
                EvalResult.read(evalJson(dir, "q8.jqw", "weight-only", 600_000, 4.121, 0.0004)),
                EvalResult.read(evalJson(dir, "f32.gguf", null, 1_185_376, 4.1202, null)));
        Path out = dir.resolve("report");
        new QualityReport("test report", records).write(out);

        String md = Files.readString(out.resolve("report.md"));
        assertThat(md).startsWith("# test report").contains("| q4.jqw | npu | 400,000 | 4.8200 |").contains("| f32.gguf | checkpoint | 1,185,376 | 4.1202 |");
        String html = Files.readString(out.resolve("report.html"));
        assertThat(html).contains("<table>", "Perplexity vs size", "Mean KL divergence");
        assertThat(html.split("<img ", -1)).hasSize(4);  // three charts, as inline PNGs
        assertThat(html).contains("src=\"data:image/png;base64,iVBORw0KGgo");
        JsonNode json = new ObjectMapper().readTree(out.resolve("report.json").toFile());
        assertThat(json.at("/evaluations").size()).isEqualTo(4);
        assertThat(json.at("/evaluations/1/meanKl").asDouble()).isEqualTo(0.15);
        assertThat(json.at("/evaluations/3/meanKl").isNull()).isTrue();  // no base: null, not NaN
    }

    @Test
    void chartHasOneSeriesPerModeSortedBySize(@TempDir Path dir) throws Exception {
        QualityReport r = new QualityReport("t", List.of(
                EvalResult.read(evalJson(dir, "b.jqw", "npu", 900, 5.0, 0.2)),
                EvalResult.read(evalJson(dir, "a.jqw", "npu", 300, 7.0, 0.6)),
                EvalResult.read(evalJson(dir, "a.jqw", "weight-only", 300, 6.0, 0.5))));
        var chart = r.chart("t", "ppl", EvalResult::perplexity);
        assertThat(chart.getSeriesMap()).containsOnlyKeys("npu", "weight-only");
        assertThat(chart.getSeriesMap().get("npu").getXData()).containsExactly(300e-6, 900e-6);
        assertThat(chart.getSeriesMap().get("npu").getYData()).containsExactly(7.0, 5.0);
    }

    @Test
    void refusesFilesThatAreNotEvalResults(@TempDir Path dir) throws Exception {
        Path notJson = Files.writeString(dir.resolve("x.json"), "perplexity: 4");
        assertThatThrownBy(() -> EvalResult.read(notJson)).isInstanceOf(CheckpointException.class).hasMessageContaining("x.json");
        Path otherJson = Files.writeString(dir.resolve("y.json"), "{\"plan\": 1}");
        assertThatThrownBy(() -> EvalResult.read(otherJson)).hasMessageContaining("not a 'jquant eval --json' result");
        assertThatThrownBy(() -> new QualityReport("t", List.of())).isInstanceOf(IllegalArgumentException.class);
    }
}
