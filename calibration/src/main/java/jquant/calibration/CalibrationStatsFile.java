package jquant.calibration;

import jquant.formats.CheckpointException;
import jquant.formats.DType;
import jquant.formats.InputFiles;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.gguf.GgufFile;
import jquant.formats.gguf.GgufValue;
import jquant.formats.gguf.GgufWriter;

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
 * vectors and metadata.
 * <pre>
 *  metadata
 *    general.architecture                = "jquant-calibration"
 *    jquant.calibration.version          = 2                 (UINT32)
 *    jquant.calibration.fingerprint      = "3f2a…"           {@link ModelFingerprint} of the model (64 hex digits)
 *    jquant.calibration.model            = "stories260K.bin" file name, for display
 *    jquant.calibration.tokens           = 4096              (UINT32) tokens run
 *    jquant.calibration.sample_tokens    = 512               (UINT32) rows per group the α search used
 *    jquant.calibration.reference_bits   = 5                 (UINT32) weight width of the α search
 *    jquant.calibration.beta             = 1.0               (FLOAT32)
 *    per group g (blk.L.attn_qkv, blk.L.attn_output, blk.L.ffn_gate_up, blk.L.ffn_down, output), in forward order:
 *    jquant.calibration.alpha.g            (FLOAT32) chosen α
 *    jquant.calibration.alpha_error.g      (FLOAT64) output error at α
 *    jquant.calibration.unsmoothed_error.g (FLOAT64) output error at α = 0
 *    jquant.calibration.x_max.g            (FLOAT32) max |x| of the whole input tensor = max of g.s_in (checked on read)
 *  tensors (F32, 1-D)
 *    g.s_in      [D]   S_I: max |x| per input channel
 *    g.x2_mean   [D]   E[x²] per input channel
 *    t.s_out     [C]   S_O: max |o| per output channel of linear layer t (blk.L.attn_q, …, output)
 *  last metadata entry
 *    jquant.calibration.checksum         (UINT32) CRC32C of everything else, last ({@link #checksum})
 * </pre>
 * Reading checks the architecture, version, the checksum and that every group and layer of the model is
 * present. Version 1 files (before the checksum) are still read, as they are: they have nothing to verify
 * against; {@code jquant inspect} shows the version.
 */
public final class CalibrationStatsFile {
    public static final String ARCHITECTURE = "jquant-calibration";
    public static final int VERSION = 2;
    /** The version before the checksum; read without one. */
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
        meta.put(PREFIX + "reference_bits", GgufValue.uint32(stats.referenceBits()));
        meta.put(PREFIX + "beta", GgufValue.float32(CalibrationStats.BETA));
        List<Tensor> tensors = new ArrayList<>();
        for (GroupStats g : stats.groups()) {
            meta.put(PREFIX + "alpha." + g.name(), GgufValue.float32(g.alpha()));
            meta.put(PREFIX + "alpha_error." + g.name(), new GgufValue(jquant.formats.gguf.GgufType.FLOAT64, g.alphaError()));
            meta.put(PREFIX + "unsmoothed_error." + g.name(), new GgufValue(jquant.formats.gguf.GgufType.FLOAT64, g.unsmoothedError()));
            meta.put(PREFIX + "x_max." + g.name(), GgufValue.float32(g.inputRange()));
            tensors.add(vector(g.name() + ".s_in", g.inputMax()));
            tensors.add(vector(g.name() + ".x2_mean", g.inputMeanSquare()));
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
        if (version != VERSION && version != UNCHECKED_VERSION) {
            throw new IllegalArgumentException("calibration stats version " + version + " is not supported (" + UNCHECKED_VERSION + " and " + VERSION + " are)");
        }
        if (version == VERSION) {
            GgufValue stored = meta.get(CHECKSUM_KEY);
            if (stored == null || stored.type() != jquant.formats.gguf.GgufType.UINT32) {
                throw new IllegalArgumentException("metadata " + CHECKSUM_KEY + " (UINT32) is missing");
            }
            long actual = checksum(meta, List.copyOf(gguf.tensors().values()));
            if (stored.asLong() != actual) {
                throw new IllegalArgumentException(String.format("checksum mismatch: the file says %08x, its content gives %08x (the file was changed or damaged)",
                        stored.asLong(), actual));
            }
        }
        List<GroupStats> groups = new ArrayList<>();
        SequencedMap<String, float[]> outputMax = new LinkedHashMap<>();
        SequencedMap<String, Tensor> tensors = gguf.tensors();
        for (String key : meta.keySet()) {
            if (!key.startsWith(PREFIX + "alpha.")) continue;
            String name = key.substring((PREFIX + "alpha.").length());
            GroupId id = GroupId.parse(name);
            GroupStats g = new GroupStats(id.group, id.layer, floats(tensors, name + ".s_in"), floats(tensors, name + ".x2_mean"),
                    meta(meta, "alpha." + name).asFloat(), meta(meta, "alpha_error." + name).asDouble(),
                    meta(meta, "unsmoothed_error." + name).asDouble());
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
                meta(meta, "tokens").asInt(), meta(meta, "sample_tokens").asInt(), meta(meta, "reference_bits").asInt(), groups, outputMax);
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

    private static String stripWeight(String tensorName) {
        return tensorName.substring(0, tensorName.length() - ".weight".length());
    }

    static Tensor vector(String name, float[] values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        return new Tensor(name, new long[] {values.length}, DType.F32, MemorySegment.ofArray(b.array()));
    }
}
