package jquant.reports;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import jquant.formats.AtomicOutput;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * A quality-versus-size report over several evaluations of the same text: a Markdown table for
 * people and reviews, an HTML page with the table and charts (perplexity, mean KL divergence and top-1
 * agreement against file size, one series per run mode), and JSON for CI jobs.
 */
public final class QualityReport {
    private static final int CHART_WIDTH = 640;
    private static final int CHART_HEIGHT = 360;

    private final String title;
    private final List<EvalResult> records;

    public QualityReport(String title, List<EvalResult> records) {
        if (records.isEmpty()) throw new IllegalArgumentException("a report needs at least one evaluation");
        this.title = title;
        this.records = List.copyOf(records);
    }

    /** The files {@link #write} puts in its folder. */
    public static final List<String> FILES = List.of("report.md", "report.html", "report.json");

    /** Writes {@code <dir>/report.md}, {@code report.html} and {@code report.json}, each atomically. */
    public void write(Path dir) throws IOException {
        String md = markdown();
        String html = html();
        byte[] json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsBytes(jsonModel());
        AtomicOutput.write(dir.resolve("report.md"), out -> out.write(md.getBytes(StandardCharsets.UTF_8)));
        AtomicOutput.write(dir.resolve("report.html"), out -> out.write(html.getBytes(StandardCharsets.UTF_8)));
        AtomicOutput.write(dir.resolve("report.json"), out -> out.write(json));
    }

    Map<String, Object> jsonModel() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("title", title);
        List<Map<String, Object>> rows = new ArrayList<>();
        for (EvalResult r : records) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("model", r.model());
            row.put("mode", r.mode().isEmpty() ? "checkpoint" : r.mode());
            row.put("fileBytes", r.fileBytes() < 0 ? null : r.fileBytes());
            row.put("perplexity", finite(r.perplexity()));
            row.put("stderr", finite(r.stderr()));
            row.put("scored", r.scored());
            row.put("basePerplexity", finite(r.basePerplexity()));
            row.put("meanKl", finite(r.meanKl()));
            row.put("klP99", finite(r.klP99()));
            row.put("top1Agreement", finite(r.top1()));
            row.put("seconds", finite(r.seconds()));
            rows.add(row);
        }
        m.put("evaluations", rows);
        return m;
    }

    public String markdown() {
        StringBuilder sb = new StringBuilder("# ").append(title).append("\n\n");
        sb.append("| model | mode | file bytes | perplexity | ± | mean KLD | KLD p99 | top-1 | seconds |\n");
        sb.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        for (EvalResult r : records) {
            sb.append("| ").append(Path.of(r.model()).getFileName()).append(" | ").append(r.mode().isEmpty() ? "checkpoint" : r.mode())
                    .append(" | ").append(r.fileBytes() < 0 ? "" : String.format(Locale.ROOT, "%,d", r.fileBytes()))
                    .append(" | ").append(fmt("%.4f", r.perplexity())).append(" | ").append(fmt("%.4f", r.stderr()))
                    .append(" | ").append(fmt("%.6f", r.meanKl())).append(" | ").append(fmt("%.6f", r.klP99()))
                    .append(" | ").append(fmt("%.4f", r.top1())).append(" | ").append(fmt("%.1f", r.seconds())).append(" |\n");
        }
        double base = records.stream().mapToDouble(EvalResult::basePerplexity).filter(d -> !Double.isNaN(d)).findFirst().orElse(Double.NaN);
        if (!Double.isNaN(base)) sb.append("\nBase model perplexity: ").append(fmt("%.4f", base)).append(".\n");
        return sb.toString();
    }

    public String html() throws IOException {
        StringBuilder sb = new StringBuilder("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>")
                .append(escape(title)).append("</title>\n<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;}"
                        + "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
                        + "td:first-child,th:first-child,td:nth-child(2){text-align:left}</style></head><body>\n<h1>")
                .append(escape(title)).append("</h1>\n<table>\n<tr><th>model</th><th>mode</th><th>file bytes</th><th>perplexity</th>"
                        + "<th>±</th><th>mean KLD</th><th>KLD p99</th><th>top-1</th><th>seconds</th></tr>\n");
        for (EvalResult r : records) {
            sb.append("<tr><td>").append(escape(Path.of(r.model()).getFileName().toString())).append("</td><td>")
                    .append(r.mode().isEmpty() ? "checkpoint" : escape(r.mode())).append("</td><td>")
                    .append(r.fileBytes() < 0 ? "" : String.format(Locale.ROOT, "%,d", r.fileBytes())).append("</td><td>")
                    .append(fmt("%.4f", r.perplexity())).append("</td><td>").append(fmt("%.4f", r.stderr())).append("</td><td>")
                    .append(fmt("%.6f", r.meanKl())).append("</td><td>").append(fmt("%.6f", r.klP99())).append("</td><td>")
                    .append(fmt("%.4f", r.top1())).append("</td><td>").append(fmt("%.1f", r.seconds())).append("</td></tr>\n");
        }
        sb.append("</table>\n");
        if (records.stream().allMatch(r -> r.fileBytes() > 0)) {
            sb.append(figure(chart("Perplexity vs size", "perplexity", EvalResult::perplexity)));
            if (records.stream().anyMatch(EvalResult::hasBase)) {
                sb.append(figure(chart("Mean KL divergence from the base vs size", "mean KLD (nats)", EvalResult::meanKl)));
                sb.append(figure(chart("Top-1 agreement with the base vs size", "top-1 agreement", EvalResult::top1)));
            }
        }
        return sb.append("</body></html>\n").toString();
    }

    /** One series per run mode, points sorted by file size; records without the value are left out. */
    XYChart chart(String name, String yTitle, java.util.function.ToDoubleFunction<EvalResult> y) {
        XYChart chart = new XYChartBuilder().width(CHART_WIDTH).height(CHART_HEIGHT).title(name).xAxisTitle("file size (MB)").yAxisTitle(yTitle).build();
        chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        chart.getStyler().setAntiAlias(true);
        Map<String, TreeMap<Double, Double>> series = new LinkedHashMap<>();
        for (EvalResult r : records) {
            double v = y.applyAsDouble(r);
            if (Double.isNaN(v)) continue;
            series.computeIfAbsent(r.mode().isEmpty() ? "checkpoint" : r.mode(), k -> new TreeMap<>()).put(r.fileBytes() / 1e6, v);
        }
        for (Map.Entry<String, TreeMap<Double, Double>> s : series.entrySet()) {
            chart.addSeries(s.getKey(), new ArrayList<>(s.getValue().keySet()), new ArrayList<>(s.getValue().values())).setMarker(SeriesMarkers.CIRCLE);
        }
        return chart;
    }

    /** The chart as an inline PNG, so the page is one self-contained file (XChart's SVG spells text as glyph outlines, 10× larger). */
    private static String figure(XYChart chart) throws IOException {
        byte[] png = BitmapEncoder.getBitmapBytes(chart, BitmapEncoder.BitmapFormat.PNG);
        return "<figure><img alt=\"" + escape(chart.getTitle()) + "\" width=\"" + CHART_WIDTH + "\" height=\"" + CHART_HEIGHT
                + "\" src=\"data:image/png;base64," + Base64.getEncoder().encodeToString(png) + "\"></figure>\n";
    }

    /** Absent values are JSON null, never a NaN token a JSON parser would reject. */
    private static Double finite(double v) {
        return Double.isNaN(v) ? null : v;
    }

    private static String fmt(String format, double v) {
        return Double.isNaN(v) ? "" : String.format(Locale.ROOT, format, v);
    }

    private static String escape(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
