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
import jquant.pack.model.ModelPacker;
import jquant.formats.jqw.QuantizationMetadata;
import jquant.formats.jqw.TensorEncoding;
import jquant.quantize.QuantLimits;
import jquant.runtime.LoadedModel;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.text.DecimalFormat;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

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
            out.printf("  model %s (fingerprint %s), %,d tokens, α searched on %,d sampled rows for budgets %s, beta %s%s%n%n",
                    stats.model(), stats.fingerprint(), stats.tokens(), stats.sampleTokens(), CalibrationStats.budgetList(stats.budgets()),
                    CalibrationStats.BETA, stats.hasSecondMoments() ? ", E[x·xᵀ] recorded" : "");
            CalibrateCommand.printAlphas(out, stats);
            out.println();
            TextTable table = new TextTable().text("output (S_O)").number("channels").number("max |o|");
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> outputs = (List<Map<String, Object>>) CalibrationStatsReport.describe(stats).get("outputs");
            for (Map<String, Object> o : outputs) table.row(o.get("name"), String.format("%,d", o.get("channels")), String.format("%.4g", o.get("oMax")));
            table.print(out, "  ");
        }
        out.flush();
        return 0;
    }

    private static void printTables(Checkpoint c, Map<String, Object> r, PrintWriter out) {
        ModelConfig cfg = c.config();
        out.printf("%s  (%s, %s architecture, RoPE %s%s)%n", c.source(), c.format(), cfg.architecture().ggufName(),
                c.rope().name().toLowerCase().replace('_', '-'), cfg.ropeScaling() == null ? "" : ", frequencies scaled (llama3)");
        out.printf("  dim %,d, hidden %,d, layers %,d, heads %,d / kv heads %,d (head dim %,d), vocab %,d, context %,d%n",
                cfg.dim(), cfg.hiddenDim(), cfg.layers(), cfg.heads(), cfg.kvHeads(), cfg.headDim(), cfg.vocabSize(), cfg.maxSeqLen());
        out.printf("  rope theta %s, rms eps %s, %s embeddings%n", decimal(cfg.ropeTheta()), decimal(cfg.rmsEps()), cfg.tiedEmbeddings() ? "tied" : "separate");
        c.vocabulary().ifPresentOrElse(
                v -> out.printf("  tokenizer: %s, %,d tokens, BOS %d, EOS %d%s%s%n", v.kind().name().toLowerCase(), v.size(), v.bos(), v.eos(),
                        v.addBos() ? ", adds BOS" : "", v.kind() == Vocabulary.Kind.BPE
                                ? ", pre-tokenizer " + v.preTokenizer().llamaCppName().orElse(v.preTokenizer().patterns().size() + " patterns") : ""),
                () -> out.println("  tokenizer: none found"));
        out.println();
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> tensors = (List<Map<String, Object>>) r.get("tensors");
        TextTable table = new TextTable().text("name").text("canonical").text("shape").text("dtype").number("bytes");
        for (Map<String, Object> row : tensors) {
            Tensor t = c.tensors().get((String) row.get("name"));
            table.row(t.name(), row.get("canonical"), t.shapeString(), t.dtype(), String.format("%,d", t.byteSize()));
        }
        table.print(out, "  ");
        @SuppressWarnings("unchecked")
        Map<String, Object> totals = (Map<String, Object>) r.get("totals");
        out.printf("%n  %,d tensors, %,d elements, %,d bytes%n", totals.get("tensors"), totals.get("elements"), totals.get("bytes"));
        if (c.tensors().values().stream().anyMatch(t -> t.dtype() == DType.T2P)) {
            out.println("  note: T2P (GGUF type 1000) is jquant's own layout: llama.cpp and other ggml-based readers refuse this file;"
                    + " jquant repack --type tq2_0 writes one they load");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> meta = (Map<String, Object>) r.get("metadata");
        if (!meta.isEmpty()) {
            out.println();
            out.println("  metadata:");
            meta.forEach((k, v) -> out.printf("    %s = %s%n", k, v));
        }
    }

    /**
     * What the plan kept out and how it stores them, in words: {@code kept as f16: the embedding (token_embd), the head
     * (output)}, named as {@code --keep} names them; with {@code auto}, each with the type it got ({@code kept as auto:
     * the embedding (token_embd) in q8, …}).
     */
    static String kept(QuantizationMetadata q, List<PackedFileReport.TensorRow> tensors) {
        if (q.keep().isEmpty()) return "nothing kept out of the plan";
        boolean auto = q.keepTypeLabel().equals(ModelPacker.KeepType.auto.name());
        List<String> names = new ArrayList<>();
        for (String name : q.keep()) {
            String word = Arrays.stream(KeepOption.values()).filter(k -> k.kind() != null && k.kind().canonicalName(0).equals(name))
                    .map(k -> "the " + k.name() + " (" + name + ")").findFirst().orElse(name);
            if (auto) {
                word += tensors.stream().filter(t -> t.name().equals(name)).findFirst()
                        .map(t -> " in " + (t.attrs().containsKey(TensorEncoding.KEPT) ? t.attrs().get(TensorEncoding.KEPT) : t.encoding()))
                        .orElse(" (tied to the embedding)");
            }
            names.add(word);
        }
        return "kept as " + q.keepTypeLabel() + ": " + String.join(", ", names);
    }

    /** A decimal as people write it: thousands separated, no exponent, no trailing zeros (10000.0 is 10,000; 1.0E-5 is 0.00001). */
    static String decimal(double value) {
        return new DecimalFormat("#,##0.##########").format(value);
    }

    private static void printPacked(PackedFileReport r, PrintWriter out) {
        JqwModelMetadata.ModelJson m = r.model();
        QuantizationMetadata q = r.quantization();
        out.printf("%s  (%s, %,d bytes)%n", r.file(), r.format(), r.bytes());
        out.printf("  dim %,d, hidden %,d, layers %,d, heads %,d / kv heads %,d, vocab %,d, context %,d, rope %s, %s embeddings%n",
                m.dim(), m.hiddenDim(), m.layers(), m.heads(), m.kvHeads(), m.vocabSize(), m.maxSeqLen(),
                m.rope().name().toLowerCase().replace('_', '-'), m.tiedEmbeddings() ? "tied" : "separate");
        out.printf("  tokenizer: %s, %,d tokens, BOS %d, EOS %d%n", r.tokenizer().kind().toLowerCase(), r.tokenizer().size(),
                r.tokenizer().bos(), r.tokenizer().eos());
        out.printf("  plan: budget %s, average %.4f bits over %,d tensors; %s; static activation scales: %s; rounding %s%n",
                decimal(q.budget()), q.averageBits(), r.planTensors(), kept(q, r.tensors()), q.activationScales() ? "yes" : "no", q.roundingLabel());
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
        TextTable layers = new TextTable().text("layer").number("offset").number("bytes").number("tensors");
        for (PackedFileReport.Layer l : r.layers()) layers.row(l.name(), String.format("%,d", l.offset()), String.format("%,d", l.bytes()), String.format("%,d", l.tensors()));
        layers.print(out, "  ");
        out.println();
        TextTable tensors = new TextTable().text("tensor").text("encoding").text("shape").number("bytes").number("avg");
        for (int bits = 1; bits <= QuantLimits.MAX_BITS; bits++) tensors.number(bits + (bits == 1 ? " bit" : " bits"));
        tensors.number("input scale");
        for (PackedFileReport.TensorRow t : r.tensors()) {
            StringBuilder shape = new StringBuilder();
            for (long d : t.shape()) shape.append(shape.isEmpty() ? "" : "×").append(d);
            List<Object> row = new ArrayList<>(List.of(t.name(), t.encoding(), shape, String.format("%,d", t.bytes()),
                    t.averageBits() != null ? String.format("%.3f", t.averageBits()) : ""));
            for (int b = 0; b < QuantLimits.MAX_BITS; b++) row.add(t.bitHistogram() != null ? String.format("%,d", t.bitHistogram()[b]) : "");
            Object in = t.attrs().get(TensorEncoding.INPUT_SCALE);
            row.add(in instanceof Number n ? String.format("%.4g", n.doubleValue()) : "");
            tensors.row(row.toArray());
        }
        tensors.print(out, "  ");
        out.println("  (1 bit … 8 bits: how many of the tensor's output channels are stored at that width)");
    }
}
