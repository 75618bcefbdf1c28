package jquant.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
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
import jquant.formats.jqw.JqwModelMetadata;
import jquant.pack.model.PackedFileReport;
import jquant.formats.jqw.QuantizationMetadata;
import jquant.formats.jqw.TensorEncoding;
import jquant.runtime.LoadedModel;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

/** {@code jquant inspect}: what a checkpoint holds, for people or (with --json) for machines. */
@Command(name = "inspect", description = "Show a checkpoint's format, architecture, config, tensors and metadata, a packed .jqw file's metadata, "
        + "bytes per layer and bit histograms, or a calibration stats file's contents.")
final class InspectCommand implements Callable<Integer> {

    @Parameters(paramLabel = "<checkpoint>", description = "llama2.c .bin, GGUF file, Hugging Face folder / .safetensors, jquant .jqw, or calibration stats")
    Path checkpoint;

    @Mixin
    TokenizerOption tokenizer = new TokenizerOption();

    @Option(names = "--json", description = "Print JSON instead of tables.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (CalibrationStatsFile.recognises(checkpoint)) return inspectStats();
        if (LoadedModel.isPacked(checkpoint)) return inspectPacked();
        try (Checkpoint c = Checkpoints.open(checkpoint, tokenizer.path)) {
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

    private static void printPacked(PackedFileReport r, PrintWriter out) {
        JqwModelMetadata.ModelJson m = r.model();
        QuantizationMetadata q = r.quantization();
        out.printf("%s  (%s, %,d bytes)%n", r.file(), r.format(), r.bytes());
        out.printf("  dim %d, hidden %d, layers %d, heads %d / kv heads %d, vocab %d, context %d, rope %s, %s embeddings%n",
                m.dim(), m.hiddenDim(), m.layers(), m.heads(), m.kvHeads(), m.vocabSize(), m.maxSeqLen(),
                m.rope().name().toLowerCase().replace('_', '-'), m.tiedEmbeddings() ? "tied" : "separate");
        out.printf("  tokenizer: %s, %d tokens, BOS %d, EOS %d%n", r.tokenizer().kind().toLowerCase(), r.tokenizer().size(),
                r.tokenizer().bos(), r.tokenizer().eos());
        out.printf("  plan: budget %s, average %.4f bits over %d tensors; kept float32: %s; static activation scales: %s; rounding %s%n",
                q.budget(), q.averageBits(), r.planTensors(), q.keep().isEmpty() ? "none" : q.keep().stream().map(k -> "\"" + k + "\"").collect(Collectors.joining(",", "[", "]")),
                q.activationScales() ? "yes" : "no", q.roundingLabel());
        QuantizationMetadata.Smoothing s = q.smoothing();
        if (s != null) {
            out.printf("  smoothing: %s, stats SHA-256 %s, model fingerprint %s, classifier smoothed: %s%n", s.ruleLabel(),
                    s.statsSha256(), s.modelFingerprint(), s.head());
            StringBuilder alphas = new StringBuilder("  α:");
            s.alpha().forEach((group, alpha) -> alphas.append(String.format(" %s %.2f", group, alpha)));
            out.println(alphas);
        } else {
            out.println("  smoothing: none");
        }
        out.println();
        out.printf("  %-12s %12s %12s %8s%n", "layer", "offset", "bytes", "tensors");
        for (PackedFileReport.Layer l : r.layers()) {
            out.printf("  %-12s %12d %,12d %8d%n", l.name(), l.offset(), l.bytes(), l.tensors());
        }
        out.println();
        out.printf("  %-18s %-10s %-12s %12s %7s  %-40s %s%n", "tensor", "encoding", "shape", "bytes", "avg", "channels at 1..8 bits", "input scale");
        for (PackedFileReport.TensorRow t : r.tensors()) {
            StringBuilder shape = new StringBuilder();
            for (long d : t.shape()) shape.append(shape.isEmpty() ? "" : "×").append(d);
            StringBuilder h = new StringBuilder();
            if (t.bitHistogram() != null) for (int n : t.bitHistogram()) h.append(String.format("%5d", n));
            Object in = t.attrs().get(TensorEncoding.INPUT_SCALE);
            out.printf("  %-18s %-10s %-12s %,12d %7s  %-40s %s%n", t.name(), t.encoding(), shape, t.bytes(),
                    t.averageBits() != null ? String.format("%.3f", t.averageBits()) : "", h,
                    in instanceof Number n ? String.format("%.4g", n.doubleValue()) : "");
        }
    }
}
