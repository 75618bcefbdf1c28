package jquant.reports;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jquant.formats.CheckpointException;
import jquant.runtime.Perplexity;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class QualityReportTest {

    private static Path evalJson(Path dir, String name, String mode, long bytes, double ppl, Double kl) throws Exception {
        String divergence = kl == null ? "" : ", \"base\": \"/m/base.bin\", \"baseResult\": {\"perplexity\": 4.12, \"meanNll\": 1.41}, \"divergence\": {\"meanKl\": " + kl
                + ", \"klP99\": " + (kl * 5) + ", \"top1Agreement\": " + (1 - kl) + "}";
        String json = "{\"model\": \"/m/" + name + "\", \"data\": \"/d/text.txt\", \"ctx\": 256, " + (mode == null ? "" : "\"mode\": \"" + mode + "\", ")
                + "\"fileBytes\": " + bytes + ", \"result\": {\"perplexity\": " + ppl + ", \"stderr\": 0.03, \"tokens\": 74000, \"scored\": 72263}"
                + divergence + ", \"seconds\": 2.5}";
        return Files.writeString(dir.resolve(name + "-" + mode + ".json"), json);
    }

    /** Per-token figures of a model whose NLL is the base's plus {@code shift} plus noise; the same tokens for every call. */
    private static EvalResult evaluated(String series, String mode, double budget, long bytes, double shift, long seed) {
        int n = 2000;
        SplittableRandom tokens = new SplittableRandom(1), noise = new SplittableRandom(seed);
        float[] base = new float[n], nll = new float[n], kl = new float[n];
        double sum = 0, baseSum = 0, klSum = 0;
        for (int t = 0; t < n; t++) {
            base[t] = (float) (0.5 + 3 * tokens.nextDouble());
            nll[t] = (float) (base[t] + shift + 0.05 * noise.nextGaussian());
            kl[t] = (float) Math.abs(shift + 0.01 * noise.nextGaussian());
            sum += nll[t];
            baseSum += base[t];
            klSum += kl[t];
        }
        return new EvalResult("/m/" + series + "-" + budget + ".jqw", "/d/text.txt", "cafe", 256, mode, series, bytes, 5_000_000,
                new EvalResult.Quantization(budget, budget, "rtn", "edgeflow"), new Perplexity.Result(Math.exp(sum / n), 0.03, sum / n, 40000, 150, n),
                "/m/base.bin", new Perplexity.Result(Math.exp(baseSum / n), 0.03, baseSum / n, 40000, 150, n),
                new EvalResult.Divergence(klSum / n, 0.1, 0.2, 0.9), 1, 2, new EvalResult.TokenFigures(nll, base, kl));
    }

    @Test
    void writesMarkdownHtmlWithChartsAndJson(@TempDir Path dir) throws Exception {
        List<EvalResult> records = List.of(
                evaluated("uniform", "npu", 4, 2_600_000, 0.05, 2), evaluated("edgeflow", "npu", 4, 2_610_000, 0.02, 3),
                evaluated("uniform", "npu", 5, 3_200_000, 0.01, 4), evaluated("edgeflow", "npu", 5, 3_210_000, 0.0102, 5),
                evaluated("edgeflow", "weight-only", 5, 3_210_000, 0.004, 6));
        Path out = dir.resolve("report");
        new QualityReport("test report", records).write(out);

        String md = Files.readString(out.resolve("report.md"));
        assertThat(md).startsWith("# test report").contains("Base model base.bin: perplexity", "Text text.txt (SHA-256 cafe…), ctx 256: 40,000 tokens, 150 windows, 2,000 scored")
                .contains("| edgeflow · npu | 4 | 2,610,000 | 4.176 |");
        // Paired: at 4 bits EdgeFlow is really better than uniform; at 5 bits the two differ by 0.0002 nats, inside the noise.
        assertThat(md).contains("| uniform · npu B=4 | edgeflow · npu B=4 | +0.03").contains("edgeflow · npu B=4 better")
                .contains("| uniform · npu B=5 | edgeflow · npu B=5 |").contains("no real difference");
        String html = Files.readString(out.resolve("report.html"));
        assertThat(html).contains("<table>", "Perplexity by budget", "Mean KL divergence from the base by budget", "Pareto: mean KL divergence",
                "Top-1 agreement with the base by budget", "Paired comparisons");
        assertThat(html.split("<img ", -1)).hasSize(5);  // four charts, as inline PNGs
        assertThat(html).contains("src=\"data:image/png;base64,iVBORw0KGgo");
        JsonNode json = new ObjectMapper().readTree(out.resolve("report.json").toFile());
        assertThat(json.at("/evaluations").size()).isEqualTo(5);
        assertThat(json.at("/base/model").asText()).isEqualTo("/m/base.bin");
        assertThat(json.at("/text/scored").asInt()).isEqualTo(2000);
        assertThat(json.at("/series").size()).isEqualTo(3);
        assertThat(json.at("/series/1/colour").asText()).isEqualTo(json.at("/series/2/colour").asText());  // edgeflow, in both modes
        assertThat(json.at("/series/1/marker").asText()).isEqualTo("square");
        assertThat(json.at("/series/2/marker").asText()).isEqualTo("circle");
        assertThat(json.at("/evaluations/1/bitsPerWeight").asDouble()).isEqualTo(8 * 2_610_000 / 5e6);
        assertThat(json.at("/evaluations/1/threads").asInt()).isEqualTo(2);
        assertThat(json.at("/evaluations/1/nllVsBase/low").asDouble()).isGreaterThan(0.015);
        assertThat(json.at("/evaluations/1/klStderr").asDouble()).isBetween(1e-4, 1e-3);
        assertThat(json.at("/pairedComparisons").size()).isEqualTo(2);  // one pair per (mode, budget) with two series
        assertThat(json.at("/pairedComparisons/0/verdict").asText()).isEqualTo("edgeflow · npu B=4 better");
    }

    /** One colour per series in every chart (the method's; the mode picks marker and line), error bars from the evaluations' ±. */
    @Test
    void chartsKeepSeriesColoursAndErrorBars() {
        QualityReport r = new QualityReport("t", List.of(evaluated("uniform", "npu", 4, 2_600_000, 0.05, 2), evaluated("edgeflow", "npu", 4, 2_610_000, 0.02, 3),
                evaluated("edgeflow", "npu", 6, 3_900_000, 0.002, 7)));
        var ppl = ReportCharts.perplexityChart(r, r.budgetAxis(), "p");
        var kl = ReportCharts.paretoChart(r);
        for (String s : List.of("uniform · npu", "edgeflow · npu")) {
            assertThat(kl.getSeriesMap().get(s).getLineColor()).isEqualTo(ppl.getSeriesMap().get(s).getLineColor());
        }
        assertThat(ppl.getSeriesMap().get("uniform · npu").getLineColor()).isNotEqualTo(ppl.getSeriesMap().get("edgeflow · npu").getLineColor());
        assertThat(ppl.getSeriesMap().get("edgeflow · npu").getExtraValues()).containsExactly(0.03, 0.03);
        assertThat(kl.getSeriesMap()).containsKey("Pareto front");
    }

    /**
     * A sweep's report draws quality by budget; the x ticks read as real values: two files of 11.6 and 32.5
     * bits per weight were ticked "12" and "33" (XChart ticks evenly spaced points at their values).
     */
    @Test
    void xAxisIsTheBudgetOrTheSizeWithRealTickValues() throws Exception {
        QualityReport r = new QualityReport("t", List.of(evaluated("uniform", "npu", 4, 7_250_000, 0.05, 2), evaluated("uniform", "npu", 8, 20_312_500, 0.01, 3)));
        var bySize = ReportCharts.chart(r, r.sizeAxis(), "p", "perplexity", EvalResult::perplexity, EvalResult::stderr, false);
        assertThat(bySize.getXAxisTitle()).isEqualTo("bits per weight (whole file)");
        assertThat(bySize.getSeriesMap().get("uniform · npu").getXData()).containsExactly(11.6, 32.5);
        assertThat(renderedTicks(bySize, "getXAxis")).containsExactly("11.6", "32.5");

        var byBudget = ReportCharts.perplexityChart(r, r.budgetAxis(), "p");
        assertThat(byBudget.getXAxisTitle()).isEqualTo("budget (bits per weight of the quantized layers)");
        assertThat(byBudget.getSeriesMap().get("uniform · npu").getXData()).containsExactly(4.0, 8.0);
        assertThat(renderedTicks(byBudget, "getXAxis")).containsExactly("4.0", "8.0");
        assertThat(ReportCharts.xPattern(0.0010, 0.0037)).isEqualTo("0.0000#");
        assertThat(ReportCharts.xPattern(5.9, 9.2)).isEqualTo("0.0#");
        assertThat(ReportCharts.pattern(5.9, 9.2)).isEqualTo("0.0");  // y: ticks at round steps, one precision

        EvalResult checkpoint = new EvalResult("/m/q4.gguf", "/d/text.txt", "cafe", 256, "", "", 3_000_000, 5_000_000, null, r.records().getFirst().result(),
                null, null, null, 1, 1, null);
        assertThat(new QualityReport("t", List.of(r.records().getFirst(), checkpoint)).budgetAxis()).isNull();  // a file without a budget: by size
    }

    /** Series at one budget are spread a dodge step apart, in series order around the budget; a point alone keeps its x. */
    @Test
    void seriesThatShareAnXAreDodgedSoEachErrorBarShows() {
        EvalResult u4 = evaluated("uniform", "npu", 4, 2_600_000, 0.05, 2), e4 = evaluated("edgeflow", "npu", 4, 2_610_000, 0.02, 3);
        EvalResult w4 = evaluated("edgeflow", "weight-only", 4, 2_610_000, 0.01, 4), e6 = evaluated("edgeflow", "npu", 6, 3_900_000, 0.002, 7);
        QualityReport r = new QualityReport("t", List.of(u4, e4, w4, e6));
        double step = ReportCharts.DODGE * (6 - 4);
        var ppl = ReportCharts.perplexityChart(r, r.budgetAxis(), "p");
        assertThat(ppl.getSeriesMap().get("uniform · npu").getXData()).containsExactly(4 - step);
        assertThat(ppl.getSeriesMap().get("edgeflow · npu").getXData()).containsExactly(4.0, 6.0);
        assertThat(ppl.getSeriesMap().get("edgeflow · weight-only").getXData()).containsExactly(4 + step);
        // By size: the two edgeflow files are one file (same bytes), uniform's is 0.4% smaller, closer than a step: one group.
        var pareto = ReportCharts.paretoChart(r);
        double[] x = {pareto.getSeriesMap().get("uniform · npu").getXData()[0], pareto.getSeriesMap().get("edgeflow · npu").getXData()[0],
                pareto.getSeriesMap().get("edgeflow · weight-only").getXData()[0]};
        assertThat(x[1] - x[0]).isCloseTo(x[2] - x[1], org.assertj.core.data.Offset.offset(1e-12));
        assertThat(x[1] - x[0]).isCloseTo(ReportCharts.DODGE * (r.x(e6) - r.x(u4)), org.assertj.core.data.Offset.offset(1e-12));
        assertThat(pareto.getSeriesMap().get("edgeflow · npu").getXData()[1]).isEqualTo(r.x(e6));
    }

    /**
     * The base model is one dashed line in the perplexity chart, whatever the number of series; an evaluation
     * of the base itself (an f32 file at 32 bits per weight, KL 0) is that line, not also a point of its own series.
     */
    @Test
    void theBaseModelIsDrawnOnce() {
        EvalResult u4 = evaluated("uniform", "npu", 4, 2_600_000, 0.05, 2);
        EvalResult self = new EvalResult("/m/base.bin", u4.data(), u4.dataSha256(), u4.ctx(), "", "", 20_000_000, u4.parameters(), null, u4.baseResult(),
                u4.base(), u4.baseResult(), new EvalResult.Divergence(0, 0, 0, 1), 1, 1, null);
        QualityReport r = new QualityReport("t", List.of(u4, evaluated("edgeflow", "npu", 4, 2_610_000, 0.02, 3),
                evaluated("edgeflow", "weight-only", 5, 3_210_000, 0.004, 6), self));
        assertThat(r.isBase(self)).isTrue();
        assertThat(r.isBase(u4)).isFalse();
        assertThat(r.budgetAxis()).isNotNull();  // the base's own evaluation has no budget, and is not a point
        var ppl = ReportCharts.perplexityChart(r, r.sizeAxis(), "p");
        assertThat(ppl.getSeriesMap().keySet()).containsExactly("uniform · npu", "edgeflow · npu", "edgeflow · weight-only", "base (base.bin)");
        assertThat(ppl.getSeriesMap().get("base (base.bin)").getYData()).containsOnly(r.withBase().basePerplexity());
        double[] baseLine = ppl.getSeriesMap().get("base (base.bin)").getXData();
        assertThat(baseLine[1]).isEqualTo(8 * 3_210_000 / 5e6);  // across the quantized points, not out to the base's 32
        assertThat(baseLine[0]).isLessThan(r.x(u4));  // the dodged uniform point
        var pareto = ReportCharts.paretoChart(r);
        assertThat(pareto.getSeriesMap().keySet()).containsExactly("uniform · npu", "edgeflow · npu", "edgeflow · weight-only", "Pareto front");
        assertThat(r.markdown()).contains("| checkpoint |  | 20,000,000 | 32.000 |");  // the table keeps its row
    }

    /** A logarithmic KL axis reads 0.001 / 0.01 / 0.1, not 1E-3. */
    @Test
    void logAxesAreLabelledInDecimals() throws Exception {
        QualityReport r = new QualityReport("t", List.of(evaluated("uniform", "npu", 3, 2_000_000, 0.3, 2), evaluated("uniform", "npu", 8, 5_000_000, 0.002, 3)));
        var kl = ReportCharts.klChart(r, r.budgetAxis(), "k");
        assertThat(kl.getStyler().isYAxisLogarithmic()).isTrue();
        List<String> ticks = renderedTicks(kl, "getYAxis").stream().filter(java.util.Objects::nonNull).toList();
        assertThat(ticks).contains("0.01", "0.1").noneMatch(t -> t.contains("E"));
        assertThat(ReportCharts.logPattern(0.0012)).isEqualTo("0.####");  // 0.001, and 0.0001 should a bar reach down there

        // A lossless copy of the base (an f32 GGUF of it) has a KL of 0, which a logarithmic axis cannot show: linear, and it renders.
        EvalResult copy = new EvalResult("/m/base-f32.gguf", "/d/text.txt", "cafe", 256, "", "f32 copy", 20_000_000, 5_000_000, null,
                r.records().getFirst().baseResult(), "/m/base.bin", r.records().getFirst().baseResult(), new EvalResult.Divergence(0, 0, 0, 1), 1, 1, null);
        QualityReport withCopy = new QualityReport("t", List.of(r.records().get(0), r.records().get(1), copy));
        var pareto = ReportCharts.paretoChart(withCopy);
        assertThat(pareto.getStyler().isYAxisLogarithmic()).isFalse();
        assertThat(renderedTicks(pareto, "getYAxis")).isNotEmpty();
        assertThat(ReportCharts.logPattern(30)).isEqualTo("0");
    }

    /** The charts say their bars are unpaired, and the page says the paired comparisons decide. */
    @Test
    void chartsSayTheirErrorBarsAreUnpaired(@TempDir Path dir) throws Exception {
        QualityReport r = new QualityReport("t", List.of(evaluated("uniform", "npu", 4, 2_600_000, 0.05, 2), evaluated("edgeflow", "npu", 4, 2_610_000, 0.02, 3)));
        assertThat(ReportCharts.perplexityChart(r, r.budgetAxis(), "p").getYAxisTitle()).isEqualTo("perplexity (bars: ±1 s.e., unpaired)");
        assertThat(ReportCharts.paretoChart(r).getYAxisTitle()).isEqualTo("mean KLD, nats (bars: ±1 s.e., unpaired)");
        r.write(dir);
        assertThat(Files.readString(dir.resolve("report.html"))).contains("<figcaption>Error bars: ±1 standard error of each evaluation's perplexity")
                .contains("Read the paired comparisons for which differences are real.");
        assertThat(Files.readString(dir.resolve("report.md"))).contains("±: each evaluation's own standard error (unpaired)");
        new QualityReport("t", List.of(r.records().getFirst())).write(dir);  // nothing to pair: no "paired comparisons below"
        assertThat(Files.readString(dir.resolve("report.html"))).contains("the table's ± column. Dashed grey")
                .doesNotContain("paired comparisons below");
    }

    /** The tick labels XChart drew on an axis ({@code getXAxis} or {@code getYAxis}), read from its internals after a render. */
    private static List<String> renderedTicks(org.knowm.xchart.XYChart chart, String axis) throws Exception {
        org.knowm.xchart.BitmapEncoder.getBufferedImage(chart);
        java.lang.reflect.Field pairField = org.knowm.xchart.internal.chartpart.Chart.class.getDeclaredField("axisPair");
        pairField.setAccessible(true);
        Object pair = pairField.get(chart);
        java.lang.reflect.Method getAxis = pair.getClass().getDeclaredMethod(axis);
        getAxis.setAccessible(true);
        Object calculator = getAxis.invoke(pair).getClass().getMethod("getAxisTickCalculator").invoke(getAxis.invoke(pair));
        java.lang.reflect.Method labels = calculator.getClass().getMethod("getTickLabels");
        labels.setAccessible(true);
        @SuppressWarnings("unchecked")
        List<String> ticks = (List<String>) labels.invoke(calculator);
        return ticks;
    }

    @Test
    void oldFilesWithoutTheNewFieldsStillMakeAReport(@TempDir Path dir) throws Exception {
        QualityReport r = new QualityReport("t", List.of(
                EvalResult.read(evalJson(dir, "b.jqw", "npu", 900, 5.0, 0.2)),
                EvalResult.read(evalJson(dir, "a.jqw", "npu", 300, 7.0, 0.6)),
                EvalResult.read(evalJson(dir, "a.jqw", "weight-only", 300, 6.0, 0.5))));
        var chart = ReportCharts.chart(r, r.sizeAxis(), "t", "ppl", EvalResult::perplexity, EvalResult::stderr, false);
        assertThat(chart.getSeriesMap()).containsOnlyKeys("npu", "weight-only");
        double half = ReportCharts.DODGE * (900e-6 - 300e-6) / 2;  // a.jqw's two modes share an x
        assertThat(chart.getSeriesMap().get("npu").getXData()).containsExactly(300e-6 - half, 900e-6);
        assertThat(chart.getSeriesMap().get("weight-only").getXData()).containsExactly(300e-6 + half);
        assertThat(chart.getSeriesMap().get("npu").getYData()).containsExactly(7.0, 5.0);
        assertThat(r.pairedComparisons()).isEmpty();
        assertThat(r.markdown()).contains("| npu |  | 900 |");
    }

    /** Runs on another text, ctx or base model are refused, naming the two that differ. */
    @Test
    void refusesEvaluationsOfDifferentTextsCtxOrBase(@TempDir Path dir) throws Exception {
        EvalResult a = evaluated("uniform", "npu", 4, 2_600_000, 0.05, 2);
        EvalResult otherText = new EvalResult(a.model(), "/d/wiki.txt", "beef", a.ctx(), a.mode(), "edgeflow", a.fileBytes(), a.parameters(), a.quantization(),
                a.result(), a.base(), a.baseResult(), a.divergence(), 1, a.threads(), a.perToken());
        assertThatThrownBy(() -> new QualityReport("t", List.of(a, otherText))).hasMessageContaining("differ in their texts (text.txt and wiki.txt, by SHA-256)");
        EvalResult otherCtx = new EvalResult(a.model(), a.data(), a.dataSha256(), 128, a.mode(), "x", a.fileBytes(), a.parameters(), a.quantization(),
                a.result(), a.base(), a.baseResult(), a.divergence(), 1, a.threads(), a.perToken());
        assertThatThrownBy(() -> new QualityReport("t", List.of(a, otherCtx))).hasMessageContaining("ctx (256 and 128)");
        EvalResult otherBase = new EvalResult(a.model(), a.data(), a.dataSha256(), a.ctx(), a.mode(), "x", a.fileBytes(), a.parameters(), a.quantization(),
                a.result(), "/m/other.bin", new Perplexity.Result(9, 0.1, 2.2, 40000, 150, 2000), a.divergence(), 1, a.threads(), a.perToken());
        assertThatThrownBy(() -> new QualityReport("t", List.of(a, otherBase))).hasMessageContaining("base models (base.bin and other.bin)");

        Path notJson = Files.writeString(dir.resolve("x.json"), "perplexity: 4");
        assertThatThrownBy(() -> EvalResult.read(notJson)).isInstanceOf(CheckpointException.class).hasMessageContaining("x.json");
        Path otherJson = Files.writeString(dir.resolve("y.json"), "{\"plan\": 1}");
        assertThatThrownBy(() -> EvalResult.read(otherJson)).hasMessageContaining("not a 'jquant eval --json' result");
        assertThatThrownBy(() -> new QualityReport("t", List.of())).isInstanceOf(IllegalArgumentException.class);
    }

    /** The t interval of a paired difference: Commons Math's 97.5% quantile times the standard error of the mean difference. */
    @Test
    void pairedDifferenceIsTheTInterval() {
        float[] a = {1, 2, 3, 4}, b = {0.5f, 2, 2.5f, 3};  // d = 0.5, 0, 0.5, 1: mean 0.5, sd √(1/6)
        PairedDifference d = PairedDifference.of("a", a, "b", b);
        double half = 3.182446305284263 * Math.sqrt(1.0 / 6) / 2;  // t_{0.975, 3}
        assertThat(d.mean()).isEqualTo(0.5);
        assertThat(d.low()).isCloseTo(0.5 - half, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(d.high()).isCloseTo(0.5 + half, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(d.real()).isFalse();
        assertThat(d.verdict()).isEqualTo("no real difference");
    }
}
