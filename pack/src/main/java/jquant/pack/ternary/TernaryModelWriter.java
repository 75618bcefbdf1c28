package jquant.pack.ternary;

import jquant.formats.quant.TernaryDetector;
import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoints;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.formats.TernaryCodecs;
import jquant.formats.gguf.GgufFileType;
import jquant.formats.gguf.GgufSource;
import jquant.formats.gguf.GgufTensor;
import jquant.formats.gguf.GgufValue;
import jquant.formats.gguf.GgufWriter;
import jquant.formats.quant.T2pShapeException;
import jquant.formats.quant.TernaryTensor;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.Set;

/**
 * Writes ternary GGUF models from any source checkpoint (GGUF, llama2.c, Hugging Face; q/k rows in
 * llama.cpp's order, {@link GgufSource}), the way {@code jquant ternarize} does or the way {@code jquant
 * repack} does, keeping every metadata key of a GGUF source and setting {@code general.file_type} and
 * {@code general.quantization_version} ({@link GgufFileType}).
 *
 * <p>{@link #ternarize}: every block linear matrix that is not already ternary becomes
 * {@code s · clip(round(W / s), −1, 1)} with one absmean scale per tensor (BitNet b1.58, {@link Ternarizer})
 * — the explicit lossy path. A matrix already ternary (a ternary type, or floats exactly s·{−1, 0, +1})
 * keeps its codes and scales, so ternarizing twice changes nothing; a model whose matrices are all
 * ternary is written exactly as {@link #repack} writes it, byte for byte. A matrix whose columns fit no
 * 128-block layout (or that the chosen type cannot hold) is written in a fallback named in the report;
 * embeddings, norms and the classifier are copied unchanged.
 *
 * <p>{@link #repack}: converts between ternary layouts, losslessly. Ternary tensors (PQ2_0, TQ2_0,
 * PTQ1_0, T2P) are decoded to codes and fp16 scales and re-encoded; block linear matrices stored as
 * floats must be exactly ternary ({@link #detect}) or the write is refused naming the tensor, row,
 * column and value — nothing is rounded. A tensor whose shape the target cannot hold (T2P: rows % 4,
 * cols % 128) keeps its stored layout, and the report and the output's {@code jquant.ternary.kept} key say so.
 *
 * <p>T2P (GGUF type 1000) is jquant's own: a file holding it carries {@value #THIRD_PARTY_KEY} saying that
 * llama.cpp and other ggml-based readers refuse it.
 */
public final class TernaryModelWriter {
    /** Prefix of the keys these writes add; the only source keys they may overwrite (with the file type keys). */
    public static final String KEY_PREFIX = "jquant.ternary.";
    /** Key of a T2P file's note to third-party readers. */
    public static final String THIRD_PARTY_KEY = KEY_PREFIX + "third_party_readers";
    static final String THIRD_PARTY_NOTE = "tensor type 1000 (T2P) is jquant's own row-pair layout: llama.cpp and other ggml-based "
            + "readers refuse this file; jquant repack --type tq2_0 writes one they load";

    private TernaryModelWriter() {}

    /** The ternary GGUF types a model can be written in, by their {@code --type} name. */
    public enum Format {
        pq2_0(DType.PQ2_0), tq2_0(DType.TQ2_0), ptq1_0(DType.PTQ1_0), t2p(DType.T2P);

        public final DType dtype;

        Format(DType dtype) { this.dtype = dtype; }

        /** The format named {@code name} in any case ({@code TQ2_0} or {@code tq2_0}), or an error listing the names. */
        public static Format parse(String name) {
            try {
                return valueOf(name.toLowerCase(java.util.Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("unknown ternary type '" + name + "' (" + Arrays.toString(values()) + ")");
            }
        }
    }

    /** Told of each tensor as it is written: what became of it (its type, or why it kept another). */
    @FunctionalInterface
    public interface Listener {
        void written(String name, long[] shape, String outcome);
    }

    /**
     * What a write did.
     *
     * @param converted tensors written in the requested type (ternarized or repacked)
     * @param otherwise "name: why" of the tensors written in another type (a fallback, or kept as stored)
     * @param repacked  whether every block matrix was already ternary, so the model was repacked, not ternarized
     */
    public record Summary(List<String> converted, List<String> otherwise, boolean repacked) {}

    /**
     * A ternary test model from a float checkpoint, as GGUF; an already ternary model is repacked.
     *
     * @param type      {@code pq2_0}, {@code tq2_0}, {@code ptq1_0}, {@code t2p}, or {@code f32} (exact s·{-1,0,+1} floats)
     * @param tokenizer a llama2.c tokenizer.bin for a .bin checkpoint, or null
     */
    public static Summary ternarize(Path model, Path tokenizer, Path out, String type, Listener listener) throws IOException, T2pShapeException {
        DType target = type.equalsIgnoreCase("f32") ? DType.F32 : Format.parse(type).dtype;
        try (Checkpoint c = Checkpoints.open(model, tokenizer)) {
            List<GgufTensor> tensors = GgufSource.tensors(c);
            Set<String> linear = new HashSet<>(GgufSource.blockLinearNames(c));
            if (target != DType.F32 && tensors.stream().filter(t -> linear.contains(t.name())).allMatch(TernaryModelWriter::isTernary)) {
                return repack(c, model, out, Format.parse(type), listener);
            }
            SequencedMap<String, GgufValue> source = GgufSource.metadata(c);
            List<Tensor> written = new ArrayList<>();
            List<String> ternarized = new ArrayList<>(), fallback = new ArrayList<>();
            for (GgufTensor t : tensors) {
                if (!linear.contains(t.name())) {
                    written.add(t.stored());
                    continue;
                }
                Result r = ternarize(t, target);
                written.add(r.tensor());
                ternarized.add(t.name());
                if (r.fallback() != null) fallback.add(t.name() + ": " + r.fallback());
                listener.written(t.name(), t.shape(), r.fallback() == null ? r.tensor().dtype().toString() : r.tensor().dtype() + " (" + r.fallback() + ")");
            }
            SequencedMap<String, GgufValue> kv = new LinkedHashMap<>(source);
            GgufFileType.put(kv, target);
            kv.put(KEY_PREFIX + "method", GgufValue.string("absmean per tensor, BitNet b1.58 (jquant ternarize); exactly ternary matrices kept"));
            kv.put(KEY_PREFIX + "source", GgufValue.string(String.valueOf(model.getFileName())));
            kv.put(KEY_PREFIX + "layout", GgufValue.string(type));
            kv.put(KEY_PREFIX + "ternarized", GgufValue.stringArray(ternarized));
            kv.put(KEY_PREFIX + "fallback", GgufValue.stringArray(fallback));
            noteThirdParty(kv, written);
            requireCarried(model, source, kv);
            GgufWriter.write(out, kv, written);
            return new Summary(ternarized, fallback, false);
        }
    }

    /** Whether a block matrix is ternary already: stored in a ternary type, or exactly ternary floats. */
    private static boolean isTernary(GgufTensor t) {
        if (t.source().dtype().isTernary()) return true;
        if (t.source().cols() % TernaryTensor.BLOCK != 0) return false;
        try {
            // one row first: a float model fails here without its matrix being decoded
            detect(t.name(), t.row(0), 1, t.source().cols());
            detect(t.name(), t.toFloats(), t.source().rows(), t.source().cols());
            return true;
        } catch (TernaryDetector.NotTernaryException e) {
            return false;
        }
    }

    /**
     * The codes and scales of an exactly ternary float matrix: one scale per tensor if that fits (every
     * 128-block then carries it, also a block of zeros), else one per 128-block.
     */
    static TernaryTensor detect(String name, float[] w, int rows, int cols) {
        try {
            return TernaryDetector.detect(name, w, rows, cols, TernaryDetector.Granularity.PER_TENSOR);
        } catch (TernaryDetector.NotTernaryException perTensor) {
            return TernaryDetector.detect(name, w, rows, cols, TernaryDetector.Granularity.PER_BLOCK);
        }
    }

    /** A ternarized tensor and, if it is not in the requested type, why. */
    private record Result(Tensor tensor, String fallback) {}

    /**
     * The absmean scale is one per tensor, so the codes do not depend on the shape: the weights are
     * ternarized as rows of 128 and the result laid out in the tensor's real shape where a block
     * layout fits it, else written as exact ternary floats.
     */
    private static Result ternarize(GgufTensor g, DType target) throws T2pShapeException {
        Tensor t = g.source();
        String name = g.name();
        float[] w = g.toFloats();
        if (isTernary(g)) return keepTernary(g, w, target);
        if (w.length % TernaryTensor.BLOCK != 0) {
            throw new IllegalArgumentException(name + ": " + w.length + " weights are not a whole number of 128-weight rows; absmean ternarization here needs that");
        }
        TernaryTensor flat = exactlyTernaryRows(name, w);
        if (flat == null) flat = Ternarizer.absmean(name, w, w.length / TernaryTensor.BLOCK, TernaryTensor.BLOCK);
        if (target == DType.F32 || t.cols() % TernaryTensor.BLOCK != 0) {
            float[] values = flat.toFloats();
            // a byte[]-backed segment: the writer hands tensor data to a channel as a ByteBuffer
            MemorySegment bytes = MemorySegment.ofArray(new byte[4 * values.length]);
            MemorySegment.copy(values, 0, bytes, ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, values.length);
            Tensor floats = new Tensor(name, t.shape(), DType.F32, bytes);
            return new Result(floats, target == DType.F32 ? null
                    : "cols " + t.cols() + " not a multiple of 128: exact ternary F32 (one scale per tensor)");
        }
        float[] scales = new float[t.rows() * (t.cols() / TernaryTensor.BLOCK)];
        Arrays.fill(scales, flat.scales()[0]);
        TernaryTensor tt = new TernaryTensor(name, t.rows(), t.cols(), scales, flat.codes());
        if (target == DType.TQ2_0 && t.cols() % 256 != 0) {
            return new Result(TernaryCodecs.encode(tt, t.shape(), DType.PQ2_0), "cols " + t.cols() + " not a multiple of 256: PQ2_0");
        }
        try {
            return new Result(TernaryCodecs.encode(tt, t.shape(), target), null);
        } catch (T2pShapeException e) {
            return new Result(TernaryCodecs.encode(tt, t.shape(), DType.PQ2_0), e.getMessage() + ": PQ2_0");
        }
    }

    /** Weights that are exactly s·{−1, 0, +1} for one s, as rows of 128 (any matrix shape), or null. */
    private static TernaryTensor exactlyTernaryRows(String name, float[] w) {
        try {
            return TernaryDetector.detect(name, w, w.length / TernaryTensor.BLOCK, TernaryTensor.BLOCK, TernaryDetector.Granularity.PER_TENSOR);
        } catch (TernaryDetector.NotTernaryException e) {
            return null;
        }
    }

    /** An already ternary matrix in {@code target}: its own codes and scales, re-encoded. */
    private static Result keepTernary(GgufTensor g, float[] w, DType target) throws T2pShapeException {
        TernaryTensor tt = g.source().dtype().isTernary() ? TernaryCodecs.decode(g.stored())
                : detect(g.name(), w, g.source().rows(), g.source().cols());
        if (target == DType.F32) return new Result(f32(g.name(), g.shape(), tt.toFloats()), null);
        try {
            return new Result(TernaryCodecs.encode(tt, g.shape(), target), null);
        } catch (T2pShapeException e) {
            return new Result(TernaryCodecs.encode(tt, g.shape(), DType.PQ2_0), e.getMessage() + ": PQ2_0");
        }
    }

    private static Tensor f32(String name, long[] shape, float[] values) {
        // a byte[]-backed segment: the writer hands tensor data to a channel as a ByteBuffer
        MemorySegment bytes = MemorySegment.ofArray(new byte[4 * values.length]);
        MemorySegment.copy(values, 0, bytes, ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, values.length);
        return new Tensor(name, shape, DType.F32, bytes);
    }

    /**
     * A ternary model (any checkpoint format whose block matrices are ternary) converted to the ternary
     * layout {@code format} ({@code t2p}, {@code pq2_0}, {@code ptq1_0}, {@code tq2_0}).
     */
    public static Summary repack(Path model, Path tokenizer, Path out, String format, Listener listener) throws IOException {
        Format target = Format.parse(format);
        try (Checkpoint c = Checkpoints.open(model, tokenizer)) {
            return repack(c, model, out, target, listener);
        }
    }

    private static Summary repack(Checkpoint c, Path model, Path out, Format format, Listener listener) throws IOException {
        DType target = format.dtype;
        SequencedMap<String, GgufValue> source = GgufSource.metadata(c);
        Set<String> linear = new HashSet<>(GgufSource.blockLinearNames(c));
        List<Tensor> written = new ArrayList<>();
        List<String> repacked = new ArrayList<>(), kept = new ArrayList<>();
        for (GgufTensor g : GgufSource.tensors(c)) {
            Tensor t = g.stored();
            boolean ternaryType = t.dtype().isTernary();
            if (!ternaryType && !linear.contains(t.name())) {
                written.add(t);
                continue;
            }
            if (!ternaryType && t.cols() % TernaryTensor.BLOCK != 0) {
                kept.add(keep(listener, written, t, "cols " + t.cols() + " not a multiple of 128: no ternary block layout fits, kept " + t.dtype()));
                continue;
            }
            TernaryTensor tt;
            try {
                tt = ternaryType ? TernaryCodecs.decode(t) : detect(t.name(), g.toFloats(), t.rows(), t.cols());
            } catch (TernaryDetector.NotTernaryException e) {
                throw new CheckpointException(model, e.getMessage() + ": not a ternary model (jquant ternarize makes one from float weights)");
            }
            try {
                written.add(TernaryCodecs.encode(tt, t.shape(), target));
                repacked.add(t.name());
                listener.written(t.name(), t.shape(), t.dtype() + " -> " + target);
            } catch (T2pShapeException e) {
                kept.add(keep(listener, written, t, e.getMessage() + ", kept " + t.dtype()));
            }
        }
        // A repack that stores nothing in the layout asked for is a copy under a misleading name: refused.
        if (repacked.isEmpty()) {
            throw new CheckpointException(model, "nothing to repack: no block matrix can be stored as " + target
                    + (kept.isEmpty() ? " (the model has none)" : " (" + kept.getFirst() + (kept.size() > 1 ? ", and " + (kept.size() - 1) + " more" : "") + ")"));
        }
        SequencedMap<String, GgufValue> kv = new LinkedHashMap<>(source);
        GgufFileType.put(kv, target);
        kv.put(KEY_PREFIX + "layout", GgufValue.string(format.name()));
        kv.put(KEY_PREFIX + "repacked", GgufValue.stringArray(repacked));
        kv.put(KEY_PREFIX + "kept", GgufValue.stringArray(kept));
        noteThirdParty(kv, written);
        requireCarried(model, source, kv);
        GgufWriter.write(out, kv, written);
        return new Summary(repacked, kept, true);
    }

    /** Adds {@value #THIRD_PARTY_KEY} to a file that holds a T2P tensor. */
    private static void noteThirdParty(SequencedMap<String, GgufValue> kv, List<Tensor> written) {
        if (written.stream().anyMatch(t -> t.dtype() == DType.T2P)) kv.put(THIRD_PARTY_KEY, GgufValue.string(THIRD_PARTY_NOTE));
    }

    private static String keep(Listener listener, List<Tensor> written, Tensor t, String why) {
        written.add(t);
        listener.written(t.name(), t.shape(), why);
        return t.name() + ": " + why;
    }

    /**
     * Refuses an output metadata map that drops or changes a source key (keys under
     * {@value #KEY_PREFIX} and the file type keys excepted: they describe this very write).
     */
    static void requireCarried(Path source, Map<String, GgufValue> from, Map<String, GgufValue> to) {
        for (var e : from.entrySet()) {
            if (e.getKey().startsWith(KEY_PREFIX) || e.getKey().equals(GgufFileType.FILE_TYPE)
                    || e.getKey().equals(GgufFileType.QUANTIZATION_VERSION)) continue;
            GgufValue v = to.get(e.getKey());
            if (v == null) throw new IllegalStateException("refusing to write: metadata key " + e.getKey() + " of " + source + " would be dropped");
            if (!v.equals(e.getValue())) {
                throw new IllegalStateException("refusing to write: metadata key " + e.getKey() + " of " + source + " would change from "
                        + e.getValue().toJava() + " to " + v.toJava());
            }
        }
    }
}
