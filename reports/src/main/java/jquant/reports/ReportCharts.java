package jquant.reports;

import java.awt.Color;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.lines.SeriesLines;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The report's charts (XChart): a quality figure against the budget or the file's size, one colour,
 * marker and line per series as the report assigns them, error bars from each evaluation's own ±,
 * series that share an x spread apart ({@link #dodge}), the base model's perplexity as one line, and
 * the Pareto front.
 */
final class ReportCharts {
    static final int WIDTH = 720;
    static final int HEIGHT = 420;
    /** Distance between two points dodged apart, as a share of the x axis's span: about a marker's width on a 720-pixel chart. */
    static final double DODGE = 0.02;
    /** What the error bars are, on every chart that has them: each evaluation's ± alone, not the paired interval of the comparisons. */
    static final String ERROR_BARS = "bars: ±1 s.e., unpaired";
    private static final Color BASE_COLOUR = new Color(0x444444);

    /**
     * What a chart's x is.
     *
     * @param title the axis title
     * @param value the x of an evaluation
     */
    record XAxis(String title, ToDoubleFunction<EvalResult> value) {}

    private ReportCharts() {}

    /** Perplexity against {@code axis}, with the base model's perplexity as one dashed line across the chart. */
    static XYChart perplexityChart(QualityReport report, XAxis axis, String name) {
        XYChart chart = chart(report, axis, name, "perplexity", EvalResult::perplexity, EvalResult::stderr, false);
        EvalResult b = report.withBase();
        if (b != null) {
            double[] xs = chart.getSeriesMap().values().stream().flatMapToDouble(s -> Arrays.stream(s.getXData())).toArray();
            double basePpl = b.baseResult().perplexity();
            XYSeries line = chart.addSeries("base (" + QualityReport.fileName(b.base()) + ")", new double[] {min(xs), max(xs)}, new double[] {basePpl, basePpl});
            line.setMarker(SeriesMarkers.NONE);
            line.setLineColor(BASE_COLOUR);
            line.setLineStyle(SeriesLines.DASH_DASH);
            yAxis(chart, false);
        }
        return chart;
    }

    /**
     * One series per {@link QualityReport#series}, points sorted by x and dodged, error bars from {@code error};
     * records without the value are left out.
     */
    static XYChart chart(QualityReport report, XAxis axis, String name, String yTitle, ToDoubleFunction<EvalResult> y, ToDoubleFunction<EvalResult> error,
                         boolean logY) {
        XYChart chart = newChart(name, axis.title(), yTitle + " (" + ERROR_BARS + ")");
        List<EvalResult> drawn = report.records().stream().filter(r -> !Double.isNaN(y.applyAsDouble(r)) && !report.isBase(r)).toList();
        Map<EvalResult, Double> x = dodge(drawn, axis.value());
        Map<String, List<EvalResult>> bySeries = new LinkedHashMap<>();
        for (EvalResult r : drawn) bySeries.computeIfAbsent(QualityReport.series(r), k -> new ArrayList<>()).add(r);
        for (Map.Entry<String, List<EvalResult>> s : bySeries.entrySet()) {
            List<EvalResult> points = s.getValue().stream().sorted(Comparator.comparingDouble(x::get)).toList();
            List<Double> xs = points.stream().map(x::get).toList(), ys = points.stream().map(y::applyAsDouble).toList();
            List<Double> errors = points.stream().map(r -> {
                double e = error.applyAsDouble(r);
                return Double.isNaN(e) ? 0.0 : e;
            }).toList();
            XYSeries series = chart.addSeries(s.getKey(), xs, ys, errors);
            EvalResult first = points.getFirst();
            boolean npu = first.mode().equals("npu");
            series.setMarker(npu ? SeriesMarkers.SQUARE : SeriesMarkers.CIRCLE);
            series.setLineStyle(npu ? SeriesLines.DASH_DASH : SeriesLines.SOLID);
            series.setLineColor(report.colour(first));
            series.setMarkerColor(report.colour(first));
        }
        double[] xs = x.values().stream().mapToDouble(Double::doubleValue).toArray();
        chart.getStyler().setXAxisDecimalPattern(xPattern(min(xs), max(xs)));
        yAxis(chart, logY);
        return chart;
    }

    /**
     * Mean KL divergence against {@code axis}, on a logarithmic axis when it spans more than a factor of
     * 20 and every error bar stays above 0 (XChart refuses a bar that reaches 0 there; a lossless copy
     * of the base has a KL of 0).
     */
    static XYChart klChart(QualityReport report, XAxis axis, String name) {
        List<EvalResult> drawn = report.records().stream().filter(r -> r.hasBase() && !report.isBase(r)).toList();
        double[] kl = drawn.stream().mapToDouble(EvalResult::meanKl).toArray();
        double lowestBar = drawn.stream().mapToDouble(r -> r.meanKl() - (Double.isNaN(QualityReport.klStderr(r)) ? 0 : QualityReport.klStderr(r))).min().orElse(0);
        return chart(report, axis, name, "mean KLD, nats", EvalResult::meanKl, QualityReport::klStderr, lowestBar > 0 && max(kl) / min(kl) > 20);
    }

    /**
     * Bits per weight of the whole file against mean KL divergence, every series, and the Pareto front:
     * the points no other point beats on both size and divergence.
     */
    static XYChart paretoChart(QualityReport report) {
        List<EvalResult> withKl = report.records().stream().filter(r -> r.hasBase() && !report.isBase(r)).toList();
        XAxis size = report.sizeAxis();
        XYChart chart = klChart(report, size, "Pareto: mean KL divergence from the base vs size");
        Map<EvalResult, Double> x = dodge(withKl, size.value());
        List<EvalResult> front = new ArrayList<>();
        for (EvalResult r : withKl.stream().sorted(Comparator.comparingDouble(size.value()).thenComparingDouble(EvalResult::meanKl)).toList()) {
            if (front.isEmpty() || r.meanKl() < front.getLast().meanKl()) front.add(r);
        }
        if (front.size() > 1) {
            XYSeries line = chart.addSeries("Pareto front", front.stream().map(x::get).toList(), front.stream().map(EvalResult::meanKl).toList());
            line.setMarker(SeriesMarkers.NONE);
            line.setLineColor(BASE_COLOUR);
            line.setLineStyle(SeriesLines.DOT_DOT);
        }
        return chart;
    }

    /**
     * The x each point is drawn at: points that share an x, or lie closer than one step ({@link #DODGE} of
     * the span), are spread a step apart in series order and centred on their mean, so each one's error bar
     * shows (ggplot's position_dodge); a point alone keeps its x. The table has the exact values.
     */
    static Map<EvalResult, Double> dodge(List<EvalResult> points, ToDoubleFunction<EvalResult> x) {
        Map<String, Integer> order = new LinkedHashMap<>();
        for (EvalResult r : points) order.putIfAbsent(QualityReport.series(r), order.size());
        double lo = points.stream().mapToDouble(x).min().orElse(0), hi = points.stream().mapToDouble(x).max().orElse(0);
        double span = hi > lo ? hi - lo : Math.max(Math.abs(hi), 1);
        double step = DODGE * span;
        Map<EvalResult, Double> dodged = new IdentityHashMap<>();
        List<EvalResult> sorted = points.stream().sorted(Comparator.comparingDouble(x)).toList();
        for (int start = 0; start < sorted.size(); ) {
            int end = start + 1;
            while (end < sorted.size() && x.applyAsDouble(sorted.get(end)) - x.applyAsDouble(sorted.get(end - 1)) < step) end++;
            List<EvalResult> group = sorted.subList(start, end).stream().sorted(Comparator.comparingInt(r -> order.get(QualityReport.series(r)))).toList();
            double centre = group.stream().mapToDouble(x).average().orElseThrow();
            for (int i = 0; i < group.size(); i++) dodged.put(group.get(i), centre + (i - (group.size() - 1) / 2.0) * step);
            start = end;
        }
        return dodged;
    }

    private static XYChart newChart(String name, String xTitle, String yTitle) {
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT).title(name).xAxisTitle(xTitle).yAxisTitle(yTitle).build();
        chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        chart.getStyler().setAntiAlias(true);
        chart.getStyler().setLocale(Locale.ROOT);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        chart.getStyler().setErrorBarsColorSeriesColor(true);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        return chart;
    }

    /** A linear y axis with {@link #pattern}'s labels over the series drawn so far, or a logarithmic one labelled in decimals at each decade. */
    private static void yAxis(XYChart chart, boolean logY) {
        double[] y = chart.getSeriesMap().values().stream().flatMapToDouble(s -> Arrays.stream(s.getYData())).toArray();
        if (logY) {
            chart.getStyler().setYAxisLogarithmic(true);
            chart.getStyler().setYAxisLogarithmicDecadeOnly(true);
            chart.getStyler().setYAxisDecimalPattern(logPattern(min(y)));
        } else {
            chart.getStyler().setYAxisDecimalPattern(pattern(min(y), max(y)));
        }
    }

    /** A DecimalFormat pattern with enough decimals to tell about five ticks over [min, max] apart. */
    static String pattern(double min, double max) {
        double step = (max - min) / 5;
        int decimals = step > 0 ? Math.max(0, (int) Math.ceil(-Math.log10(step))) : 2;
        return decimals == 0 ? "0" : "0." + "0".repeat(Math.min(decimals, 8));
    }

    /**
     * {@link #pattern} and one more decimal where a value has it: XChart puts the x ticks on the points
     * when they are evenly spaced (two always are), and such a tick must read as the point's value, 11.6
     * rather than 12.
     */
    static String xPattern(double min, double max) {
        String p = pattern(min, max);
        return (p.contains(".") ? p : p + ".") + "#";
    }

    /**
     * A DecimalFormat pattern for a logarithmic axis's decades from {@code min} up, and one below for an
     * error bar reaching under it: 0.001, 0.01, 0.1, 1, not 1E-3.
     */
    static String logPattern(double min) {
        int decimals = min > 0 ? Math.max(0, 1 - (int) Math.floor(Math.log10(min))) : 0;
        return decimals == 0 ? "0" : "0." + "#".repeat(Math.min(decimals, 12));
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

    /**
     * The chart as an inline PNG with its caption, so the page is one self-contained file (XChart's SVG
     * spells text as glyph outlines, 10× larger).
     */
    static String figure(XYChart chart, String caption) throws IOException {
        byte[] png = BitmapEncoder.getBitmapBytes(chart, BitmapEncoder.BitmapFormat.PNG);
        return "<figure><img alt=\"" + QualityReport.escape(chart.getTitle()) + "\" width=\"" + WIDTH + "\" height=\"" + HEIGHT
                + "\" src=\"data:image/png;base64," + Base64.getEncoder().encodeToString(png) + "\"><figcaption>" + QualityReport.escape(caption)
                + "</figcaption></figure>\n";
    }
}
