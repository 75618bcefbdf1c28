package jquant.calibration;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@code jquant inspect} shows of a calibration stats file: its run, α per group and budget with
 * the errors the search compared, and the largest input and output magnitudes it measured.
 */
public final class CalibrationStatsReport {
    private CalibrationStatsReport() {}

    /** The report as plain maps and lists, the shape of {@code jquant inspect --json}'s output. */
    public static Map<String, Object> describe(CalibrationStats stats) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("format", CalibrationStatsFile.ARCHITECTURE);
        r.put("model", stats.model());
        r.put("fingerprint", stats.fingerprint());
        r.put("tokens", stats.tokens());
        r.put("sampleTokens", stats.sampleTokens());
        r.put("budgets", stats.budgets());
        r.put("secondMoments", stats.hasSecondMoments());
        r.put("beta", CalibrationStats.BETA);
        List<Map<String, Object>> groups = new ArrayList<>();
        for (GroupStats g : stats.groups()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("name", g.name());
            row.put("channels", g.channels());
            row.put("xMax", g.inputRange());
            List<Map<String, Object>> alphas = new ArrayList<>();
            for (GroupStats.SearchedAlpha a : g.alphas()) {
                Map<String, Object> e = new LinkedHashMap<>();
                e.put("budget", a.budget());
                e.put("alpha", a.alpha());
                e.put("error", a.error());
                e.put("unsmoothedError", a.unsmoothedError());
                e.put("inputClip", a.inputClip());
                alphas.add(e);
            }
            row.put("alphas", alphas);
            row.put("x2MeanMax", max(g.inputMeanSquare()));
            groups.add(row);
        }
        r.put("groups", groups);
        List<Map<String, Object>> outputs = new ArrayList<>();
        stats.outputMax().forEach((name, v) -> {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("name", name);
            row.put("channels", v.length);
            row.put("oMax", max(v));
            outputs.add(row);
        });
        r.put("outputs", outputs);
        return r;
    }

    private static float max(float[] v) {
        float m = 0;
        for (float x : v) m = Math.max(m, x);
        return m;
    }
}
