package jquant.reports;

import jquant.formats.AtomicOutput;

import java.awt.Color;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * A quality-versus-size report over evaluations of one text: the model its renderers draw — a Markdown
 * table for people and reviews ({@link MarkdownReport}), an HTML page with the table and charts
 * ({@link HtmlReport}, {@link ReportCharts}), and JSON for CI jobs ({@link JsonReport}), all with the same
 * figures, which this class computes once.
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
 *   <li><b>Charts by budget.</b> Perplexity, KL divergence and top-1 agreement are drawn against the
 *       budget when every evaluation (but the base's own) is of a packed model that records one, else
 *       against the file's size. Series that share an x are spread a little apart so each error bar
 *       shows; the base model's perplexity is one line, and an evaluation of the base itself is that
 *       line, not also a point.</li>
 *   <li><b>Error bars</b> from the evaluation's own ±, unpaired: the perplexity's standard error, and
 *       for the KL divergence and top-1 agreement the standard error of their per-token means. Every
 *       chart says so, since two bars overlap where the paired comparison finds a real difference.</li>
 *   <li><b>Pareto chart</b>: bits per weight of the whole file (8 · bytes / the base model's weights)
 *       against mean KL divergence, with the front of the points no other point beats on both.</li>
 *   <li><b>Paired comparisons</b> ({@link PairedDifference}): every two evaluations of one run mode and
 *       budget, and every evaluation against the base, as the mean per-token NLL difference with its
 *       95% confidence interval, so a reader sees which differences are real.</li>
 * </ul>
 */
public final class QualityReport {
    /** Colours by series name, in order of first appearance (Okabe–Ito's colour-blind-safe palette without its yellow, then more). */
    private static final Color[] PALETTE = {new Color(0x0072B2), new Color(0xD55E00), new Color(0x009E73), new Color(0xCC79A7),
            new Color(0xE69F00), new Color(0x56B4E9), new Color(0x000000), new Color(0x882255), new Color(0x999933), new Color(0x999999)};

    private final String title;
    private final List<EvalResult> records;
    private final List<Failure> failures;
    private final Map<String, Color> colours = new LinkedHashMap<>();

    /** An evaluation the report should have held but that failed ({@code jquant sweep}'s cell), with its one-line error. */
    public record Failure(String label, String error) {}

    /** @throws IllegalArgumentException if the evaluations are not on one text, ctx and base model */
    public QualityReport(String title, List<EvalResult> records) {
        this(title, records, List.of());
    }

    /** As {@link #QualityReport(String, List)}, also listing the evaluations that failed, after the table. */
    public QualityReport(String title, List<EvalResult> records, List<Failure> failures) {
        if (records.isEmpty()) throw new IllegalArgumentException("a report needs at least one evaluation");
        this.title = title;
        this.records = List.copyOf(records);
        this.failures = List.copyOf(failures);
        checkComparable(this.records);
        for (EvalResult r : this.records) colours.computeIfAbsent(colourKey(r), s -> PALETTE[colours.size() % PALETTE.length]);
    }

    String title() { return title; }

    List<EvalResult> records() { return records; }

    /** The evaluations that failed, in the order given. */
    public List<Failure> failures() { return failures; }

    /** The series an evaluation is drawn in: {@code edgeflow · npu}, or the mode alone ({@code npu}, {@code checkpoint}). */
    static String series(EvalResult r) {
        String mode = r.mode().isEmpty() ? "checkpoint" : r.mode();
        return r.series().isEmpty() ? mode : r.mode().isEmpty() ? r.series() : r.series() + " · " + mode;
    }

    /** What picks a series' colour: its name, or its mode when it has none. */
    private static String colourKey(EvalResult r) {
        return r.series().isEmpty() ? series(r) : r.series();
    }

    Color colour(EvalResult r) {
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

    static String fileName(String path) {
        Path name = Path.of(path).getFileName();
        return name == null ? path : name.toString();
    }

    /** The base model the evaluations compare with, or null if none does. */
    EvalResult withBase() {
        return records.stream().filter(r -> r.base() != null).findFirst().orElse(null);
    }

    /**
     * Whether {@code r} is an evaluation of the base model itself (by file name, as {@link #checkComparable}
     * compares bases, and by perplexity): the charts draw the base once, as a line, not also as a point.
     */
    boolean isBase(EvalResult r) {
        EvalResult b = withBase();
        return b != null && fileName(r.model()).equals(fileName(b.base()))
                && Math.abs(r.perplexity() - b.baseResult().perplexity()) <= 1e-9 * b.baseResult().perplexity();
    }

    boolean bitsPerWeightKnown() {
        return records.stream().allMatch(r -> !Double.isNaN(r.bitsPerWeight()));
    }

    /** x of a point: bits per weight of the whole file, or its size in MB when a file does not give the weights. */
    double x(EvalResult r) {
        return bitsPerWeightKnown() ? r.bitsPerWeight() : r.fileBytes() / 1e6;
    }

    String xTitle() {
        return bitsPerWeightKnown() ? "bits per weight (whole file)" : "file size (MB)";
    }

    /** The size of each file: {@link #x} under {@link #xTitle}. */
    ReportCharts.XAxis sizeAxis() {
        return new ReportCharts.XAxis(xTitle(), this::x);
    }

    /**
     * The budget of each evaluation's plan, the average bits per weight of the quantized layers, or null
     * unless every evaluation but the base's own ({@link #isBase}) is of a packed model that records one. The tensors kept out of the plan
     * (the embedding and head by default) are outside it; on a small model they are most of the file,
     * so its bits per weight of the whole file sit far above the budget.
     */
    ReportCharts.XAxis budgetAxis() {
        boolean known = records.stream().allMatch(r -> isBase(r) || r.quantization() != null && !Double.isNaN(r.quantization().budget()));
        return known ? new ReportCharts.XAxis("budget (bits per weight of the quantized layers)", r -> r.quantization().budget()) : null;
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

    /** The Markdown table and paired comparisons ({@link MarkdownReport}), as {@code report.md} holds them. */
    public String markdown() {
        return MarkdownReport.render(this);
    }

    /** The files {@link #write} puts in its folder. */
    public static final List<String> FILES = List.of("report.md", "report.html", "report.json");

    /** Writes {@code <dir>/report.md}, {@code report.html} and {@code report.json}, each atomically. */
    public void write(Path dir) throws IOException {
        String md = markdown();
        String html = HtmlReport.render(this);
        byte[] json = JsonReport.render(this);
        AtomicOutput.write(dir.resolve("report.md"), out -> out.write(md.getBytes(StandardCharsets.UTF_8)));
        AtomicOutput.write(dir.resolve("report.html"), out -> out.write(html.getBytes(StandardCharsets.UTF_8)));
        AtomicOutput.write(dir.resolve("report.json"), out -> out.write(json));
    }

    /** Base model, text, ctx and token counts: what every figure below is measured on. */
    String heading() {
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

    /** Which interval is which, under the table. */
    static final String TABLE_NOTE = "±: each evaluation's own standard error (unpaired), as the charts' error bars. "
            + "ΔNLL vs base and the paired comparisons are paired: the mean per-token difference on the same tokens, whose interval is usually far narrower.";

    static final String[] COLUMNS = {"series", "budget", "file bytes", "bits/weight", "perplexity", "±", "ΔNLL vs base [95% CI]",
            "mean KLD", "±", "KLD p99", "top-1", "seconds"};

    List<String> cells(EvalResult r) {
        PairedDifference d = againstBase(r);
        return List.of(series(r), r.quantization() == null ? "" : trim(r.quantization().budget()),
                r.fileBytes() < 0 ? "" : String.format(Locale.ROOT, "%,d", r.fileBytes()), fmt("%.3f", r.bitsPerWeight()),
                fmt("%.4f", r.perplexity()), fmt("%.4f", r.stderr()), d == null ? "" : intervalText(d),
                fmt("%.6f", r.meanKl()), fmt("%.6f", klStderr(r)), fmt("%.5f", r.klP99()), fmt("%.4f", r.top1()), fmt("%.1f", r.seconds()));
    }

    static String intervalText(PairedDifference d) {
        return String.format(Locale.ROOT, "%+.5f [%+.5f, %+.5f]", d.mean(), d.low(), d.high());
    }

    static String hex(Color c) {
        return String.format(Locale.ROOT, "#%06X", c.getRGB() & 0xFFFFFF);
    }

    /** Absent values are JSON null, never a NaN token a JSON parser would reject. */
    static Double finite(double v) {
        return Double.isNaN(v) ? null : v;
    }

    static String fmt(String format, double v) {
        return Double.isNaN(v) ? "" : String.format(Locale.ROOT, format, v);
    }

    /** {@code 5} for 5.0, {@code 4.5} for 4.5. */
    public static String trim(double v) {
        return Double.isNaN(v) ? "" : v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }

    static String escape(String s) {
        return Objects.requireNonNull(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
