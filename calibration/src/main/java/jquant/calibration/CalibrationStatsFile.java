package jquant.calibration;

import jquant.formats.CheckpointException;
import jquant.formats.DType;
import jquant.formats.InputFiles;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.gguf.GgufFile;
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
 *    jquant.calibration.version          = 3                 (UINT32)
 *    jquant.calibration.fingerprint      = "3f2a…"           {@link ModelFingerprint} of the model (64 hex digits)
 *    jquant.calibration.model            = "stories260K.bin" file name, for display
 *    jquant.calibration.tokens           = 4096              (UINT32) tokens run
 *    jquant.calibration.sample_tokens    = 512               (UINT32) rows per group the α search used
 *    jquant.calibration.budgets          = [3.0, 4.0, …]     (ARRAY of FLOAT64) budgets α was searched for, ascending
 *    jquant.calibration.beta             = 1.0               (FLOAT32)
 *    per group g (blk.L.attn_qkv, blk.L.attn_output, blk.L.ffn_gate_up, blk.L.ffn_down, output), in forward order,
 *    one entry per budget:
 *    jquant.calibration.alpha.g            (ARRAY of FLOAT32) chosen α
 *    jquant.calibration.alpha_error.g      (ARRAY of FLOAT64) output error at α
 *    jquant.calibration.unsmoothed_error.g (ARRAY of FLOAT64) output error at α = 0
 *    jquant.calibration.x_max.g            (FLOAT32) max |x| of the whole input tensor = max of g.s_in (checked on read)
 *  tensors (F32)
 *    g.s_in      [D]      S_I: max |x| per input channel
 *    g.x2_mean   [D]      E[x²] per input channel
 *    g.xx_mean   [D, D]   E[x·xᵀ], only when calibration recorded it (calibrate --second-moments)
 *    t.s_out     [C]      S_O: max |o| per output channel of linear layer t (blk.L.attn_q, …, output)
 *  last metadata entry
 *    jquant.calibration.checksum         (UINT32) CRC32C of everything else, last ({@link #checksum})
 * </pre>
 * Reading checks the architecture, version, the checksum and that every group and layer of the model is
 * present. Older versions still read:
 * <pre>
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
    public static final int VERSION = 3;
    /** One α per group, searched at {@code reference_bits}, with the checksum. */
    static final int SINGLE_ALPHA_VERSION = 2;
    /** The version before the checksum; read without one (one α per group, like version 2). */
    static final int UNCHECKED_VERSION = 1;
    static final String CHECKSUM_KEY = "jquant.calibration.checksum";
    static final String PREFIX = "jquant.calibration.";

    private CalibrationStatsFile() {}

    /** Writes {@code stats} to a temporary file beside {@code target}, renamed over it when complete. */
    public static void write(CalibrationStats stats, Path target) throws IOException {
        SequencedMap<String, GgufValue> meta = new LinkedHashMap<>();
        meta.put("general.architecture", GgufValue.string(ARCHITECTURE));
        meta.put(PREFIX + "version", GgufValue.uint32(VERSION));
        meta.put(PREFIX + "fingerprint", GgufValue.string(stats.fingerprint()));
        meta.put(PREFIX + "model", GgufValue.string(stats.model()));
        meta.put(PREFIX + "tokens", GgufValue.uint32(stats.tokens()));
        meta.put(PREFIX + "sample_tokens", GgufValue.uint32(stats.sampleTokens()));
        meta.put(PREFIX + "budgets", doubles(stats.budgets()));
        meta.put(PREFIX + "beta", GgufValue.float32(CalibrationStats.BETA));
        List<Tensor> tensors = new ArrayList<>();
        for (GroupStats g : stats.groups()) {
            meta.put(PREFIX + "alpha." + g.name(), GgufValue.array(GgufType.FLOAT32,
                    g.alphas().stream().map(a -> GgufValue.float32(a.alpha())).toList()));
            meta.put(PREFIX + "alpha_error." + g.name(), doubles(g.alphas().stream().map(GroupStats.SearchedAlpha::error).toList()));
            meta.put(PREFIX + "unsmoothed_error." + g.name(), doubles(g.alphas().stream().map(GroupStats.SearchedAlpha::unsmoothedError).toList()));
            meta.put(PREFIX + "x_max." + g.name(), GgufValue.float32(g.inputRange()));
            tensors.add(vector(g.name() + ".s_in", g.inputMax()));
            tensors.add(vector(g.name() + ".x2_mean", g.inputMeanSquare()));
            if (g.inputSecondMoment() != null) tensors.add(matrix(g.name() + ".xx_mean", g.inputSecondMoment(), g.channels()));
        }
        stats.outputMax().forEach((name, v) -> tensors.add(vector(stripWeight(name) + ".s_out", v)));
        meta.put(CHECKSUM_KEY, GgufValue.uint32(checksum(meta, tensors)));
        GgufWriter.write(target, meta, tensors);
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
     * CRC32C of a stats file's content but the checksum itself: each metadata key, type and value (floats
     * by their bits) in order, then each tensor's name, shape and bytes. Computed on the values, not the
     * file's bytes, so that it is the same however a GGUF writer lays them out.
     */
    static long checksum(SequencedMap<String, GgufValue> meta, List<Tensor> tensors) {
        CRC32C crc = new CRC32C();
        meta.forEach((key, v) -> {
            if (key.equals(CHECKSUM_KEY)) return;
            crc.update((key + "\0" + v.type().id() + "\0" + canonical(v.value()) + "\0").getBytes(StandardCharsets.UTF_8));
        });
        for (Tensor t : tensors) {
            crc.update((t.name() + "\0" + t.dtype() + "\0" + t.shapeString() + "\0").getBytes(StandardCharsets.UTF_8));
            crc.update(t.data().asByteBuffer());
        }
        return crc.getValue();
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
        if (arch == null || !(arch.value() instanceof String s) || !s.equals(ARCHITECTURE)) {
            throw new IllegalArgumentException("not a calibration stats file (general.architecture is "
                    + (arch == null ? "missing" : arch.value()) + ", expected \"" + ARCHITECTURE + "\")");
        }
        long version = meta(meta, "version").asLong();
        if (version != VERSION && version != SINGLE_ALPHA_VERSION && version != UNCHECKED_VERSION) {
            throw new IllegalArgumentException("calibration stats version " + version + " is not supported (" + UNCHECKED_VERSION + " to " + VERSION + " are)");
        }
        if (version != UNCHECKED_VERSION) {
            GgufValue stored = meta.get(CHECKSUM_KEY);
            if (stored == null || stored.type() != GgufType.UINT32) {
                throw new IllegalArgumentException("metadata " + CHECKSUM_KEY + " (UINT32) is missing");
            }
            long actual = checksum(meta, List.copyOf(gguf.tensors().values()));
            if (stored.asLong() != actual) {
                throw new IllegalArgumentException(String.format("checksum mismatch: the file says %08x, its content gives %08x (the file was changed or damaged)",
                        stored.asLong(), actual));
            }
        }
        boolean perBudget = version == VERSION;
        List<Double> budgets = perBudget ? doubles(meta(meta, "budgets"), "budgets") : List.of((double) referenceBits(meta));
        List<GroupStats> groups = new ArrayList<>();
        SequencedMap<String, float[]> outputMax = new LinkedHashMap<>();
        SequencedMap<String, Tensor> tensors = gguf.tensors();
        for (String key : meta.keySet()) {
            if (!key.startsWith(PREFIX + "alpha.")) continue;
            String name = key.substring((PREFIX + "alpha.").length());
            GroupId id = GroupId.parse(name);
            List<GroupStats.SearchedAlpha> alphas = perBudget ? searchedAlphas(meta, name, budgets)
                    : List.of(new GroupStats.SearchedAlpha(budgets.getFirst(), meta(meta, "alpha." + name).asFloat(),
                            meta(meta, "alpha_error." + name).asDouble(), meta(meta, "unsmoothed_error." + name).asDouble()));
            float[] sIn = floats(tensors, name + ".s_in");
            Tensor moment = perBudget ? tensors.get(name + ".xx_mean") : null;
            GroupStats g = new GroupStats(id.group, id.layer, sIn, floats(tensors, name + ".x2_mean"), alphas,
                    moment == null ? null : matrixFloats(moment, sIn.length));
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
                meta(meta, "tokens").asInt(), meta(meta, "sample_tokens").asInt(), budgets, groups, outputMax);
    }

    private static List<GroupStats.SearchedAlpha> searchedAlphas(SequencedMap<String, GgufValue> meta, String name, List<Double> budgets) {
        List<GgufValue> alpha = meta(meta, "alpha." + name).asArray().elements();
        List<Double> error = doubles(meta(meta, "alpha_error." + name), "alpha_error." + name);
        List<Double> unsmoothed = doubles(meta(meta, "unsmoothed_error." + name), "unsmoothed_error." + name);
        if (alpha.size() != budgets.size() || error.size() != budgets.size() || unsmoothed.size() != budgets.size()) {
            throw new IllegalArgumentException(name + ": " + alpha.size() + " α, " + error.size() + " and " + unsmoothed.size()
                    + " errors for " + budgets.size() + " budgets");
        }
        List<GroupStats.SearchedAlpha> alphas = new ArrayList<>();
        for (int i = 0; i < budgets.size(); i++) {
            alphas.add(new GroupStats.SearchedAlpha(budgets.get(i), alpha.get(i).asFloat(), error.get(i), unsmoothed.get(i)));
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

    private static float[] matrixFloats(Tensor t, int channels) {
        long[] shape = t.shape();
        if (t.dtype() != DType.F32 || shape.length != 2 || shape[0] != channels || shape[1] != channels) {
            throw new IllegalArgumentException("tensor " + t.name() + " is " + t.dtype() + " " + t.shapeString() + ", expected F32 [" + channels + ", " + channels + "]");
        }
        return t.toFloats();
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

    private static Tensor matrix(String name, float[] values, int channels) {
        return f32(name, new long[] {channels, channels}, values);
    }

    private static Tensor f32(String name, long[] shape, float[] values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        return new Tensor(name, shape, DType.F32, MemorySegment.ofArray(b.array()));
    }
}
