package jquant.reports;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import jquant.formats.AtomicOutput;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.lines.SeriesLines;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.awt.Color;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.ToDoubleFunction;

/**
 * A quality-versus-size report over evaluations of one text: a Markdown table for people and reviews,
 * an HTML page with the table and charts, and JSON for CI jobs, all with the same figures.
 *
 * <ul>
 *   <li><b>One comparison.</b> Every evaluation must be on the same text (by SHA-256 when the files
 *       carry it), with the same ctx and token counts, against the same base model; anything else is
 *       refused, naming the two evaluations that differ. The base point (its perplexity), the text,
 *       ctx and token counts head the report.</li>
 *   <li><b>Series.</b> An evaluation's series is its {@code series} name and run mode (or the mode
 *       alone). Each series keeps one colour, marker and line in every chart: the colour is the
 *       name's (a method), the marker and line the mode's (circle and solid for weight-only, square and
 *       dashed for npu).</li>
 *   <li><b>Error bars</b> from the evaluation's own ±: the perplexity's standard error, and for the KL
 *       divergence and top-1 agreement the standard error of their per-token means.</li>
 *   <li><b>Pareto chart</b>: bits per weight of the whole file (8 · bytes / the base model's weights)
 *       against mean KL divergence, with the front of the points no other point beats on both.</li>
 *   <li><b>Paired comparisons</b> ({@link PairedDifference}): every two evaluations of one run mode and
 *       budget, and every evaluation against the base, as the mean per-token NLL difference with its
 *       95% confidence interval, so a reader sees which differences are real.</li>
 * </ul>
 */
public final class QualityReport {
    private static final int CHART_WIDTH = 720;
    private static final int CHART_HEIGHT = 420;
    /** Colours by series name, in order of first appearance (Okabe–Ito's colour-blind-safe palette without its yellow, then more). */
    private static final Color[] PALETTE = {new Color(0x0072B2), new Color(0xD55E00), new Color(0x009E73), new Color(0xCC79A7),
            new Color(0xE69F00), new Color(0x56B4E9), new Color(0x000000), new Color(0x882255), new Color(0x999933), new Color(0x999999)};
    private static final Color BASE_COLOUR = new Color(0x444444);

    private final String title;
    private final List<EvalResult> records;
    private final Map<String, Color> colours = new LinkedHashMap<>();

    /** @throws IllegalArgumentException if the evaluations are not on one text, ctx and base model */
    public QualityReport(String title, List<EvalResult> records) {
        if (records.isEmpty()) throw new IllegalArgumentException("a report needs at least one evaluation");
        this.title = title;
        this.records = List.copyOf(records);
        checkComparable(this.records);
        for (EvalResult r : this.records) colours.computeIfAbsent(colourKey(r), s -> PALETTE[colours.size() % PALETTE.length]);
    }

    /** The series an evaluation is drawn in: {@code edgeflow · npu}, or the mode alone ({@code npu}, {@code checkpoint}). */
    static String series(EvalResult r) {
        String mode = r.mode().isEmpty() ? "checkpoint" : r.mode();
        return r.series().isEmpty() ? mode : r.mode().isEmpty() ? r.series() : r.series() + " · " + mode;
    }

    /** What picks a series' colour: its name, or its mode when it has none. */
    private static String colourKey(EvalResult r) {
        return r.series().isEmpty() ? series(r) : r.series();
    }

    private Color colour(EvalResult r) {
        return colours.get(colourKey(r));
    }

    /** Refuses evaluations of different texts, ctx, token counts or base models, naming the first two that differ. */
    static void checkComparable(List<EvalResult> records) {
        EvalResult first = records.getFirst();
        boolean hashes = records.stream().noneMatch(r -> r.dataSha256().isEmpty());
        EvalResult withBase = records.stream().filter(r -> r.base() != null).findFirst().orElse(null);
        for (EvalResult r : records) {
            String problem = null;
            if (hashes ? !r.dataSha256().equals(first.dataSha256()) : !fileName(r.data()).equals(fileName(first.data()))) {
                problem = "texts (" + fileName(first.data()) + " and " + fileName(r.data()) + (hashes ? ", by SHA-256" : "") + ")";
            } else if (r.ctx() != first.ctx()) {
                problem = "ctx (" + first.ctx() + " and " + r.ctx() + ")";
            } else if (r.result().tokens() != first.result().tokens() || r.scored() != first.scored()) {
                problem = "token counts (" + first.result().tokens() + " / " + first.scored() + " scored and " + r.result().tokens() + " / " + r.scored() + ")";
            } else if (withBase != null && r.base() != null && (!fileName(r.base()).equals(fileName(withBase.base()))
                    || r.baseResult().meanNll() != withBase.baseResult().meanNll())) {
                problem = "base models (" + fileName(withBase.base()) + " and " + fileName(r.base()) + ")";
            }
            EvalResult other = problem != null && problem.startsWith("base") ? withBase : first;
            if (problem != null) {
                throw new IllegalArgumentException("a report compares evaluations of one text, ctx and base model, but " + other.label() + " and "
                        + r.label() + " differ in their " + problem);
            }
        }
    }

    private static String fileName(String path) {
        Path name = Path.of(path).getFileName();
        return name == null ? path : name.toString();
    }

    /** The base model the evaluations compare with, or null if none does. */
    private EvalResult withBase() {
        return records.stream().filter(r -> r.base() != null).findFirst().orElse(null);
    }

    private boolean bitsPerWeightKnown() {
        return records.stream().allMatch(r -> !Double.isNaN(r.bitsPerWeight()));
    }

    /** x of a point: bits per weight of the whole file, or its size in MB when a file does not give the weights. */
    private double x(EvalResult r) {
        return bitsPerWeightKnown() ? r.bitsPerWeight() : r.fileBytes() / 1e6;
    }

    private String xTitle() {
        return bitsPerWeightKnown() ? "bits per weight (whole file)" : "file size (MB)";
    }

    /** Standard error of the mean per-token KL divergence, or NaN without per-token figures. */
    static double klStderr(EvalResult r) {
        return r.perToken() == null || r.perToken().kl() == null ? Double.NaN : stderr(r.perToken().kl());
    }

    /** Standard error of the top-1 agreement, a proportion over the scored tokens. */
    static double top1Stderr(EvalResult r) {
        double p = r.top1();
        return Double.isNaN(p) || r.scored() < 2 ? Double.NaN : Math.sqrt(p * (1 - p) / r.scored());
    }

    private static double stderr(float[] values) {
        double sum = 0;
        for (float v : values) sum += v;
        double mean = sum / values.length, squares = 0;
        for (float v : values) squares += (v - mean) * (v - mean);
        return Math.sqrt(squares / (values.length - 1) / values.length);
    }

    /** The evaluation against its base on the same tokens: NLL(model) − NLL(base), or null without per-token figures. */
    static PairedDifference againstBase(EvalResult r) {
        if (r.perToken() == null || r.perToken().baseNll() == null) return null;
        return PairedDifference.of(series(r) + budgetLabel(r), r.perToken().nll(), "base", r.perToken().baseNll());
    }

    private static String budgetLabel(EvalResult r) {
        return r.quantization() == null ? "" : " B=" + trim(r.quantization().budget());
    }

    /**
     * Every two evaluations of one run mode and budget that carry per-token NLLs, in input order:
     * {@code first − second}, negative when the first predicts better.
     */
    List<PairedDifference> pairedComparisons() {
        Map<String, List<EvalResult>> groups = new LinkedHashMap<>();
        for (EvalResult r : records) {
            if (r.perToken() == null) continue;
            String key = r.mode() + "|" + (r.quantization() == null ? "" : trim(r.quantization().budget()));
            groups.computeIfAbsent(key, k -> new ArrayList<>()).add(r);
        }
        List<PairedDifference> out = new ArrayList<>();
        for (List<EvalResult> g : groups.values()) {
            for (int i = 0; i < g.size(); i++) {
                for (int j = i + 1; j < g.size(); j++) {
                    EvalResult a = g.get(i), b = g.get(j);
                    out.add(PairedDifference.of(series(a) + budgetLabel(a), a.perToken().nll(), series(b) + budgetLabel(b), b.perToken().nll()));
                }
            }
        }
        return out;
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
        EvalResult b = withBase();
        if (b != null) {
            Map<String, Object> base = new LinkedHashMap<>();
            base.put("model", b.base());
            base.put("perplexity", finite(b.baseResult().perplexity()));
            base.put("stderr", finite(b.baseResult().stderr()));
            base.put("meanNll", finite(b.baseResult().meanNll()));
            m.put("base", base);
        }
        EvalResult first = records.getFirst();
        Map<String, Object> text = new LinkedHashMap<>();
        text.put("data", first.data());
        text.put("sha256", first.dataSha256().isEmpty() ? null : first.dataSha256());
        text.put("ctx", first.ctx());
        text.put("tokens", first.result().tokens());
        text.put("windows", first.result().windows());
        text.put("scored", first.scored());
        m.put("text", text);
        m.put("xAxis", xTitle());
        Map<String, Map<String, Object>> series = new LinkedHashMap<>();
        for (EvalResult r : records) {
            series.computeIfAbsent(series(r), name -> {
                Map<String, Object> s = new LinkedHashMap<>();
                s.put("name", name);
                s.put("colour", hex(colour(r)));
                s.put("marker", r.mode().equals("npu") ? "square" : "circle");
                return s;
            });
        }
        m.put("series", new ArrayList<>(series.values()));
        List<Map<String, Object>> rows = new ArrayList<>();
        for (EvalResult r : records) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("model", r.model());
            row.put("series", series(r));
            row.put("mode", r.mode().isEmpty() ? "checkpoint" : r.mode());
            row.put("budget", r.quantization() == null ? null : finite(r.quantization().budget()));
            row.put("rounding", r.quantization() == null ? null : r.quantization().rounding());
            row.put("fileBytes", r.fileBytes() < 0 ? null : r.fileBytes());
            row.put("bitsPerWeight", finite(r.bitsPerWeight()));
            row.put("perplexity", finite(r.perplexity()));
            row.put("stderr", finite(r.stderr()));
            row.put("scored", r.scored());
            row.put("basePerplexity", finite(r.basePerplexity()));
            row.put("meanKl", finite(r.meanKl()));
            row.put("klStderr", finite(klStderr(r)));
            row.put("klP99", finite(r.klP99()));
            row.put("top1Agreement", finite(r.top1()));
            row.put("top1Stderr", finite(top1Stderr(r)));
            PairedDifference d = againstBase(r);
            row.put("nllVsBase", d == null ? null : interval(d));
            row.put("seconds", finite(r.seconds()));
            row.put("threads", r.threads() < 1 ? null : r.threads());
            rows.add(row);
        }
        m.put("evaluations", rows);
        List<Map<String, Object>> pairs = new ArrayList<>();
        for (PairedDifference d : pairedComparisons()) {
            Map<String, Object> p = interval(d);
            p.put("first", d.first());
            p.put("second", d.second());
            p.put("verdict", d.verdict());
            pairs.add(p);
        }
        m.put("pairedComparisons", pairs);
        return m;
    }

    private static Map<String, Object> interval(PairedDifference d) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("meanNllDifference", d.mean());
        m.put("low", d.low());
        m.put("high", d.high());
        m.put("tokens", d.tokens());
        return m;
    }

    /** Base model, text, ctx and token counts: what every figure below is measured on. */
    private String heading() {
        EvalResult first = records.getFirst(), b = withBase();
        StringBuilder sb = new StringBuilder();
        if (b != null) {
            sb.append("Base model ").append(fileName(b.base())).append(": perplexity ").append(fmt("%.4f", b.baseResult().perplexity()))
                    .append(" ± ").append(fmt("%.4f", b.baseResult().stderr())).append(". ");
        }
        sb.append("Text ").append(fileName(first.data()));
        if (!first.dataSha256().isEmpty()) sb.append(" (SHA-256 ").append(first.dataSha256(), 0, Math.min(12, first.dataSha256().length())).append("…)");
        sb.append(", ctx ").append(first.ctx()).append(": ").append(String.format(Locale.ROOT, "%,d", first.result().tokens())).append(" tokens, ")
                .append(first.result().windows()).append(" windows, ").append(String.format(Locale.ROOT, "%,d", first.scored()))
                .append(" scored per evaluation (llama-perplexity's rule: the second half of each window).");
        return sb.toString();
    }

    private static final String[] COLUMNS = {"series", "budget", "file bytes", "bits/weight", "perplexity", "±", "ΔNLL vs base [95% CI]",
            "mean KLD", "±", "KLD p99", "top-1", "seconds"};

    private List<String> cells(EvalResult r) {
        PairedDifference d = againstBase(r);
        return List.of(series(r), r.quantization() == null ? "" : trim(r.quantization().budget()),
                r.fileBytes() < 0 ? "" : String.format(Locale.ROOT, "%,d", r.fileBytes()), fmt("%.3f", r.bitsPerWeight()),
                fmt("%.4f", r.perplexity()), fmt("%.4f", r.stderr()), d == null ? "" : intervalText(d),
                fmt("%.6f", r.meanKl()), fmt("%.6f", klStderr(r)), fmt("%.5f", r.klP99()), fmt("%.4f", r.top1()), fmt("%.1f", r.seconds()));
    }

    private static String intervalText(PairedDifference d) {
        return String.format(Locale.ROOT, "%+.5f [%+.5f, %+.5f]", d.mean(), d.low(), d.high());
    }

    public String markdown() {
        StringBuilder sb = new StringBuilder("# ").append(title).append("\n\n").append(heading()).append("\n\n");
        sb.append("| ").append(String.join(" | ", COLUMNS)).append(" |\n|");
        for (int i = 0; i < COLUMNS.length; i++) sb.append(i == 0 ? " --- |" : " ---: |");
        sb.append('\n');
        for (EvalResult r : records) sb.append("| ").append(String.join(" | ", cells(r))).append(" |\n");
        List<PairedDifference> pairs = pairedComparisons();
        if (!pairs.isEmpty()) {
            sb.append("\n## Paired comparisons\n\nMean per-token NLL difference (nats) on the same ").append(String.format(Locale.ROOT, "%,d", pairs.getFirst().tokens()))
                    .append(" tokens, first − second, with its 95% confidence interval (t distribution); negative: the first predicts better.\n\n");
            sb.append("| first | second | mean ΔNLL | 95% CI | verdict |\n| --- | --- | ---: | ---: | --- |\n");
            for (PairedDifference d : pairs) {
                sb.append("| ").append(d.first()).append(" | ").append(d.second()).append(" | ").append(String.format(Locale.ROOT, "%+.5f", d.mean()))
                        .append(" | ").append(String.format(Locale.ROOT, "[%+.5f, %+.5f]", d.low(), d.high())).append(" | ").append(d.verdict()).append(" |\n");
            }
        }
        return sb.toString();
    }

    public String html() throws IOException {
        StringBuilder sb = new StringBuilder("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>")
                .append(escape(title)).append("</title>\n<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;}"
                        + "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right;font-size:90%}"
                        + "td:first-child,th:first-child{text-align:left}.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.4em;vertical-align:-.1em}"
                        + "td.real{font-weight:bold}</style></head><body>\n<h1>")
                .append(escape(title)).append("</h1>\n<p>").append(escape(heading())).append("</p>\n<table>\n<tr>");
        for (String c : COLUMNS) sb.append("<th>").append(escape(c)).append("</th>");
        sb.append("</tr>\n");
        for (EvalResult r : records) {
            List<String> cells = cells(r);
            sb.append("<tr><td>").append(swatch(r)).append(escape(cells.getFirst())).append("</td>");
            for (String c : cells.subList(1, cells.size())) sb.append("<td>").append(escape(c)).append("</td>");
            sb.append("</tr>\n");
        }
        sb.append("</table>\n");
        if (records.stream().allMatch(r -> r.fileBytes() > 0)) {
            sb.append(figure(chart("Perplexity vs size", "perplexity", EvalResult::perplexity, EvalResult::stderr, false)));
            if (records.stream().anyMatch(EvalResult::hasBase)) {
                sb.append(figure(paretoChart()));
                sb.append(figure(chart("Top-1 agreement with the base vs size", "top-1 agreement", EvalResult::top1, QualityReport::top1Stderr, false)));
            }
        }
        List<PairedDifference> pairs = pairedComparisons();
        if (!pairs.isEmpty()) {
            sb.append("<h2>Paired comparisons</h2>\n<p>Mean per-token NLL difference (nats) on the same ").append(String.format(Locale.ROOT, "%,d", pairs.getFirst().tokens()))
                    .append(" tokens, first − second, with its 95% confidence interval (t distribution); negative: the first predicts better. "
                            + "Bold: the interval excludes 0.</p>\n<table>\n<tr><th>first</th><th>second</th><th>mean ΔNLL</th><th>95% CI</th><th>verdict</th></tr>\n");
            for (PairedDifference d : pairs) {
                String cls = d.real() ? " class=\"real\"" : "";
                sb.append("<tr><td>").append(escape(d.first())).append("</td><td style=\"text-align:left\">").append(escape(d.second())).append("</td><td>")
                        .append(String.format(Locale.ROOT, "%+.5f", d.mean())).append("</td><td>")
                        .append(String.format(Locale.ROOT, "[%+.5f, %+.5f]", d.low(), d.high())).append("</td><td").append(cls)
                        .append(" style=\"text-align:left\">").append(escape(d.verdict())).append("</td></tr>\n");
            }
            sb.append("</table>\n");
        }
        return sb.append("</body></html>\n").toString();
    }

    /** The series' colour, round for weight-only and square for npu as in the charts. */
    private String swatch(EvalResult r) {
        return "<span class=\"swatch\" style=\"background:" + hex(colour(r)) + (r.mode().equals("npu") ? "" : ";border-radius:50%") + "\"></span>";
    }

    /** One series per {@link #series}, points sorted by x, error bars from {@code error}; records without the value are left out. */
    XYChart chart(String name, String yTitle, ToDoubleFunction<EvalResult> y, ToDoubleFunction<EvalResult> error, boolean logY) {
        XYChart chart = newChart(name, yTitle);
        List<Double> allY = new ArrayList<>();
        Map<String, List<EvalResult>> bySeries = new LinkedHashMap<>();
        for (EvalResult r : records) if (!Double.isNaN(y.applyAsDouble(r))) bySeries.computeIfAbsent(series(r), k -> new ArrayList<>()).add(r);
        for (Map.Entry<String, List<EvalResult>> s : bySeries.entrySet()) {
            List<EvalResult> points = s.getValue().stream().sorted(Comparator.comparingDouble(this::x)).toList();
            List<Double> xs = points.stream().map(this::x).toList(), ys = points.stream().map(y::applyAsDouble).toList();
            List<Double> errors = points.stream().map(r -> {
                double e = error.applyAsDouble(r);
                return Double.isNaN(e) ? 0.0 : e;
            }).toList();
            allY.addAll(ys);
            XYSeries series = chart.addSeries(s.getKey(), xs, ys, errors);
            EvalResult first = points.getFirst();
            boolean npu = first.mode().equals("npu");
            series.setMarker(npu ? SeriesMarkers.SQUARE : SeriesMarkers.CIRCLE);
            series.setLineStyle(npu ? SeriesLines.DASH_DASH : SeriesLines.SOLID);
            series.setLineColor(colour(first));
            series.setMarkerColor(colour(first));
        }
        EvalResult b = withBase();
        if (b != null && yTitle.equals("perplexity")) {
            double bx = records.stream().mapToDouble(this::x).min().orElse(0), ex = records.stream().mapToDouble(this::x).max().orElse(1);
            double basePpl = b.baseResult().perplexity();
            allY.add(basePpl);
            XYSeries line = chart.addSeries("base (" + fileName(b.base()) + ")", List.of(bx, ex), List.of(basePpl, basePpl));
            line.setMarker(SeriesMarkers.NONE);
            line.setLineColor(BASE_COLOUR);
            line.setLineStyle(SeriesLines.DASH_DASH);
        }
        axes(chart, allY, logY);
        return chart;
    }

    /**
     * Bits per weight against mean KL divergence, every series, and the Pareto front: the points no
     * other point beats on both size and divergence.
     */
    XYChart paretoChart() {
        List<EvalResult> withKl = records.stream().filter(EvalResult::hasBase).toList();
        double min = withKl.stream().mapToDouble(EvalResult::meanKl).filter(v -> v > 0).min().orElse(1);
        double max = withKl.stream().mapToDouble(EvalResult::meanKl).max().orElse(1);
        XYChart chart = chart("Pareto: mean KL divergence from the base vs size", "mean KLD (nats)", EvalResult::meanKl, QualityReport::klStderr,
                max / min > 20);
        List<EvalResult> front = new ArrayList<>();
        for (EvalResult r : withKl.stream().sorted(Comparator.comparingDouble(this::x).thenComparingDouble(EvalResult::meanKl)).toList()) {
            if (front.isEmpty() || r.meanKl() < front.getLast().meanKl()) front.add(r);
        }
        if (front.size() > 1) {
            XYSeries line = chart.addSeries("Pareto front", front.stream().map(this::x).toList(), front.stream().map(EvalResult::meanKl).toList());
            line.setMarker(SeriesMarkers.NONE);
            line.setLineColor(BASE_COLOUR);
            line.setLineStyle(SeriesLines.DOT_DOT);
        }
        return chart;
    }

    private XYChart newChart(String name, String yTitle) {
        XYChart chart = new XYChartBuilder().width(CHART_WIDTH).height(CHART_HEIGHT).title(name).xAxisTitle(xTitle()).yAxisTitle(yTitle).build();
        chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        chart.getStyler().setAntiAlias(true);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        chart.getStyler().setErrorBarsColorSeriesColor(true);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        return chart;
    }

    /** Round tick labels: as many decimals as the axis range needs, never more (XChart's default prints the raw double). */
    private void axes(XYChart chart, List<Double> ys, boolean logY) {
        double[] xs = records.stream().mapToDouble(this::x).toArray();
        chart.getStyler().setXAxisDecimalPattern(pattern(min(xs), max(xs)));
        if (logY) {
            chart.getStyler().setYAxisLogarithmic(true);
            chart.getStyler().setYAxisDecimalPattern("0.#E0");
        } else {
            double[] y = ys.stream().mapToDouble(Double::doubleValue).toArray();
            chart.getStyler().setYAxisDecimalPattern(pattern(min(y), max(y)));
        }
    }

    /** A DecimalFormat pattern with enough decimals to tell about five ticks over [min, max] apart. */
    static String pattern(double min, double max) {
        double step = (max - min) / 5;
        int decimals = step > 0 ? Math.max(0, (int) Math.ceil(-Math.log10(step))) : 2;
        return decimals == 0 ? "0" : "0." + "0".repeat(Math.min(decimals, 8));
    }

    private static double min(double[] v) {
        double m = Double.POSITIVE_INFINITY;
        for (double d : v) if (!Double.isNaN(d)) m = Math.min(m, d);
        return m;
    }

    private static double max(double[] v) {
        double m = Double.NEGATIVE_INFINITY;
        for (double d : v) if (!Double.isNaN(d)) m = Math.max(m, d);
        return m;
    }

    /** The chart as an inline PNG, so the page is one self-contained file (XChart's SVG spells text as glyph outlines, 10× larger). */
    private static String figure(XYChart chart) throws IOException {
        byte[] png = BitmapEncoder.getBitmapBytes(chart, BitmapEncoder.BitmapFormat.PNG);
        return "<figure><img alt=\"" + escape(chart.getTitle()) + "\" width=\"" + CHART_WIDTH + "\" height=\"" + CHART_HEIGHT
                + "\" src=\"data:image/png;base64," + Base64.getEncoder().encodeToString(png) + "\"></figure>\n";
    }

    private static String hex(Color c) {
        return String.format(Locale.ROOT, "#%06X", c.getRGB() & 0xFFFFFF);
    }

    /** Absent values are JSON null, never a NaN token a JSON parser would reject. */
    private static Double finite(double v) {
        return Double.isNaN(v) ? null : v;
    }

    private static String fmt(String format, double v) {
        return Double.isNaN(v) ? "" : String.format(Locale.ROOT, format, v);
    }

    /** {@code 5} for 5.0, {@code 4.5} for 4.5. */
    static String trim(double v) {
        return Double.isNaN(v) ? "" : v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }

    private static String escape(String s) {
        return Objects.requireNonNull(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
