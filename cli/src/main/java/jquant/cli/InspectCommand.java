package jquant.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import jquant.calibration.CalibrationStats;
import jquant.calibration.CalibrationStatsFile;
import jquant.calibration.GroupStats;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.ModelConfig;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.jqw.JqwFile;
import jquant.runtime.LoadedModel;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.lang.reflect.Array;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code jquant inspect}: what a checkpoint holds, for people or (with --json) for machines. */
@Command(name = "inspect", description = "Show a checkpoint's format, architecture, config, tensors and metadata, a packed .jqw file's metadata, "
        + "bytes per layer and bit histograms, or a calibration stats file's contents.")
final class InspectCommand implements Callable<Integer> {

    @Parameters(paramLabel = "<checkpoint>", description = "llama2.c .bin, GGUF file, Hugging Face folder / .safetensors, jquant .jqw, or calibration stats")
    Path checkpoint;

    @Option(names = "--tokenizer", paramLabel = "<file>", description = "llama2.c tokenizer.bin for a .bin checkpoint (default: tokenizer.bin or tok<vocab>.bin beside it)")
    Path tokenizer;

    @Option(names = "--json", description = "Print JSON instead of tables.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (CalibrationStatsFile.recognises(checkpoint)) return inspectStats();
        if (LoadedModel.isPacked(checkpoint)) return inspectPacked();
        try (Checkpoint c = Checkpoints.open(checkpoint, tokenizer)) {
            Map<String, Object> report = describe(c);
            PrintWriter out = spec.commandLine().getOut();
            if (json) {
                out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(report));
            } else {
                printTables(c, report, out);
            }
            out.flush();
        }
        return 0;
    }

    /** A jquant packed model file (jquant pack): metadata summary, bytes per layer, bit histogram per tensor. */
    private int inspectPacked() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        try (JqwFile f = JqwFile.open(checkpoint)) {
            var report = PackedFileReport.describe(f);
            if (json) {
                out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(report));
            } else {
                PackedFileReport.print(report, out);
            }
        }
        out.flush();
        return 0;
    }

    /** A calibration stats file (jquant calibrate): its run, α per group and the ranges it measured. */
    private int inspectStats() throws Exception {
        CalibrationStats stats = CalibrationStatsFile.read(checkpoint);
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(describe(stats)));
        } else {
            out.printf("%s  (calibration stats, %s)%n", checkpoint, CalibrationStatsFile.ARCHITECTURE);
            out.printf("  model %s (fingerprint %s), %d tokens, α search on %d sampled rows at %d-bit weights, beta %s%n%n",
                    stats.model(), stats.fingerprint(), stats.tokens(), stats.sampleTokens(), stats.referenceBits(), CalibrationStats.BETA);
            CalibrateCommand.printAlphas(out, stats);
            out.println();
            out.printf("  %-24s %8s %12s%n", "output (S_O)", "channels", "max |o|");
            stats.outputMax().forEach((name, v) -> out.printf("  %-24s %8d %12.4g%n", name, v.length, max(v)));
        }
        out.flush();
        return 0;
    }

    static Map<String, Object> describe(CalibrationStats stats) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("format", CalibrationStatsFile.ARCHITECTURE);
        r.put("model", stats.model());
        r.put("fingerprint", stats.fingerprint());
        r.put("tokens", stats.tokens());
        r.put("sampleTokens", stats.sampleTokens());
        r.put("referenceBits", stats.referenceBits());
        r.put("beta", CalibrationStats.BETA);
        List<Map<String, Object>> groups = new ArrayList<>();
        for (GroupStats g : stats.groups()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("name", g.name());
            row.put("channels", g.channels());
            row.put("alpha", g.alpha());
            row.put("xMax", g.inputRange());
            row.put("alphaError", g.alphaError());
            row.put("unsmoothedError", g.unsmoothedError());
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

    /** The inspect report as plain maps and lists, the shape of the JSON output. */
    static Map<String, Object> describe(Checkpoint c) {
        ModelConfig cfg = c.config();
        Map<String, String> canonical = canonicalNames(c);
        List<Map<String, Object>> tensors = new ArrayList<>();
        long params = 0, bytes = 0;
        for (Tensor t : c.tensors().values()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("name", t.name());
            row.put("canonical", canonical.getOrDefault(t.name(), ""));
            row.put("shape", t.shape());
            row.put("dtype", t.dtype().name());
            row.put("bytes", t.byteSize());
            tensors.add(row);
            params += t.elements();
            bytes += t.byteSize();
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("file", c.source().toString());
        r.put("format", c.format());
        r.put("architecture", "llama");
        r.put("config", cfg);
        r.put("headDim", cfg.headDim());
        r.put("rope", c.rope().name());
        c.vocabulary().ifPresent(v -> {
            Map<String, Object> vocab = new LinkedHashMap<>();
            vocab.put("kind", v.kind().name());
            vocab.put("size", v.size());
            vocab.put("bos", v.bos());
            vocab.put("eos", v.eos());
            vocab.put("addBos", v.addBos());
            r.put("vocabulary", vocab);
        });
        r.put("tensors", tensors);
        Map<String, Object> totals = new LinkedHashMap<>();
        totals.put("tensors", tensors.size());
        totals.put("elements", params);
        totals.put("bytes", bytes);
        r.put("totals", totals);
        Map<String, Object> meta = new LinkedHashMap<>();
        c.metadata().forEach((k, v) -> meta.put(k, summarize(v)));
        r.put("metadata", meta);
        return r;
    }

    private static Map<String, String> canonicalNames(Checkpoint c) {
        Map<String, String> names = new HashMap<>();
        for (TensorKind kind : TensorKind.values()) {
            int layers = kind.perLayer() ? c.config().layers() : 1;
            for (int l = 0; l < layers; l++) {
                int layer = l;
                c.sourceName(kind, l).ifPresent(n -> names.put(n, kind.canonicalName(layer)));
            }
        }
        return names;
    }

    /** Long arrays (GGUF token lists) are shown as their type and length, not their content. */
    private static Object summarize(Object v) {
        if (v instanceof List<?> l && l.size() > 8) return "[" + l.size() + " items]";
        if (v != null && v.getClass().isArray() && Array.getLength(v) > 8) return "[" + Array.getLength(v) + " items]";
        return v;
    }

    private static void printTables(Checkpoint c, Map<String, Object> r, PrintWriter out) {
        ModelConfig cfg = c.config();
        out.printf("%s  (%s, Llama architecture, RoPE %s)%n", c.source(), c.format(), c.rope().name().toLowerCase().replace('_', '-'));
        out.printf("  dim %d, hidden %d, layers %d, heads %d / kv heads %d (head dim %d), vocab %d, context %d%n",
                cfg.dim(), cfg.hiddenDim(), cfg.layers(), cfg.heads(), cfg.kvHeads(), cfg.headDim(), cfg.vocabSize(), cfg.maxSeqLen());
        out.printf("  rope theta %s, rms eps %s, %s embeddings%n", cfg.ropeTheta(), cfg.rmsEps(), cfg.tiedEmbeddings() ? "tied" : "separate");
        c.vocabulary().ifPresentOrElse(
                v -> out.printf("  tokenizer: %s, %d tokens, BOS %d, EOS %d%s%n", v.kind().name().toLowerCase(), v.size(), v.bos(), v.eos(), v.addBos() ? ", adds BOS" : ""),
                () -> out.println("  tokenizer: none found"));
        out.println();
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> tensors = (List<Map<String, Object>>) r.get("tensors");
        int w = "name".length();
        for (Map<String, Object> t : tensors) w = Math.max(w, t.get("name").toString().length());
        String fmt = "  %-" + w + "s  %-16s  %-12s  %-6s  %12s%n";
        out.printf(fmt, "name", "canonical", "shape", "dtype", "bytes");
        for (Map<String, Object> row : tensors) {
            Tensor t = c.tensors().get((String) row.get("name"));
            out.printf(fmt, t.name(), row.get("canonical"), t.shapeString(), t.dtype(), String.format("%,d", t.byteSize()));
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> totals = (Map<String, Object>) r.get("totals");
        out.printf("%n  %d tensors, %,d elements, %,d bytes%n", totals.get("tensors"), totals.get("elements"), totals.get("bytes"));
        @SuppressWarnings("unchecked")
        Map<String, Object> meta = (Map<String, Object>) r.get("metadata");
        if (!meta.isEmpty()) {
            out.println();
            out.println("  metadata:");
            meta.forEach((k, v) -> out.printf("    %s = %s%n", k, v));
        }
    }
}
