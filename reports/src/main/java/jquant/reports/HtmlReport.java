package jquant.reports;

import java.io.IOException;
import java.util.List;
import java.util.Locale;

/** {@code report.html}: one self-contained page with the report's table, its charts ({@link ReportCharts}) and its paired comparisons. */
final class HtmlReport {
    private static final String PERPLEXITY_CAPTION = "Error bars: ±1 standard error of each evaluation's perplexity on its own (unpaired), the table's ± column.";
    /** Which interval is which: the chart's bars are each evaluation's own; the paired comparisons' decide. */
    private static final String PAIRED_CAPTION = " Two bars can overlap where the paired comparisons below find a real difference: every variant scores "
            + "the same tokens, and pairing removes what those tokens share. Read the paired comparisons for which differences are real.";
    private static final String DODGE_CAPTION = " Points that share an x are drawn a little apart so each bar shows; the table has the exact values.";

    private HtmlReport() {}

    static String render(QualityReport report) throws IOException {
        StringBuilder sb = new StringBuilder("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>")
                .append(QualityReport.escape(report.title())).append("</title>\n<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;}"
                        + "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right;font-size:90%}"
                        + "td:first-child,th:first-child{text-align:left}.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.4em;vertical-align:-.1em}"
                        + "td.real{font-weight:bold}</style></head><body>\n<h1>")
                .append(QualityReport.escape(report.title())).append("</h1>\n<p>").append(QualityReport.escape(report.heading())).append("</p>\n<table>\n<tr>");
        for (String c : QualityReport.COLUMNS) sb.append("<th>").append(QualityReport.escape(c)).append("</th>");
        sb.append("</tr>\n");
        for (EvalResult r : report.records()) {
            List<String> cells = report.cells(r);
            sb.append("<tr><td>").append(swatch(report, r)).append(QualityReport.escape(cells.getFirst())).append("</td>");
            for (String c : cells.subList(1, cells.size())) sb.append("<td>").append(QualityReport.escape(c)).append("</td>");
            sb.append("</tr>\n");
        }
        sb.append("</table>\n<p>").append(QualityReport.escape(QualityReport.TABLE_NOTE)).append("</p>\n");
        if (!report.failures().isEmpty()) {
            sb.append("<h2>Failed</h2>\n<table>\n<tr><th>evaluation</th><th>error</th></tr>\n");
            for (QualityReport.Failure f : report.failures()) {
                sb.append("<tr><td>").append(QualityReport.escape(f.label())).append("</td><td style=\"text-align:left\">").append(QualityReport.escape(f.error()))
                        .append("</td></tr>\n");
            }
            sb.append("</table>\n");
        }
        List<PairedDifference> pairs = report.pairedComparisons();
        ReportCharts.XAxis budget = report.budgetAxis();
        boolean sizes = report.records().stream().allMatch(r -> r.fileBytes() > 0);
        if (budget != null || sizes) {
            ReportCharts.XAxis x = budget != null ? budget : report.sizeAxis();
            String by = budget != null ? " by budget" : " vs size";
            boolean withBase = report.records().stream().anyMatch(EvalResult::hasBase);
            sb.append(ReportCharts.figure(ReportCharts.perplexityChart(report, x, "Perplexity" + by),
                    PERPLEXITY_CAPTION + (pairs.isEmpty() ? "" : PAIRED_CAPTION) + (withBase ? " Dashed grey: the base model's perplexity on the same tokens." : "") + DODGE_CAPTION));
            if (withBase) {
                if (budget != null) {
                    sb.append(ReportCharts.figure(ReportCharts.klChart(report, budget, "Mean KL divergence from the base" + by),
                            "Error bars: ±1 standard error of each evaluation's mean per-token KL divergence, on its own." + DODGE_CAPTION));
                }
                if (sizes) {
                    sb.append(ReportCharts.figure(ReportCharts.paretoChart(report), "x: the size of the whole file, kept tensors included. "
                            + "Dotted: the Pareto front, the points no other beats on both size and divergence." + DODGE_CAPTION));
                }
                sb.append(ReportCharts.figure(ReportCharts.chart(report, x, "Top-1 agreement with the base" + by, "top-1 agreement", EvalResult::top1,
                        QualityReport::top1Stderr, false), "Error bars: ±1 standard error of each evaluation's agreement, a proportion of its scored tokens." + DODGE_CAPTION));
            }
        }
        if (!pairs.isEmpty()) {
            sb.append("<h2>Paired comparisons</h2>\n<p>Mean per-token NLL difference (nats) on the same ").append(String.format(Locale.ROOT, "%,d", pairs.getFirst().tokens()))
                    .append(" tokens, first − second, with its 95% confidence interval (t distribution); negative: the first predicts better. "
                            + "Bold: the interval excludes 0.</p>\n<table>\n<tr><th>first</th><th>second</th><th>mean ΔNLL</th><th>95% CI</th><th>verdict</th></tr>\n");
            for (PairedDifference d : pairs) {
                String cls = d.real() ? " class=\"real\"" : "";
                sb.append("<tr><td>").append(QualityReport.escape(d.first())).append("</td><td style=\"text-align:left\">").append(QualityReport.escape(d.second())).append("</td><td>")
                        .append(String.format(Locale.ROOT, "%+.5f", d.mean())).append("</td><td>")
                        .append(String.format(Locale.ROOT, "[%+.5f, %+.5f]", d.low(), d.high())).append("</td><td").append(cls)
                        .append(" style=\"text-align:left\">").append(QualityReport.escape(d.verdict())).append("</td></tr>\n");
            }
            sb.append("</table>\n");
        }
        return sb.append("</body></html>\n").toString();
    }

    /** The series' colour, round for weight-only and square for npu as in the charts. */
    private static String swatch(QualityReport report, EvalResult r) {
        return "<span class=\"swatch\" style=\"background:" + QualityReport.hex(report.colour(r)) + (r.mode().equals("npu") ? "" : ";border-radius:50%") + "\"></span>";
    }
}
