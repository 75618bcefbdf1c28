package jquant.pipeline;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.calibration.CalibrationStats;
import jquant.calibration.CalibrationStatsFile;
import jquant.calibration.Calibrator;
import jquant.calibration.Smoothing;
import jquant.calibration.StatsSmoothing;
import jquant.calibration.allocation.BitAllocation;
import jquant.formats.AtomicOutput;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.InputFiles;
import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwModelMetadata;
import jquant.pack.model.ModelPacker;
import jquant.pack.model.PackedModelVerifier;
import jquant.quantize.BitPlan;
import jquant.quantize.BitPlanJson;
import jquant.reports.EvalResult;
import jquant.reports.Evaluation;
import jquant.reports.QualityReport;
import jquant.runtime.KernelChoice;
import jquant.runtime.LoadedModel;
import jquant.runtime.PackedModelLoader;

import java.io.IOException;
import java.io.Serial;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * {@code jquant sweep}: one model, every method at every budget in every run mode, on one text, into
 * one folder and one report. Calibrates once (α searched for every budget, E[x·xᵀ] when a method rounds
 * with GPTQ), then per budget and method allocates, packs, verifies, and evaluates the file in each
 * mode against the model, whose logits over the text are computed once ({@link Evaluation#base}).
 *
 * <pre>
 *  DIR/sweep.json                     what the sweep is of: model, texts (SHA-256), ctx, calibration options, method recipes
 *  DIR/stats.gguf                     calibration
 *  DIR/&lt;method&gt;-&lt;B&gt;/plan.json         allocation
 *  DIR/&lt;method&gt;-&lt;B&gt;/model.jqw         the packed file
 *  DIR/&lt;method&gt;-&lt;B&gt;/verified          written once verify has recomputed every byte
 *  DIR/&lt;method&gt;-&lt;B&gt;/eval-&lt;mode&gt;.json   jquant eval --json of the file against the model
 *  DIR/compare/&lt;name&gt;/eval.json       a compare file's evaluation against the model, as jquant eval gives it
 *  DIR/compare/&lt;name&gt;/source.sha256   SHA-256 of the bytes it was evaluated from
 *  DIR/report/                        report.md, report.html, report.json over every evaluation
 * </pre>
 * Every file is written whole or not at all, so a sweep stopped anywhere resumes where it stopped:
 * whatever exists is kept (a done cell is skipped), and a folder made for another model, text, ctx
 * or calibration is refused rather than mixed in. A kept packed file is first checked against its own
 * layer checksums (a read of the file, far cheaper than packing it): one that fails is redone, with
 * its verification and evaluations, and the listener told why. A cell that fails (a corrupt file kept
 * in the folder, a file that does not verify) is listed with its error in the report, and the others
 * go on.
 *
 * <p>Compare files ({@link Options#compare}: other tools' quantizations of the model, a llama.cpp GGUF) are evaluated
 * beside the cells, on the same text, ctx and base, each as {@code jquant eval FILE --base MODEL} evaluates it, and
 * drawn as a series of their own at their file size. A checkpoint has no run mode (its tensors run as stored; the
 * NPU mode needs a packed file's static activation scales), so each is evaluated once (a {@code .jqw} given runs
 * weight-only, {@code jquant eval}'s default). They are not part of what
 * the folder is of: a compare file added to a sweep is evaluated and the rest kept, and one whose bytes changed
 * since its evaluation is evaluated again, the listener told.
 *
 * <p>The work is cut so that an engine can share it out ({@code jquant-distributed}): {@link #prepare}
 * (checks, manifest, calibration) on one machine, then each {@link WorkUnit} (a pack, a compare file) on any
 * {@link Worker} that reads and writes the folder, then {@link #report} from what they left there. {@link #run}
 * does all of it in this JVM, one unit after another.
 */
public final class Sweep {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    /** The manifest read back as its fields by name: compared field by field, so a number compares equal whatever Java type wrote it. */
    private static final TypeReference<Map<String, Object>> MANIFEST = new TypeReference<>() {};
    /** The calibration in the sweep's folder. */
    private static final String STATS = "stats.gguf";
    /** The folder of the compare files' evaluations, beside the packs' {@code <method>-<B>} folders. */
    private static final String COMPARE = "compare";

    /**
     * @param model           the model to quantize, also the base of every comparison
     * @param tokenizer       llama2.c tokenizer.bin for a .bin model, or null
     * @param data            evaluation text
     * @param calibrationData calibration text (its first {@code calibration.maxTokens()} tokens are used)
     * @param ctx             evaluation window
     * @param budgets         bit budgets, each a whole number of bits when a method has uniform widths
     * @param methods         methods to compare
     * @param modes           run modes to evaluate every file in
     * @param calibration     calibration options; their budgets and second moments are set from the sweep's
     * @param keep            tensors kept out of the plan ({@link ModelPacker#KEEPABLE})
     * @param keepType        how the kept tensors are stored
     * @param compare         other files of the model (any checkpoint jquant reads, a llama.cpp GGUF) evaluated beside the cells,
     *                        each a series named after its file ({@link Compare#seriesOf}); no two may share that name
     * @param out             the sweep's folder
     */
    public record Options(Path model, Path tokenizer, Path data, Path calibrationData, int ctx, List<Double> budgets,
                          List<QuantizationMethod> methods, List<PackedModelLoader.Mode> modes, Calibrator.Options calibration,
                          Set<TensorKind> keep, ModelPacker.KeepType keepType, List<Path> compare, Path out) {
        public Options {
            budgets = budgets.stream().sorted().distinct().toList();
            methods = List.copyOf(methods);
            modes = List.copyOf(modes);
            compare = List.copyOf(compare);
            if (budgets.isEmpty() || methods.isEmpty() || modes.isEmpty()) throw new IllegalArgumentException("a sweep needs budgets, methods and modes");
            for (QuantizationMethod m : methods) for (double b : budgets) m.allocation(b);
            // Each compare file is a series of its own, apart from the methods' and the other files'.
            Map<String, String> seriesTaken = new HashMap<>();
            for (QuantizationMethod m : methods) seriesTaken.put(m.label(), "the method's");
            for (Path file : compare) {
                String series = Compare.seriesOf(file);
                String other = seriesTaken.putIfAbsent(series, "--compare " + file + "'s");
                if (other != null) {
                    throw new IllegalArgumentException("--compare " + file + " would be series '" + series + "', which is " + other + ": give the file another name");
                }
            }
            calibration = new Calibrator.Options(calibration.maxTokens(), calibration.context(), calibration.sampleTokens(), budgets,
                    methods.stream().anyMatch(QuantizationMethod::needsSecondMoments), calibration.seed());
        }
    }

    /** One evaluation of the sweep, a row of its report: a packed file in one run mode, or a compare file. */
    public sealed interface Cell permits PackCell, Compare {
        /** How the sweep's lines and the report's failures name it. */
        String label();
    }

    /** A packed file's evaluation in one run mode. */
    public record PackCell(QuantizationMethod method, double budget, PackedModelLoader.Mode mode) implements Cell {
        @Override
        public String label() {
            return method.label() + " B=" + QualityReport.trim(budget) + " " + modeLabel(mode);
        }
    }

    /** What one worker takes at a time: a {@link Pack}, or a {@link Compare} file. */
    public sealed interface WorkUnit extends Serializable permits Pack, Compare {}

    /**
     * One packed file of the sweep, a method at a budget, with its evaluations in every mode: the unit of work
     * one worker takes (its modes share the file, so they are never split between workers).
     */
    public record Pack(QuantizationMethod method, double budget) implements WorkUnit {
        @Serial
        private static final long serialVersionUID = 1L;

        /** Its folder in the sweep's: {@code <method>-<B>}. */
        public String folder() {
            return method.label() + "-" + QualityReport.trim(budget);
        }
    }

    /**
     * A compare file ({@link Options#compare}), evaluated once against the model: both a cell of the report and a unit
     * of work.
     *
     * @param file   the file as an absolute path (a {@link Path} does not serialize, and a worker's working folder is not ours)
     * @param series its series in the report: {@link #seriesOf} the file
     */
    public record Compare(String file, String series) implements Cell, WorkUnit {
        @Serial
        private static final long serialVersionUID = 1L;

        static Compare of(Path file) {
            return new Compare(file.toAbsolutePath().normalize().toString(), seriesOf(file));
        }

        /** The file's name without its extension ({@code Q4_K_M} for {@code Q4_K_M.gguf}): what llama.cpp's files are named by. */
        public static String seriesOf(Path file) {
            Path fileName = file.toAbsolutePath().normalize().getFileName();
            String name = fileName == null ? file.toString() : fileName.toString();
            int dot = name.lastIndexOf('.');
            return dot > 0 ? name.substring(0, dot) : name;
        }

        public Path path() {
            return Path.of(file);
        }

        @Override
        public String label() {
            return series;
        }
    }

    /**
     * What became of one cell: its evaluation ({@code resumed} if it was there already), or the one-line
     * error that stopped it.
     */
    public record Outcome(Cell cell, EvalResult result, boolean resumed, String error) {
        public boolean failed() {
            return error != null;
        }
    }

    /** Told as the sweep proceeds. */
    public interface Listener {
        /** Calibration's progress, as {@link Calibrator#calibrate} tells it. */
        void calibrating(long done, long total, String stage);

        /** A cell is about to be worked on: {@code step} of {@code steps} ("pack", "verify", "eval"). */
        void working(Cell cell, String step);

        /**
         * A file kept from an earlier run no longer stands ({@code reason}): a packed file that failed its checksums, deleted
         * with what was made from it, or a compare file's evaluation whose file changed, deleted; either is made again.
         */
        void redoing(Path file, String reason);

        /** A cell has its evaluation, or failed ({@link Outcome#failed}); {@code done} of {@code total} cells are. */
        void cellDone(Outcome outcome, int done, int total);
    }

    private Sweep() {}

    /**
     * Runs (or resumes) the sweep in this JVM, one pack after another, and writes its report; returns the report.
     * A cell that fails is listed with its error in the report, and the others go on ({@link #report}).
     */
    public static QualityReport run(Options o, Listener listener) throws IOException {
        CalibrationStats stats = prepare(o, listener);
        List<Outcome> outcomes = new ArrayList<>();
        int total = cells(o).size();
        try (Worker worker = new Worker(o, stats)) {
            for (WorkUnit unit : workUnits(o)) {
                for (Outcome outcome : worker.run(unit, listener)) {
                    outcomes.add(outcome);
                    listener.cellDone(outcome, outcomes.size(), total);
                }
            }
        }
        return report(o, outcomes);
    }

    /**
     * What comes before the packs: every input read and checked before the folder is made or changed (a bad one
     * leaves nothing behind), the folder's manifest written or checked, the calibration made unless the folder's
     * stats are this sweep's, and every packed file kept from an earlier run checked against its checksums (one
     * that fails is deleted with what was made from it, so that its cells are made again), and every compare file's
     * evaluation kept only if the file's bytes are those it was made from; returns the stats. Every compare file is
     * opened before the folder is made: one that is not the model's shape and vocabulary is refused, naming both.
     * After it, {@link Worker}s on any machine that reads the folder take the {@link #workUnits}.
     */
    public static CalibrationStats prepare(Options o, Listener listener) throws IOException {
        byte[] manifest = manifest(o);
        Evaluation.readText(o.data());
        String calibrationText = Evaluation.readText(o.calibrationData());
        try (Checkpoint checkpoint = Checkpoints.open(o.model(), o.tokenizer())) {
            for (Path file : o.compare()) checkSameModel(checkpoint, file);
            checkOrWriteManifest(o.out(), manifest);
            CalibrationStats stats = stats(checkpoint, calibrationText, o.out().resolve(STATS), o, listener);
            for (Pack pack : packs(o)) {
                Path dir = o.out().resolve(pack.folder());
                recheck(dir, dir.resolve("model.jqw"), listener);
            }
            for (Compare compare : compares(o)) recheck(o, compare, listener);
            return stats;
        }
    }

    /** The sweep's packs, budget by budget, each budget's methods in the order given. */
    public static List<Pack> packs(Options o) {
        List<Pack> packs = new ArrayList<>();
        for (double budget : o.budgets()) for (QuantizationMethod method : o.methods()) packs.add(new Pack(method, budget));
        return packs;
    }

    /** The sweep's compare files, in the order given. */
    public static List<Compare> compares(Options o) {
        return o.compare().stream().map(Compare::of).toList();
    }

    /** What the workers take: every pack, then every compare file. */
    public static List<WorkUnit> workUnits(Options o) {
        List<WorkUnit> units = new ArrayList<>(packs(o));
        units.addAll(compares(o));
        return units;
    }

    /** The sweep's cells: every pack in every mode, then every compare file, in the order the report lists them. */
    public static List<Cell> cells(Options o) {
        List<Cell> cells = new ArrayList<>();
        for (Pack p : packs(o)) for (PackedModelLoader.Mode mode : o.modes()) cells.add(new PackCell(p.method(), p.budget(), mode));
        cells.addAll(compares(o));
        return cells;
    }

    /** Where a cell's evaluation is written: {@code DIR/<method>-<B>/eval-<mode>.json}, or {@code DIR/compare/<name>/eval.json}. */
    public static Path evalFile(Options o, Cell cell) {
        return switch (cell) {
            case PackCell p -> o.out().resolve(new Pack(p.method(), p.budget()).folder()).resolve("eval-" + modeLabel(p.mode()) + ".json");
            case Compare c -> o.out().resolve(COMPARE).resolve(c.series()).resolve("eval.json");
        };
    }

    /**
     * Works on the units of a {@link #prepare}d sweep: holds the model open and the sweep's stats, and runs the model
     * over the text once, at its first evaluation, for all of them ({@link Evaluation#base}).
     */
    public static final class Worker implements AutoCloseable {
        private final Options o;
        private final Checkpoint checkpoint;
        private final CalibrationStats stats;
        private Evaluation.Base base;

        /** A worker on a machine of its own: the stats read from the sweep's folder. */
        public Worker(Options o) throws IOException {
            this(o, CalibrationStatsFile.read(o.out().resolve(STATS)));
        }

        /** A worker given the stats {@link #prepare} returned. */
        public Worker(Options o, CalibrationStats stats) throws IOException {
            this.o = o;
            this.stats = stats;
            this.checkpoint = Checkpoints.open(o.model(), o.tokenizer());
        }

        /** Works on {@code unit}, skipping what the folder holds already; returns an outcome per cell of it. */
        public List<Outcome> run(WorkUnit unit, Listener listener) throws IOException {
            return switch (unit) {
                case Pack pack -> run(pack, listener);
                case Compare compare -> List.of(evaluate(compare, listener));
            };
        }

        /**
         * Allocates, packs, verifies and evaluates {@code pack} in every mode; returns an outcome per mode. What fails (a
         * corrupt file kept in the folder, a file that does not verify) fails the cells it stops, each with its error, and
         * nothing else.
         */
        private List<Outcome> run(Pack pack, Listener listener) throws IOException {
            Path dir = o.out().resolve(pack.folder());
            Files.createDirectories(dir);
            Path packed = dir.resolve("model.jqw");
            List<Outcome> outcomes = new ArrayList<>();
            String packError = null;
            for (PackedModelLoader.Mode mode : o.modes()) {
                PackCell cell = new PackCell(pack.method(), pack.budget(), mode);
                Path json = evalFile(o, cell);
                boolean resumed = Files.exists(json);
                if (resumed) {
                    outcomes.add(read(cell, json));
                    continue;
                }
                if (packError == null) {
                    try {
                        packAndVerify(checkpoint, stats, pack.method(), pack.budget(), dir, o, cell, listener);
                    } catch (IOException | RuntimeException e) {
                        packError = oneLine(e);
                    }
                }
                if (packError != null) {
                    outcomes.add(new Outcome(cell, null, false, packError));
                    continue;
                }
                try {
                    Evaluation.Base base = base(cell, listener);
                    listener.working(cell, "eval");
                    Evaluation.run(Evaluation.Request.of(packed, o.data()).ctx(o.ctx()).base(o.model()).tokenizer(o.tokenizer()).mode(mode)
                            .series(pack.method().label()), base, (d, n, where) -> {}).write(json);
                    outcomes.add(new Outcome(cell, EvalResult.read(json), false, null));
                } catch (IOException | RuntimeException e) {
                    outcomes.add(new Outcome(cell, null, false, oneLine(e)));
                }
            }
            return outcomes;
        }

        /**
         * Evaluates a compare file against the model unless the folder holds its evaluation ({@link #prepare} deleted one
         * of other bytes). The file opens with its own tokenizer, as {@code jquant eval FILE --base MODEL} opens it: the
         * sweep's {@code --tokenizer} is a llama2.c model's, which a GGUF refuses.
         */
        private Outcome evaluate(Compare compare, Listener listener) {
            Path json = evalFile(o, compare);
            if (Files.exists(json)) return read(compare, json);
            try {
                Evaluation.Base base = base(compare, listener);
                listener.working(compare, "eval");
                Evaluation.run(Evaluation.Request.of(compare.path(), o.data()).ctx(o.ctx()).base(o.model()).series(compare.series()), base,
                        (d, n, where) -> {}).write(json);
                return new Outcome(compare, EvalResult.read(json), false, null);
            } catch (IOException | RuntimeException e) {
                return new Outcome(compare, null, false, oneLine(e));
            }
        }

        /** The model run over the text, at the first evaluation that needs it. */
        private Evaluation.Base base(Cell cell, Listener listener) throws IOException {
            if (base == null) {
                listener.working(cell, "run the base model over the text once");
                base = Evaluation.base(o.model(), o.data(), o.ctx(), o.tokenizer(), KernelChoice.AUTO);
            }
            return base;
        }

        /** A cell done before: its evaluation as the folder holds it, or the error that reading it gives. */
        private static Outcome read(Cell cell, Path json) {
            try {
                return new Outcome(cell, EvalResult.read(json), true, null);
            } catch (IOException | RuntimeException e) {
                return new Outcome(cell, null, true, oneLine(e));
            }
        }

        @Override
        public void close() throws IOException {
            checkpoint.close();
        }
    }

    /** An error on one line, naming its file as the exception does. */
    private static String oneLine(Exception e) {
        String m = e.getMessage();
        if (m == null || m.isBlank()) m = e.getClass().getSimpleName();
        return m.replaceAll("\\s*\\R\\s*", " ");
    }

    /**
     * Writes the report of the cells' outcomes, in cell order whatever order they came in, listing the failed ones
     * with their errors; returns it. A sweep none of whose cells has an evaluation has no report: that is an error
     * naming the first failure.
     */
    public static QualityReport report(Options o, List<Outcome> outcomes) throws IOException {
        List<Cell> order = cells(o);
        List<Outcome> sorted = outcomes.stream().sorted(Comparator.comparingInt(x -> order.indexOf(x.cell()))).toList();
        List<EvalResult> results = sorted.stream().filter(x -> !x.failed()).map(Outcome::result).toList();
        List<QualityReport.Failure> failures = sorted.stream().filter(Outcome::failed).map(x -> new QualityReport.Failure(x.cell().label(), x.error())).toList();
        if (results.isEmpty()) {
            throw new IllegalStateException("every cell of the sweep failed; the first, " + failures.getFirst().label() + ": " + failures.getFirst().error());
        }
        QualityReport report = new QualityReport(title(o), results, failures);
        report.write(o.out().resolve("report"));
        return report;
    }

    /** The stats in the folder if they are this sweep's, else a new calibration. */
    private static CalibrationStats stats(Checkpoint checkpoint, String calibrationText, Path statsFile, Options o, Listener listener) throws IOException {
        if (Files.exists(statsFile)) {
            CalibrationStats stats = CalibrationStatsFile.read(statsFile);
            Smoothing.checkBelongs(checkpoint, stats);
            boolean searched = o.methods().stream().anyMatch(QuantizationMethod::searchesAlpha);
            boolean probed = o.methods().stream().anyMatch(QuantizationMethod::lossSensitive);
            if ((searched && !stats.budgets().containsAll(o.budgets())) || (o.calibration().secondMoments() && !stats.hasSecondMoments())
                    || (probed && !stats.hasProbeTokens())) {
                throw new IllegalArgumentException(statsFile + " was calibrated for budgets " + CalibrationStats.budgetList(stats.budgets())
                        + (stats.hasSecondMoments() ? "" : " without E[x·xᵀ]") + (stats.hasProbeTokens() ? "" : " without the loss probe's sample")
                        + ", which this sweep's budgets or methods outgrow: delete it to calibrate again");
            }
            return stats;
        }
        return Calibrator.calibrate(checkpoint, calibrationText, o.calibration(), statsFile, listener::calibrating);
    }

    /**
     * A packed file kept from an earlier run, checked against its layer checksums: a changed one is
     * deleted with its {@code verified} mark and evaluations, so that the cell is made again.
     */
    private static void recheck(Path dir, Path packed, Listener listener) throws IOException {
        if (!Files.exists(packed)) return;
        try (JqwFile checked = JqwFile.open(packed)) {
            return;
        } catch (CheckpointException e) {
            listener.redoing(packed, e.getMessage());
        }
        try (var files = Files.list(dir)) {
            for (Path f : files.toList()) {
                String name = f.getFileName().toString();
                if (name.equals("verified") || (name.startsWith("eval-") && name.endsWith(".json"))) Files.delete(f);
            }
        }
        Files.delete(packed);
    }

    /**
     * A compare file's evaluation kept from an earlier run, kept only if the file's bytes are those it was evaluated
     * from ({@code source.sha256} beside it): else it is deleted, the listener told, and the bytes recorded for the new one.
     */
    private static void recheck(Options o, Compare compare, Listener listener) throws IOException {
        Path json = evalFile(o, compare), source = json.resolveSibling("source.sha256");
        String digests = digests(compare.path());
        if (Files.exists(source) && Files.readString(source, StandardCharsets.UTF_8).equals(digests)) return;
        if (Files.exists(json)) {
            listener.redoing(json, compare.file() + " is not the file it was evaluated from (its SHA-256 differs)");
            Files.delete(json);
        }
        Files.createDirectories(json.getParent());
        AtomicOutput.write(source, out -> out.write(digests.getBytes(StandardCharsets.UTF_8)));
    }

    /** {@code sha256sum}'s lines for every file a model at {@code model} reads ({@link Checkpoints#inputFiles}) that exists. */
    private static String digests(Path model) throws IOException {
        StringBuilder lines = new StringBuilder();
        for (Path f : Checkpoints.inputFiles(model, null)) {
            if (Files.isRegularFile(f)) lines.append(InputFiles.sha256(f)).append("  ").append(f.toAbsolutePath().normalize()).append('\n');
        }
        return lines.toString();
    }

    /**
     * Refuses a compare file that cannot be a quantization of the model: another architecture, shape or vocabulary,
     * naming both. A packed file's config and vocabulary are read from its metadata, a checkpoint's from its header.
     */
    private static void checkSameModel(Checkpoint model, Path file) throws IOException {
        ModelConfig config;
        Vocabulary vocabulary;
        if (LoadedModel.isPacked(file)) {
            try (JqwFile packed = JqwFile.openWithoutLayerChecksums(file)) {
                config = JqwModelMetadata.config(packed);
                vocabulary = JqwModelMetadata.vocabulary(packed);
            }
        } else {
            try (Checkpoint c = Checkpoints.open(file, null)) {
                config = c.config();
                vocabulary = c.vocabulary().orElseThrow(() -> new CheckpointException(file, "has no tokenizer of its own, which a compare file needs"));
            }
        }
        String shape = shape(config), modelShape = shape(model.config());
        if (!shape.equals(modelShape)) {
            throw new CheckpointException(file, "is not a file of " + model.source() + ": its shape (" + shape + ") is not the model's (" + modelShape + ")");
        }
        if (model.vocabulary().isPresent() && !vocabulary.pieces().equals(model.vocabulary().get().pieces())) {
            throw new CheckpointException(file, "its vocabulary differs from " + model.source() + "'s: KL divergence needs the same tokens");
        }
    }

    /** What a quantization keeps of a model: architecture and every dimension. */
    private static String shape(ModelConfig c) {
        return c.architecture().name().toLowerCase(Locale.ROOT) + ", dim " + c.dim() + ", hidden " + c.hiddenDim() + ", " + c.layers() + " layers, "
                + c.heads() + "/" + c.kvHeads() + " heads of " + c.headDim() + ", vocabulary " + c.vocabSize();
    }

    /** Allocates, packs and verifies one method at one budget, each step skipped if its file is there. */
    private static void packAndVerify(Checkpoint checkpoint, CalibrationStats stats, QuantizationMethod method, double budget, Path dir, Options o,
                                      Cell cell, Listener listener) throws IOException {
        Path planFile = dir.resolve("plan.json"), packed = dir.resolve("model.jqw"), verified = dir.resolve("verified");
        if (!Files.exists(planFile)) {
            listener.working(cell, "allocate");
            BitPlanJson.write(BitAllocation.allocate(checkpoint, stats, method.allocation(budget, stats), (d, n, name) -> {}), planFile);
        }
        BitPlan plan = BitPlanJson.read(planFile);
        StatsSmoothing smoothing = StatsSmoothing.of(checkpoint, stats, plan);
        if (!Files.exists(packed)) {
            listener.working(cell, "pack");
            ModelPacker.pack(checkpoint, new ModelPacker.Options(plan, o.keep(), o.keepType(), smoothing, method.rounding()), packed, (d, n, name) -> {});
        }
        if (!Files.exists(verified)) {
            listener.working(cell, "verify");
            PackedModelVerifier.Report report = PackedModelVerifier.verify(packed, checkpoint, smoothing, (d, n, name) -> {});
            if (!report.ok()) throw new IllegalStateException(packed + " does not verify: " + report.problems().getFirst());
            String line = report.tensorsChecked() + " tensors, " + report.bytesChecked() + " bytes recomputed and equal\n";
            AtomicOutput.write(verified, out -> out.write(line.getBytes(StandardCharsets.UTF_8)));
        }
    }

    /**
     * {@code sweep.json}: the model, both texts by SHA-256, ctx, keep and calibration options, and each
     * method's recipe ({@link QuantizationMethod#recipe}). A folder
     * whose manifest differs belongs to another sweep, and its files must not be mixed with this one's
     * (budgets and methods may grow: they add cells).
     */
    private static byte[] manifest(Options o) throws IOException {
        ObjectNode m = JSON.createObjectNode();
        m.put("model", o.model().toAbsolutePath().normalize().toString());
        m.put("data", Evaluation.sha256(InputFiles.readAllBytes(o.data())));
        m.put("calibrationData", Evaluation.sha256(InputFiles.readAllBytes(o.calibrationData())));
        m.put("ctx", o.ctx());
        m.put("keep", o.keep().stream().map(k -> k.canonicalName(0)).sorted().toList().toString());
        m.put("keepType", o.keepType().name());
        m.put("calibrationTokens", o.calibration().maxTokens()).put("calibrationContext", o.calibration().context())
                .put("sampleTokens", o.calibration().sampleTokens()).put("seed", o.calibration().seed());
        // Every method's recipe, chosen or not: methods may be added to a folder later, and a pack made by an
        // older recipe must not be resumed beside new ones.
        for (QuantizationMethod method : QuantizationMethod.values()) m.put("method." + method.label(), method.recipe());
        return JSON.writeValueAsBytes(m);
    }

    /** Makes the folder and writes {@code manifest} there, or checks it is the one already there. */
    private static void checkOrWriteManifest(Path out, byte[] manifest) throws IOException {
        Path file = out.resolve("sweep.json");
        if (Files.exists(file)) {
            // Compared as read back, so that a number compares equal whatever Java type wrote it.
            Map<String, Object> there = JSON.readValue(InputFiles.readAllBytes(file), MANIFEST), here = JSON.readValue(manifest, MANIFEST);
            if (!there.equals(here)) {
                throw new IllegalArgumentException(out + " holds another sweep (its sweep.json differs in " + differences(there, here) + "); "
                        + "use another --out or delete it");
            }
            return;
        }
        Files.createDirectories(out);
        AtomicOutput.write(file, w -> w.write(manifest));
    }

    /** The manifest fields in which {@code there} (the folder's) and {@code here} (this run's) differ, with both values; a text by name. */
    private static String differences(Map<String, Object> there, Map<String, Object> here) {
        Set<String> fields = new java.util.LinkedHashSet<>(here.keySet());
        fields.addAll(there.keySet());
        List<String> differing = new ArrayList<>();
        for (String f : fields) {
            Object a = there.get(f), b = here.get(f);
            if (Objects.equals(a, b)) continue;
            boolean text = f.equals("data") || f.equals("calibrationData");
            differing.add(text ? f + " (another text)" : f + " (" + (a == null ? "absent" : a) + " there, " + (b == null ? "absent" : b) + " here)");
        }
        return String.join(", ", differing);
    }

    private static String title(Options o) {
        return "jquant sweep: " + o.model().getFileName() + " on " + o.data().getFileName();
    }

    /** {@code weight-only}, {@code npu}: how a cell's files name its mode. */
    public static String modeLabel(PackedModelLoader.Mode mode) {
        return mode.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
}
