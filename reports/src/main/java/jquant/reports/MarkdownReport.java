package jquant.reports;

import java.util.List;
import java.util.Locale;

/** {@code report.md}: the report's table and its paired comparisons, for people and reviews. */
final class MarkdownReport {
    private MarkdownReport() {}

    static String render(QualityReport report) {
        StringBuilder sb = new StringBuilder("# ").append(report.title()).append("\n\n").append(report.heading()).append("\n\n");
        sb.append("| ").append(String.join(" | ", QualityReport.COLUMNS)).append(" |\n|");
        for (int i = 0; i < QualityReport.COLUMNS.length; i++) sb.append(i == 0 ? " --- |" : " ---: |");
        sb.append('\n');
        for (EvalResult r : report.records()) sb.append("| ").append(String.join(" | ", report.cells(r))).append(" |\n");
        sb.append('\n').append(QualityReport.TABLE_NOTE).append('\n');
        if (!report.failures().isEmpty()) {
            sb.append("\n## Failed\n\n").append(report.failures().size()).append(" evaluation").append(report.failures().size() == 1 ? "" : "s")
                    .append(" failed and are not in the table:\n\n| evaluation | error |\n| --- | --- |\n");
            for (QualityReport.Failure f : report.failures()) sb.append("| ").append(f.label()).append(" | ").append(f.error().replace("|", "\\|")).append(" |\n");
        }
        List<PairedDifference> pairs = report.pairedComparisons();
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
}
