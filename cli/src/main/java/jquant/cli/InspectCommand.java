package jquant.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.calibration.CalibrationStats;
import jquant.calibration.CalibrationStatsFile;
import jquant.calibration.CalibrationStatsReport;
import jquant.formats.Checkpoint;
import jquant.formats.CheckpointReport;
import jquant.formats.Checkpoints;
import jquant.formats.DType;
import jquant.formats.ModelConfig;
import jquant.formats.Tensor;
import jquant.formats.Vocabulary;
import jquant.formats.jqw.JqwFile;
import jquant.pack.model.ModelPacker;
import jquant.pack.model.PackedFileReport;
import jquant.formats.jqw.TensorEncoding;
import jquant.runtime.LoadedModel;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
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
            Map<String, Object> report = CheckpointReport.describe(c);
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
                printPacked(report, out);
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
            out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(CalibrationStatsReport.describe(stats)));
        } else {
            out.printf("%s  (calibration stats, %s)%n", checkpoint, CalibrationStatsFile.ARCHITECTURE);
            out.printf("  model %s (fingerprint %s), %d tokens, α searched on %d sampled rows for budgets %s, beta %s%s%n%n",
                    stats.model(), stats.fingerprint(), stats.tokens(), stats.sampleTokens(), CalibrationStats.budgetList(stats.budgets()),
                    CalibrationStats.BETA, stats.hasSecondMoments() ? ", E[x·xᵀ] recorded" : "");
            CalibrateCommand.printAlphas(out, stats);
            out.println();
            out.printf("  %-24s %8s %12s%n", "output (S_O)", "channels", "max |o|");
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> outputs = (List<Map<String, Object>>) CalibrationStatsReport.describe(stats).get("outputs");
            for (Map<String, Object> o : outputs) out.printf("  %-24s %8d %12.4g%n", o.get("name"), o.get("channels"), o.get("oMax"));
        }
        out.flush();
        return 0;
    }

    private static void printTables(Checkpoint c, Map<String, Object> r, PrintWriter out) {
        ModelConfig cfg = c.config();
        out.printf("%s  (%s, %s architecture, RoPE %s%s)%n", c.source(), c.format(), cfg.architecture().ggufName(),
                c.rope().name().toLowerCase().replace('_', '-'), cfg.ropeScaling() == null ? "" : ", frequencies scaled (llama3)");
        out.printf("  dim %d, hidden %d, layers %d, heads %d / kv heads %d (head dim %d), vocab %d, context %d%n",
                cfg.dim(), cfg.hiddenDim(), cfg.layers(), cfg.heads(), cfg.kvHeads(), cfg.headDim(), cfg.vocabSize(), cfg.maxSeqLen());
        out.printf("  rope theta %s, rms eps %s, %s embeddings%n", cfg.ropeTheta(), cfg.rmsEps(), cfg.tiedEmbeddings() ? "tied" : "separate");
        c.vocabulary().ifPresentOrElse(
                v -> out.printf("  tokenizer: %s, %d tokens, BOS %d, EOS %d%s%s%n", v.kind().name().toLowerCase(), v.size(), v.bos(), v.eos(),
                        v.addBos() ? ", adds BOS" : "", v.kind() == Vocabulary.Kind.BPE
                                ? ", pre-tokenizer " + v.preTokenizer().llamaCppName().orElse(v.preTokenizer().patterns().size() + " patterns") : ""),
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
        if (c.tensors().values().stream().anyMatch(t -> t.dtype() == DType.T2P)) {
            out.println("  note: T2P (GGUF type 1000) is jquant's own layout: llama.cpp and other ggml-based readers refuse this file;"
                    + " jquant repack --format tq2_0 writes one they load");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> meta = (Map<String, Object>) r.get("metadata");
        if (!meta.isEmpty()) {
            out.println();
            out.println("  metadata:");
            meta.forEach((k, v) -> out.printf("    %s = %s%n", k, v));
        }
    }

    private static void printPacked(ObjectNode r, PrintWriter out) {
        JsonNode m = r.path("model"), q = r.path("quantization"), tok = r.path("tokenizer");
        out.printf("%s  (%s, %,d bytes)%n", r.path("file").asText(), r.path("format").asText(), r.path("bytes").asLong());
        out.printf("  dim %d, hidden %d, layers %d, heads %d / kv heads %d, vocab %d, context %d, rope %s, %s embeddings%n",
                m.path("dim").asInt(), m.path("hiddenDim").asInt(), m.path("layers").asInt(), m.path("heads").asInt(), m.path("kvHeads").asInt(),
                m.path("vocabSize").asInt(), m.path("maxSeqLen").asInt(), m.path("rope").asText().toLowerCase().replace('_', '-'),
                m.path("tiedEmbeddings").asBoolean() ? "tied" : "separate");
        out.printf("  tokenizer: %s, %d tokens, BOS %d, EOS %d%n", tok.path("kind").asText().toLowerCase(), tok.path("size").asInt(),
                tok.path("bos").asInt(), tok.path("eos").asInt());
        out.printf("  plan: budget %s, average %.4f bits over %d tensors; kept float32: %s; static activation scales: %s; rounding %s%n",
                q.path("budget").asText(), q.path("averageBits").asDouble(), r.path("planTensors").asInt(),
                q.path("keep").isEmpty() ? "none" : q.path("keep").toString(), q.path("activationScales").asBoolean() ? "yes" : "no",
                q.path(ModelPacker.ROUNDING).asText("rtn"));
        JsonNode s = q.path(ModelPacker.SMOOTHING);
        if (s.isObject()) {
            out.printf("  smoothing: %s, stats SHA-256 %s, model fingerprint %s, classifier smoothed: %s%n", s.path("rule").asText("edgeflow"),
                    s.path(ModelPacker.STATS_SHA256).asText(), s.path(ModelPacker.MODEL_FINGERPRINT).asText(), s.path("head").asBoolean());
            StringBuilder alphas = new StringBuilder("  α:");
            s.path("alpha").properties().forEach(e -> alphas.append(String.format(" %s %.2f", e.getKey(), e.getValue().asDouble())));
            out.println(alphas);
        } else {
            out.println("  smoothing: none");
        }
        out.println();
        out.printf("  %-12s %12s %12s %8s%n", "layer", "offset", "bytes", "tensors");
        for (JsonNode l : r.path("layers")) {
            out.printf("  %-12s %12d %,12d %8d%n", l.path("name").asText(), l.path("offset").asLong(), l.path("bytes").asLong(), l.path("tensors").asInt());
        }
        out.println();
        out.printf("  %-18s %-10s %-12s %12s %7s  %-40s %s%n", "tensor", "encoding", "shape", "bytes", "avg", "channels at 1..8 bits", "input scale");
        for (JsonNode t : r.path("tensors")) {
            StringBuilder shape = new StringBuilder();
            for (JsonNode d : t.path("shape")) shape.append(shape.isEmpty() ? "" : "×").append(d.asLong());
            StringBuilder h = new StringBuilder();
            for (JsonNode n : t.path("bitHistogram")) h.append(String.format("%5d", n.asInt()));
            JsonNode in = t.path("attrs").path(TensorEncoding.INPUT_SCALE);
            out.printf("  %-18s %-10s %-12s %,12d %7s  %-40s %s%n", t.path("name").asText(), t.path("encoding").asText(), shape,
                    t.path("bytes").asLong(), t.has("averageBits") ? String.format("%.3f", t.path("averageBits").asDouble()) : "",
                    h, in.isNumber() ? String.format("%.4g", in.asDouble()) : "");
        }
    }
}
