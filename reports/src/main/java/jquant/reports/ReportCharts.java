package jquant.reports;

import java.awt.Color;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.LinkedHashMap;
import java.util.function.ToDoubleFunction;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.lines.SeriesLines;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The report's charts (XChart): quality against size, one colour, marker and line per series as the
 * report assigns them, error bars from each evaluation's own ±, and the Pareto front.
 */
final class ReportCharts {
    static final int WIDTH = 720;
    static final int HEIGHT = 420;
    private static final Color BASE_COLOUR = new Color(0x444444);

    private ReportCharts() {}

    /** One series per {@link QualityReport#series}, points sorted by x, error bars from {@code error}; records without the value are left out. */
    static XYChart chart(QualityReport report, String name, String yTitle, ToDoubleFunction<EvalResult> y, ToDoubleFunction<EvalResult> error,
                         boolean logY) {
        XYChart chart = newChart(report, name, yTitle);
        List<Double> allY = new ArrayList<>();
        Map<String, List<EvalResult>> bySeries = new LinkedHashMap<>();
        for (EvalResult r : report.records()) if (!Double.isNaN(y.applyAsDouble(r))) bySeries.computeIfAbsent(QualityReport.series(r), k -> new ArrayList<>()).add(r);
        for (Map.Entry<String, List<EvalResult>> s : bySeries.entrySet()) {
            List<EvalResult> points = s.getValue().stream().sorted(Comparator.comparingDouble(report::x)).toList();
            List<Double> xs = points.stream().map(report::x).toList(), ys = points.stream().map(y::applyAsDouble).toList();
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
            series.setLineColor(report.colour(first));
            series.setMarkerColor(report.colour(first));
        }
        EvalResult b = report.withBase();
        if (b != null && yTitle.equals("perplexity")) {
            double bx = report.records().stream().mapToDouble(report::x).min().orElse(0);
            double ex = report.records().stream().mapToDouble(report::x).max().orElse(1);
            double basePpl = b.baseResult().perplexity();
            allY.add(basePpl);
            XYSeries line = chart.addSeries("base (" + QualityReport.fileName(b.base()) + ")", List.of(bx, ex), List.of(basePpl, basePpl));
            line.setMarker(SeriesMarkers.NONE);
            line.setLineColor(BASE_COLOUR);
            line.setLineStyle(SeriesLines.DASH_DASH);
        }
        axes(report, chart, allY, logY);
        return chart;
    }

    /**
     * Bits per weight against mean KL divergence, every series, and the Pareto front: the points no
     * other point beats on both size and divergence.
     */
    static XYChart paretoChart(QualityReport report) {
        List<EvalResult> withKl = report.records().stream().filter(EvalResult::hasBase).toList();
        double min = withKl.stream().mapToDouble(EvalResult::meanKl).filter(v -> v > 0).min().orElse(1);
        double max = withKl.stream().mapToDouble(EvalResult::meanKl).max().orElse(1);
        XYChart chart = chart(report, "Pareto: mean KL divergence from the base vs size", "mean KLD (nats)", EvalResult::meanKl, QualityReport::klStderr,
                max / min > 20);
        List<EvalResult> front = new ArrayList<>();
        for (EvalResult r : withKl.stream().sorted(Comparator.comparingDouble(report::x).thenComparingDouble(EvalResult::meanKl)).toList()) {
            if (front.isEmpty() || r.meanKl() < front.getLast().meanKl()) front.add(r);
        }
        if (front.size() > 1) {
            XYSeries line = chart.addSeries("Pareto front", front.stream().map(report::x).toList(), front.stream().map(EvalResult::meanKl).toList());
            line.setMarker(SeriesMarkers.NONE);
            line.setLineColor(BASE_COLOUR);
            line.setLineStyle(SeriesLines.DOT_DOT);
        }
        return chart;
    }

    private static XYChart newChart(QualityReport report, String name, String yTitle) {
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT).title(name).xAxisTitle(report.xTitle()).yAxisTitle(yTitle).build();
        chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        chart.getStyler().setAntiAlias(true);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        chart.getStyler().setErrorBarsColorSeriesColor(true);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        return chart;
    }

    /** Round tick labels: as many decimals as the axis range needs, never more (XChart's default prints the raw double). */
    private static void axes(QualityReport report, XYChart chart, List<Double> ys, boolean logY) {
        double[] xs = report.records().stream().mapToDouble(report::x).toArray();
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
    static String figure(XYChart chart) throws IOException {
        byte[] png = BitmapEncoder.getBitmapBytes(chart, BitmapEncoder.BitmapFormat.PNG);
        return "<figure><img alt=\"" + QualityReport.escape(chart.getTitle()) + "\" width=\"" + WIDTH + "\" height=\"" + HEIGHT
                + "\" src=\"data:image/png;base64," + Base64.getEncoder().encodeToString(png) + "\"></figure>\n";
    }
}
