package jquant.reports;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** {@code report.json}: the report's figures for CI jobs; absent values are null. */
final class JsonReport {
    private JsonReport() {}

    static byte[] render(QualityReport report) throws java.io.IOException {
        return new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsBytes(model(report));
    }

    static Map<String, Object> model(QualityReport report) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("title", report.title());
        EvalResult b = report.withBase();
        if (b != null) {
            Map<String, Object> base = new LinkedHashMap<>();
            base.put("model", b.base());
            base.put("perplexity", QualityReport.finite(b.baseResult().perplexity()));
            base.put("stderr", QualityReport.finite(b.baseResult().stderr()));
            base.put("meanNll", QualityReport.finite(b.baseResult().meanNll()));
            m.put("base", base);
        }
        EvalResult first = report.records().getFirst();
        Map<String, Object> text = new LinkedHashMap<>();
        text.put("data", first.data());
        text.put("sha256", first.dataSha256().isEmpty() ? null : first.dataSha256());
        text.put("ctx", first.ctx());
        text.put("tokens", first.result().tokens());
        text.put("windows", first.result().windows());
        text.put("scored", first.scored());
        m.put("text", text);
        m.put("xAxis", report.xTitle());
        Map<String, Map<String, Object>> series = new LinkedHashMap<>();
        for (EvalResult r : report.records()) {
            series.computeIfAbsent(QualityReport.series(r), name -> {
                Map<String, Object> s = new LinkedHashMap<>();
                s.put("name", name);
                s.put("colour", QualityReport.hex(report.colour(r)));
                s.put("marker", r.mode().equals("npu") ? "square" : "circle");
                return s;
            });
        }
        m.put("series", new ArrayList<>(series.values()));
        List<Map<String, Object>> rows = new ArrayList<>();
        for (EvalResult r : report.records()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("model", r.model());
            row.put("series", QualityReport.series(r));
            row.put("mode", r.mode().isEmpty() ? "checkpoint" : r.mode());
            row.put("budget", r.quantization() == null ? null : QualityReport.finite(r.quantization().budget()));
            row.put("rounding", r.quantization() == null ? null : r.quantization().rounding());
            row.put("fileBytes", r.fileBytes() < 0 ? null : r.fileBytes());
            row.put("bitsPerWeight", QualityReport.finite(r.bitsPerWeight()));
            row.put("perplexity", QualityReport.finite(r.perplexity()));
            row.put("stderr", QualityReport.finite(r.stderr()));
            row.put("scored", r.scored());
            row.put("basePerplexity", QualityReport.finite(r.basePerplexity()));
            row.put("meanKl", QualityReport.finite(r.meanKl()));
            row.put("klStderr", QualityReport.finite(QualityReport.klStderr(r)));
            row.put("klP99", QualityReport.finite(r.klP99()));
            row.put("top1Agreement", QualityReport.finite(r.top1()));
            row.put("top1Stderr", QualityReport.finite(QualityReport.top1Stderr(r)));
            PairedDifference d = QualityReport.againstBase(r);
            row.put("nllVsBase", d == null ? null : interval(d));
            row.put("seconds", QualityReport.finite(r.seconds()));
            row.put("threads", r.threads() < 1 ? null : r.threads());
            rows.add(row);
        }
        m.put("evaluations", rows);
        List<Map<String, Object>> pairs = new ArrayList<>();
        for (PairedDifference d : report.pairedComparisons()) {
            Map<String, Object> p = interval(d);
            p.put("first", d.first());
            p.put("second", d.second());
            p.put("verdict", d.verdict());
            pairs.add(p);
        }
        m.put("pairedComparisons", pairs);
        List<Map<String, Object>> failed = new ArrayList<>();
        for (QualityReport.Failure f : report.failures()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("evaluation", f.label());
            row.put("error", f.error());
            failed.add(row);
        }
        m.put("failed", failed);
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
}
