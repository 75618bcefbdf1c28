package jquant.calibration;

import jquant.formats.CheckpointException;
import jquant.formats.DType;
import jquant.formats.FileFormat;
import jquant.formats.InputFiles;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.LlamaLayout;
import jquant.formats.ModelConfig;
import jquant.formats.gguf.GgufFile;
import jquant.formats.gguf.GgufTensorInfo;
import jquant.formats.gguf.GgufType;
import jquant.formats.gguf.GgufValue;
import jquant.formats.gguf.GgufWriter;
import jquant.quantize.QuantLimits;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import java.util.zip.CRC32C;

/**
 * The calibration stats file: a GGUF v3 file (so any GGUF tool can list it) holding only F32
 * tensors and metadata.
 * <pre>
 *  metadata
 *    general.architecture                = "jquant-calibration"
 *    jquant.calibration.version          = 4                 (UINT32)
 *    jquant.calibration.fingerprint      = "3f2a…"           {@link ModelFingerprint} of the model (64 hex digits)
 *    jquant.calibration.model            = "stories260K.bin" file name, for display
 *    jquant.calibration.tokens           = 4096              (UINT32) tokens run
 *    jquant.calibration.sample_tokens    = 512               (UINT32) rows per group the α search used
 *    jquant.calibration.budgets          = [3.0, 4.0, …]     (ARRAY of FLOAT64) budgets α was searched for, ascending
 *    jquant.calibration.probe_tokens     = [1, 403, …]       (ARRAY of UINT32) the first ≤ 512 token ids of the calibration
 *                                                           text, allocate's loss-probe sample (absent in older files)
 *    jquant.calibration.beta             = 1.0               (FLOAT32)
 *    per group g (blk.L.attn_qkv, blk.L.attn_output, blk.L.ffn_gate_up, blk.L.ffn_down, output), in forward order,
 *    one entry per budget:
 *    jquant.calibration.alpha.g            (ARRAY of FLOAT32) chosen α
 *    jquant.calibration.alpha_error.g      (ARRAY of FLOAT64) output error at α
 *    jquant.calibration.unsmoothed_error.g (ARRAY of FLOAT64) output error at α = 0
 *    jquant.calibration.x_max.g            (FLOAT32) max |x| of the whole input tensor = max of g.s_in (checked on read)
 *    jquant.calibration.xx_crc.g           (UINT32) CRC32C of g.xx_mean's bytes, only with g.xx_mean
 *  tensors (F32), per group in forward order
 *    g.s_in      [D]           S_I: max |x| per input channel
 *    g.x2_mean   [D]           E[x²] per input channel
 *    g.xx_mean   [D(D+1)/2]    E[x·xᵀ], its upper triangle row by row (row i: columns i … D−1), only when
 *                              calibration recorded it (calibrate --second-moments)
 *    t.s_out     [C]           S_O: max |o| per output channel of each member t of g (blk.L.attn_q, …, output)
 *  last metadata entry
 *    jquant.calibration.checksum         (UINT32) CRC32C of everything else but the xx_mean bytes, which
 *                                        their xx_crc entries stand for ({@link #checksum})
 * </pre>
 * The file is written as calibration goes, one layer's groups at a time ({@link Writer}): the header
 * first with placeholder values, each group's tensors when its layer is done, the α, errors and
 * checksums over the placeholders last. Reading checks the architecture, version, the checksum and that
 * every group and layer of the model is present; it leaves each E[x·xᵀ] in the file ({@link
 * SecondMoment.Stored}), read and checked against its xx_crc when pack asks for that group. Older
 * versions still read:
 * <pre>
 *  version 3  as version 4, but g.xx_mean is the whole matrix [D, D], no xx_crc entries, the s_out tensors
 *             after all groups, and the checksum covers every byte (checked when the file is read)
 *  version 2  as version 3 but one α per group searched at one uniform width, not one per budget:
 *    jquant.calibration.reference_bits   = 5                 (UINT32) weight width of the α search, instead of budgets
 *    jquant.calibration.alpha.g            (FLOAT32) chosen α
 *    jquant.calibration.alpha_error.g      (FLOAT64) output error at α
 *    jquant.calibration.unsmoothed_error.g (FLOAT64) output error at α = 0
 *    no g.xx_mean
 *  version 1  as version 2 without the checksum (nothing to verify against)
 * </pre>
 * Their α read as the α of one budget, {@code reference_bits} (their search quantized every channel at
 * that width, which is the plan at that budget before allocation moves bits). Allocating at another
 * budget asks to calibrate again or to fix α.
 * {@code jquant inspect} shows the version.
 */
public final class CalibrationStatsFile {
    public static final String ARCHITECTURE = "jquant-calibration";
    public static final int VERSION = 4;
    /** The version before the checksum; read without one (one α per group, like version 2). */
    static final int UNCHECKED_VERSION = 1;
    /** Name, identifier and versions, checked as every versioned file of jquant's is. */
    static final FileFormat FORMAT = new FileFormat("calibration stats file", ARCHITECTURE, UNCHECKED_VERSION, VERSION);
    /** E[x·xᵀ] as the whole D×D matrix, every byte under the file's checksum. */
    static final int SQUARE_MOMENT_VERSION = 3;
    static final String CHECKSUM_KEY = "jquant.calibration.checksum";
    static final String PREFIX = "jquant.calibration.";
    private static final String PROBE_TOKENS_KEY = "probe_tokens";
    private static final String MOMENT_SUFFIX = ".xx_mean";
    /** Floats converted per write of a moment's bytes. */
    private static final int CHUNK = 1 << 20;

    private CalibrationStatsFile() {}

    /**
     * What a stats file says of its whole run.
     *
     * @param fingerprint  {@link ModelFingerprint#of} the calibrated model
     * @param model        the checkpoint's file name, for display
     * @param tokens       calibration tokens run
     * @param sampleTokens input rows per group the α search used
     * @param budgets      the budgets α is searched for, ascending
     * @param probeTokens  the loss probe's sample ({@link CalibrationStats#probeTokens}), or null to write none
     */
    public record Header(String fingerprint, String model, int tokens, int sampleTokens, List<Double> budgets, int[] probeTokens) {
        public Header {
            budgets = List.copyOf(budgets);
            probeTokens = probeTokens == null ? null : probeTokens.clone();
        }
    }

    /**
     * One group's place in the file: what its tensors will hold, known before it is calibrated.
     *
     * @param outputs each member's output channels (S_O lengths), keyed by {@link CalibrationStats#tensorName}
     */
    record Slot(LinearGroup group, int layer, int channels, SequencedMap<String, Integer> outputs, boolean secondMoment) {
        String name() { return group.canonicalName(layer); }
    }

    /** The groups of a model of {@code config}, in forward order, as calibration fills them. */
    static List<Slot> slots(ModelConfig config, boolean secondMoments) {
        List<Slot> slots = new ArrayList<>();
        for (int layer = 0; layer < config.layers(); layer++) {
            for (LinearGroup g : LinearGroup.values()) if (g.perLayer()) slots.add(slot(config, g, layer, secondMoments));
        }
        slots.add(slot(config, LinearGroup.HEAD, 0, secondMoments));
        return slots;
    }

    private static Slot slot(ModelConfig config, LinearGroup g, int layer, boolean secondMoments) {
        SequencedMap<String, Integer> outputs = new LinkedHashMap<>();
        for (TensorKind kind : g.members()) outputs.put(CalibrationStats.tensorName(kind, layer), (int) LlamaLayout.expectedShape(kind, config)[0]);
        return new Slot(g, layer, (int) LlamaLayout.expectedShape(g.members().getFirst(), config)[1], outputs, secondMoments);
    }

    /** Writes {@code stats} (reading each group's E[x·xᵀ] from where it lies) to {@code target}, which appears when complete. */
    public static void write(CalibrationStats stats, Path target) throws IOException {
        List<Slot> slots = new ArrayList<>();
        for (GroupStats g : stats.groups()) {
            SequencedMap<String, Integer> outputs = new LinkedHashMap<>();
            for (TensorKind kind : g.group().members()) {
                String name = CalibrationStats.tensorName(kind, g.layer());
                outputs.put(name, stats.outputMax().get(name).length);
            }
            slots.add(new Slot(g.group(), g.layer(), g.channels(), outputs, g.secondMoment() != null));
        }
        try (Writer w = new Writer(target, new Header(stats.fingerprint(), stats.model(), stats.tokens(), stats.sampleTokens(), stats.budgets(), stats.probeTokens()), slots)) {
            for (GroupStats g : stats.groups()) w.write(g, stats.outputMax());
            w.finish();
        }
    }

    /**
     * A stats file written group by group as calibration finishes them, so that no more than one layer's
     * statistics are ever in memory: the tensor table and placeholder metadata first ({@link
     * GgufWriter.Stream}), then each group's tensors in {@link #slots} order, then the metadata that
     * depends on them. The file appears at its target only when {@link #finish}ed.
     */
    public static final class Writer implements AutoCloseable {
        private final Header header;
        private final List<Slot> slots;
        private final GgufWriter.Stream out;
        /** The groups written so far without their E[x·xᵀ] (gigabytes at 8B, already in the file): what the metadata needs. */
        private final List<GroupStats> written = new ArrayList<>();
        private final List<Long> momentCrcs = new ArrayList<>();
        /** Every tensor but the moments, for the checksum at the end (vectors: small). */
        private final List<Tensor> vectors = new ArrayList<>();

        Writer(Path target, Header header, List<Slot> slots) throws IOException {
            this.header = header;
            this.slots = List.copyOf(slots);
            this.out = new GgufWriter.Stream(target, metadata(header, this.slots, List.of(), List.of()), table(this.slots));
        }

        /** Opens {@code target} for the stats of a model of {@code config}. */
        public static Writer open(Path target, Header header, ModelConfig config, boolean secondMoments) throws IOException {
            return new Writer(target, header, slots(config, secondMoments));
        }

        /** Writes the next group (in forward order) and its members' S_O from {@code outputMax}. */
        public void write(GroupStats g, java.util.Map<String, float[]> outputMax) throws IOException {
            Slot slot = slots.get(written.size());
            if (slot.group() != g.group() || slot.layer() != g.layer() || slot.channels() != g.channels() || slot.secondMoment() != (g.secondMoment() != null)) {
                throw new IllegalStateException("group " + g.name() + " written where the file expects " + slot.name());
            }
            if (!g.alphas().stream().map(GroupStats.SearchedAlpha::budget).toList().equals(header.budgets())) {
                throw new IllegalArgumentException(g.name() + ": α searched for other budgets than the file's " + header.budgets());
            }
            vector(g.name() + ".s_in", g.inputMax());
            vector(g.name() + ".x2_mean", g.inputMeanSquare());
            if (g.secondMoment() != null) momentCrcs.add(writeMoment(g.secondMoment()));
            for (var member : slot.outputs().entrySet()) {
                float[] sOut = outputMax.get(member.getKey());
                if (sOut == null || sOut.length != member.getValue()) {
                    throw new IllegalArgumentException(member.getKey() + ": S_O has " + (sOut == null ? "no" : sOut.length) + " channels, expected " + member.getValue());
                }
                vector(stripWeight(member.getKey()) + ".s_out", sOut);
            }
            written.add(new GroupStats(g.group(), g.layer(), g.inputMax(), g.inputMeanSquare(), g.alphas(), null));
        }

        private void vector(String name, float[] values) throws IOException {
            Tensor t = CalibrationStatsFile.vector(name, values);
            vectors.add(t);
            out.write(GgufWriter.PendingTensor.of(t).bytes());
        }

        /** The upper triangle, little-endian float32, in chunks; returns its CRC32C. */
        private long writeMoment(SecondMoment moment) throws IOException {
            float[] triangle = moment instanceof SecondMoment.Held held ? held.triangle() : moment.upperTriangle();
            CRC32C crc = new CRC32C();
            ByteBuffer chunk = ByteBuffer.allocateDirect(4 * CHUNK).order(ByteOrder.LITTLE_ENDIAN);
            out.write(channel -> {
                for (int at = 0; at < triangle.length; at += CHUNK) {
                    int n = Math.min(CHUNK, triangle.length - at);
                    chunk.clear();
                    chunk.asFloatBuffer().put(triangle, at, n);
                    chunk.limit(4 * n);
                    crc.update(chunk.duplicate());
                    GgufWriter.writeFully(channel, chunk);
                }
            });
            return crc.getValue();
        }

        /** Writes the final metadata over the placeholder and puts the file in place. */
        public void finish() throws IOException {
            if (written.size() != slots.size()) throw new IllegalStateException((slots.size() - written.size()) + " groups are not written");
            SequencedMap<String, GgufValue> meta = metadata(header, slots, written, momentCrcs);
            meta.put(CHECKSUM_KEY, GgufValue.uint32(checksum(meta, table(slots), vectors)));
            out.finish(meta);
        }

        @Override
        public void close() throws IOException {
            out.close();
        }
    }

    /** The tensor table of {@code slots}: per group s_in, x2_mean, xx_mean (if recorded), each member's s_out. */
    private static List<GgufWriter.PendingTensor> table(List<Slot> slots) {
        List<GgufWriter.PendingTensor> table = new ArrayList<>();
        for (Slot s : slots) {
            table.add(entry(s.name() + ".s_in", s.channels()));
            table.add(entry(s.name() + ".x2_mean", s.channels()));
            if (s.secondMoment()) table.add(entry(s.name() + MOMENT_SUFFIX, SecondMoment.triangleSize(s.channels())));
            s.outputs().forEach((name, rows) -> table.add(entry(stripWeight(name) + ".s_out", rows)));
        }
        return table;
    }

    private static GgufWriter.PendingTensor entry(String name, long length) {
        return new GgufWriter.PendingTensor(name, new long[] {length}, DType.F32, channel -> {
            throw new IllegalStateException("tensor " + name + " is written by the stats writer");
        });
    }

    /**
     * The metadata: the run's, then per group α, errors, x_max and the moment's CRC. Groups not written
     * yet (all of them in the placeholder) get zeros of the same types and lengths, so that the final
     * metadata takes exactly the placeholder's bytes.
     */
    private static SequencedMap<String, GgufValue> metadata(Header h, List<Slot> slots, List<GroupStats> groups, List<Long> momentCrcs) {
        SequencedMap<String, GgufValue> meta = new LinkedHashMap<>();
        meta.put("general.architecture", GgufValue.string(ARCHITECTURE));
        meta.put(PREFIX + "version", GgufValue.uint32(VERSION));
        meta.put(PREFIX + "fingerprint", GgufValue.string(h.fingerprint()));
        meta.put(PREFIX + "model", GgufValue.string(h.model()));
        meta.put(PREFIX + "tokens", GgufValue.uint32(h.tokens()));
        meta.put(PREFIX + "sample_tokens", GgufValue.uint32(h.sampleTokens()));
        meta.put(PREFIX + "budgets", doubles(h.budgets()));
        if (h.probeTokens() != null) {
            meta.put(PREFIX + PROBE_TOKENS_KEY, GgufValue.array(GgufType.UINT32, java.util.Arrays.stream(h.probeTokens()).mapToObj(GgufValue::uint32).toList()));
        }
        meta.put(PREFIX + "beta", GgufValue.float32(CalibrationStats.BETA));
        int moments = 0;
        for (int i = 0; i < slots.size(); i++) {
            Slot s = slots.get(i);
            GroupStats g = i < groups.size() ? groups.get(i) : null;
            List<GroupStats.SearchedAlpha> alphas = g != null ? g.alphas()
                    : h.budgets().stream().map(b -> new GroupStats.SearchedAlpha(b, 0f, 0, 0, 1f)).toList();
            meta.put(PREFIX + "alpha." + s.name(), GgufValue.array(GgufType.FLOAT32, alphas.stream().map(a -> GgufValue.float32(a.alpha())).toList()));
            meta.put(PREFIX + "alpha_error." + s.name(), doubles(alphas.stream().map(GroupStats.SearchedAlpha::error).toList()));
            meta.put(PREFIX + "unsmoothed_error." + s.name(), doubles(alphas.stream().map(GroupStats.SearchedAlpha::unsmoothedError).toList()));
            meta.put(PREFIX + "input_clip." + s.name(), GgufValue.array(GgufType.FLOAT32, alphas.stream().map(a -> GgufValue.float32(a.inputClip())).toList()));
            meta.put(PREFIX + "x_max." + s.name(), GgufValue.float32(g != null ? g.inputRange() : 0f));
            if (s.secondMoment()) {
                meta.put(PREFIX + "xx_crc." + s.name(), GgufValue.uint32(g != null ? momentCrcs.get(moments++) : 0));
            }
        }
        meta.put(CHECKSUM_KEY, GgufValue.uint32(0));
        return meta;
    }

    /** Whether {@code file} is a GGUF file whose architecture is {@value #ARCHITECTURE}. */
    public static boolean recognises(Path file) {
        if (!Files.isRegularFile(file)) return false;
        try (GgufFile gguf = GgufFile.open(file)) {
            GgufValue arch = gguf.metadata().get("general.architecture");
            return arch != null && arch.value() instanceof String s && s.equals(ARCHITECTURE);
        } catch (CheckpointException e) {
            return false;
        }
    }

    /** Reads and checks a stats file; anything wrong with it is a {@link CheckpointException} naming the file. */
    public static CalibrationStats read(Path file) throws CheckpointException {
        InputFiles.requireRegularFile(file);
        GgufFile gguf;
        try {
            gguf = GgufFile.open(file);
        } catch (CheckpointException e) {
            String reason = e.getMessage().startsWith(file + ": ") ? e.getMessage().substring(file.toString().length() + 2) : e.getMessage();
            throw new CheckpointException(file, "not a calibration stats file (" + reason + ")", e);
        }
        try (gguf) {
            return parse(gguf);
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new CheckpointException(file, e.getMessage(), e);
        }
    }

    /**
     * Version 4's checksum: CRC32C of the content but the checksum itself and the moments' bytes (which
     * their xx_crc entries stand for): each metadata key, type and value (floats by their bits) in order,
     * then each table entry's name, type and shape, and the bytes of every vector. Computed on the values,
     * not the file's bytes, so that it is the same however a GGUF writer lays them out.
     */
    static long checksum(SequencedMap<String, GgufValue> meta, List<GgufWriter.PendingTensor> table, List<Tensor> vectors) {
        CRC32C crc = metadataCrc(meta);
        for (GgufWriter.PendingTensor t : table) {
            crc.update((t.name() + "\0" + t.dtype() + "\0" + shapeString(t.shape()) + "\0").getBytes(StandardCharsets.UTF_8));
        }
        for (Tensor t : vectors) crc.update(t.data().asByteBuffer());
        return crc.getValue();
    }

    /** Versions 2 and 3: as above, each tensor's name, type, shape and bytes in file order, every byte included. */
    static long checksumOfEverything(SequencedMap<String, GgufValue> meta, List<Tensor> tensors) {
        CRC32C crc = metadataCrc(meta);
        for (Tensor t : tensors) {
            crc.update((t.name() + "\0" + t.dtype() + "\0" + t.shapeString() + "\0").getBytes(StandardCharsets.UTF_8));
            crc.update(t.data().asByteBuffer());
        }
        return crc.getValue();
    }

    private static String shapeString(long[] shape) {
        return String.join("×", java.util.Arrays.stream(shape).mapToObj(Long::toString).toList());
    }

    private static CRC32C metadataCrc(SequencedMap<String, GgufValue> meta) {
        CRC32C crc = new CRC32C();
        meta.forEach((key, v) -> {
            if (key.equals(CHECKSUM_KEY)) return;
            crc.update((key + "\0" + v.type().id() + "\0" + canonical(v.value()) + "\0").getBytes(StandardCharsets.UTF_8));
        });
        return crc;
    }

    private static String canonical(Object value) {
        return switch (value) {
            case Float f -> Integer.toHexString(Float.floatToRawIntBits(f));
            case Double d -> Long.toHexString(Double.doubleToRawLongBits(d));
            default -> String.valueOf(value);
        };
    }

    private static CalibrationStats parse(GgufFile gguf) {
        SequencedMap<String, GgufValue> meta = gguf.metadata();
        GgufValue arch = meta.get("general.architecture");
        FORMAT.checkIdentifier("general.architecture", arch == null ? null : arch.value());
        int version = FORMAT.checkVersion(meta(meta, "version").asLong());
        SequencedMap<String, Tensor> tensors = gguf.tensors();
        if (version != UNCHECKED_VERSION) {
            GgufValue stored = meta.get(CHECKSUM_KEY);
            if (stored == null || stored.type() != GgufType.UINT32) {
                throw new IllegalArgumentException("metadata " + CHECKSUM_KEY + " (UINT32) is missing");
            }
            long actual = version == VERSION ? checksumOfFile(meta, gguf) : checksumOfEverything(meta, List.copyOf(tensors.values()));
            FileFormat.checkChecksum("the statistics", stored.asLong(), actual);
        }
        boolean perBudget = version >= SQUARE_MOMENT_VERSION;
        List<Double> budgets = perBudget ? doubles(meta(meta, "budgets"), "budgets") : List.of((double) referenceBits(meta));
        java.util.Map<String, Long> offsets = new java.util.HashMap<>();
        for (GgufTensorInfo info : gguf.tensorInfos()) offsets.put(info.name(), gguf.dataOffset() + info.offset());
        List<GroupStats> groups = new ArrayList<>();
        SequencedMap<String, float[]> outputMax = new LinkedHashMap<>();
        for (String key : meta.keySet()) {
            if (!key.startsWith(PREFIX + "alpha.")) continue;
            String name = key.substring((PREFIX + "alpha.").length());
            GroupId id = GroupId.parse(name);
            List<GroupStats.SearchedAlpha> alphas = perBudget ? searchedAlphas(meta, name, budgets)
                    : List.of(new GroupStats.SearchedAlpha(budgets.getFirst(), meta(meta, "alpha." + name).asFloat(),
                            meta(meta, "alpha_error." + name).asDouble(), meta(meta, "unsmoothed_error." + name).asDouble(), 1f));
            float[] sIn = floats(tensors, name + ".s_in");
            Tensor moment = perBudget ? tensors.get(name + MOMENT_SUFFIX) : null;
            SecondMoment secondMoment = moment == null ? null : version == VERSION
                    ? new SecondMoment.Stored(gguf.path(), offsets.get(moment.name()), triangleChannels(moment, sIn.length), false, meta(meta, "xx_crc." + name).asLong())
                    : new SecondMoment.Stored(gguf.path(), offsets.get(moment.name()), squareChannels(moment, sIn.length), true, -1);
            GroupStats g = new GroupStats(id.group, id.layer, sIn, floats(tensors, name + ".x2_mean"), alphas, secondMoment);
            float xMax = meta(meta, "x_max." + name).asFloat();
            if (xMax != g.inputRange()) throw new IllegalArgumentException(name + ": x_max " + xMax + " is not the largest s_in (" + g.inputRange() + ")");
            groups.add(g);
            for (TensorKind kind : id.group.members()) {
                String tensor = CalibrationStats.tensorName(kind, id.layer);
                outputMax.put(tensor, floats(tensors, stripWeight(tensor) + ".s_out"));
            }
        }
        if (groups.isEmpty()) throw new IllegalArgumentException("no group statistics in the file");
        return new CalibrationStats(meta(meta, "fingerprint").asString(), meta(meta, "model").asString(),
                meta(meta, "tokens").asInt(), meta(meta, "sample_tokens").asInt(), budgets, groups, outputMax, probeTokens(meta), gguf.path());
    }

    /** The loss probe's sample, or null in files written before it was recorded. */
    private static int[] probeTokens(SequencedMap<String, GgufValue> meta) {
        GgufValue v = meta.get(PREFIX + PROBE_TOKENS_KEY);
        if (v == null) return null;
        GgufValue.GgufArray a = v.asArray();
        if (a.elementType() != GgufType.UINT32) throw new IllegalArgumentException(PREFIX + PROBE_TOKENS_KEY + " is an array of " + a.elementType() + ", not UINT32");
        return a.elements().stream().mapToInt(GgufValue::asInt).toArray();
    }

    /** Version 4's checksum of a file as read: its table in file order, the bytes of every tensor but the moments. */
    private static long checksumOfFile(SequencedMap<String, GgufValue> meta, GgufFile gguf) {
        List<GgufWriter.PendingTensor> table = new ArrayList<>();
        List<Tensor> vectors = new ArrayList<>();
        for (Tensor t : gguf.tensors().values()) {
            table.add(new GgufWriter.PendingTensor(t.name(), t.shape(), t.dtype(), channel -> {}));
            if (!t.name().endsWith(MOMENT_SUFFIX)) vectors.add(t);
        }
        return checksum(meta, table, vectors);
    }

    private static List<GroupStats.SearchedAlpha> searchedAlphas(SequencedMap<String, GgufValue> meta, String name, List<Double> budgets) {
        List<GgufValue> alpha = meta(meta, "alpha." + name).asArray().elements();
        List<Double> error = doubles(meta(meta, "alpha_error." + name), "alpha_error." + name);
        List<Double> unsmoothed = doubles(meta(meta, "unsmoothed_error." + name), "unsmoothed_error." + name);
        if (alpha.size() != budgets.size() || error.size() != budgets.size() || unsmoothed.size() != budgets.size()) {
            throw new IllegalArgumentException(name + ": " + alpha.size() + " α, " + error.size() + " and " + unsmoothed.size()
                    + " errors for " + budgets.size() + " budgets");
        }
        // files written before the clip search have no input_clip: their static scales are the full range
        GgufValue clipValue = meta.get(PREFIX + "input_clip." + name);
        List<GgufValue> clip = clipValue == null ? null : clipValue.asArray().elements();
        if (clip != null && clip.size() != budgets.size()) {
            throw new IllegalArgumentException(name + ": " + clip.size() + " input clips for " + budgets.size() + " budgets");
        }
        List<GroupStats.SearchedAlpha> alphas = new ArrayList<>();
        for (int i = 0; i < budgets.size(); i++) {
            alphas.add(new GroupStats.SearchedAlpha(budgets.get(i), alpha.get(i).asFloat(), error.get(i), unsmoothed.get(i),
                    clip == null ? 1f : clip.get(i).asFloat()));
        }
        return alphas;
    }

    /** Versions 1 and 2: the one uniform width their α was searched at, which must be a bit width. */
    private static int referenceBits(SequencedMap<String, GgufValue> meta) {
        long bits = meta(meta, "reference_bits").asLong();
        if (bits < QuantLimits.MIN_BITS || bits > QuantLimits.MAX_BITS) {
            throw new IllegalArgumentException(PREFIX + "reference_bits " + bits + " is not a bit width " + QuantLimits.BIT_RANGE);
        }
        return (int) bits;
    }

    /** A group instance named like {@code blk.3.attn_qkv} or {@code output}. */
    private record GroupId(LinearGroup group, int layer) {
        static GroupId parse(String name) {
            for (LinearGroup g : LinearGroup.values()) {
                if (!g.perLayer()) {
                    if (name.equals(g.canonicalName(0))) return new GroupId(g, 0);
                    continue;
                }
                String suffix = "." + g.canonicalName(0).substring(g.canonicalName(0).lastIndexOf('.') + 1);
                if (name.startsWith("blk.") && name.endsWith(suffix)) {
                    String layer = name.substring(4, name.length() - suffix.length());
                    try {
                        return new GroupId(g, Integer.parseInt(layer));
                    } catch (NumberFormatException e) {
                        break;
                    }
                }
            }
            throw new IllegalArgumentException("unknown group \"" + name + "\"");
        }
    }

    private static GgufValue meta(SequencedMap<String, GgufValue> meta, String key) {
        GgufValue v = meta.get(PREFIX + key);
        if (v == null) throw new IllegalArgumentException("metadata " + PREFIX + key + " is missing");
        return v;
    }

    private static float[] floats(SequencedMap<String, Tensor> tensors, String name) {
        Tensor t = tensors.get(name);
        if (t == null) throw new IllegalArgumentException("tensor " + name + " is missing");
        if (t.dtype() != DType.F32 || t.shape().length != 1) {
            throw new IllegalArgumentException("tensor " + name + " is " + t.dtype() + " " + t.shapeString() + ", expected a 1-D F32 vector");
        }
        return t.toFloats();
    }

    /** Version 4: a moment is the F32 vector [D(D+1)/2] of a group of D channels. */
    private static int triangleChannels(Tensor t, int channels) {
        long[] shape = t.shape();
        if (t.dtype() != DType.F32 || shape.length != 1 || shape[0] != SecondMoment.triangleSize(channels)) {
            throw new IllegalArgumentException("tensor " + t.name() + " is " + t.dtype() + " " + t.shapeString() + ", expected F32 ["
                    + SecondMoment.triangleSize(channels) + "] (the upper triangle of " + channels + "×" + channels + ")");
        }
        return channels;
    }

    /** Version 3: a moment is the F32 matrix [D, D]. */
    private static int squareChannels(Tensor t, int channels) {
        long[] shape = t.shape();
        if (t.dtype() != DType.F32 || shape.length != 2 || shape[0] != channels || shape[1] != channels) {
            throw new IllegalArgumentException("tensor " + t.name() + " is " + t.dtype() + " " + t.shapeString() + ", expected F32 [" + channels + ", " + channels + "]");
        }
        return channels;
    }

    private static GgufValue doubles(List<Double> values) {
        return GgufValue.array(GgufType.FLOAT64, values.stream().map(v -> new GgufValue(GgufType.FLOAT64, v)).toList());
    }

    private static List<Double> doubles(GgufValue array, String key) {
        GgufValue.GgufArray a = array.asArray();
        if (a.elementType() != GgufType.FLOAT64) throw new IllegalArgumentException(PREFIX + key + " is an array of " + a.elementType() + ", not FLOAT64");
        return a.elements().stream().map(v -> (Double) v.value()).toList();
    }

    private static String stripWeight(String tensorName) {
        return tensorName.substring(0, tensorName.length() - ".weight".length());
    }

    static Tensor vector(String name, float[] values) {
        return f32(name, new long[] {values.length}, values);
    }

    private static Tensor f32(String name, long[] shape, float[] values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        return new Tensor(name, shape, DType.F32, MemorySegment.ofArray(b.array()));
    }
}
