package jquant.pack.ternary;

import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoints;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.formats.TernaryCodecs;
import jquant.formats.gguf.GgufCheckpoint;
import jquant.formats.gguf.GgufSource;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.Set;

/**
 * Writes ternary GGUF models, from any source checkpoint the way {@code jquant ternarize} does or from
 * a ternary GGUF the way {@code jquant repack} does, keeping every metadata key of the source.
 *
 * <p>{@link #ternarize}: every block linear matrix becomes {@code s · clip(round(W / s), −1, 1)} with one
 * absmean scale per tensor (BitNet b1.58, {@link Ternarizer}) — the explicit lossy path. A matrix whose
 * columns fit no 128-block layout (or that the chosen type cannot hold) is written in a fallback named
 * in the report; embeddings, norms and the classifier are copied unchanged.
 *
 * <p>{@link #repack}: converts between ternary layouts, losslessly. Ternary tensors (PQ2_0, TQ2_0,
 * PTQ1_0, T2P) are decoded to codes and fp16 scales and re-encoded; block linear matrices stored as
 * floats must be exactly ternary per 128-block ({@link TernaryDetector}) or the write is refused naming
 * the tensor, row, column and value — nothing is rounded. A tensor whose shape the target cannot hold
 * (T2P: rows % 4, cols % 128) keeps its stored layout, and the report and the output's
 * {@code jquant.ternary.kept} key say so.
 */
public final class TernaryModelWriter {
    /** Prefix of the keys these writes add; the only source keys they may overwrite. */
    public static final String KEY_PREFIX = "jquant.ternary.";

    private TernaryModelWriter() {}

    /** The ternary GGUF types a model can be written in, by their {@code --format} / {@code --type} name. */
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
        void written(Tensor source, String outcome);
    }

    /**
     * What a write did.
     *
     * @param converted tensors written in the requested type (ternarized or repacked)
     * @param otherwise "name: why" of the tensors written in another type (a fallback, or kept as stored)
     */
    public record Summary(List<String> converted, List<String> otherwise) {}

    /**
     * A ternary test model from a float checkpoint, as GGUF.
     *
     * @param type      {@code pq2_0}, {@code tq2_0}, {@code ptq1_0}, {@code t2p}, or {@code f32} (exact s·{-1,0,+1} floats)
     * @param tokenizer a llama2.c tokenizer.bin for a .bin checkpoint, or null
     */
    public static Summary ternarize(Path model, Path tokenizer, Path out, String type, Listener listener) throws IOException, T2pShapeException {
        DType target = type.equalsIgnoreCase("f32") ? DType.F32 : Format.parse(type).dtype;
        try (Checkpoint c = Checkpoints.open(model, tokenizer)) {
            SequencedMap<String, GgufValue> source = GgufSource.metadata(c);
            SequencedMap<String, Tensor> tensors = GgufSource.tensors(c);
            Set<String> linear = GgufSource.blockLinearNames(c, tensors);
            List<Tensor> written = new ArrayList<>();
            List<String> ternarized = new ArrayList<>(), fallback = new ArrayList<>();
            for (Tensor t : tensors.values()) {
                if (!linear.contains(t.name())) {
                    written.add(t);
                    continue;
                }
                Result r = ternarize(t, target);
                written.add(r.tensor());
                ternarized.add(t.name());
                if (r.fallback() != null) fallback.add(t.name() + ": " + r.fallback());
                listener.written(t, r.fallback() == null ? r.tensor().dtype().toString() : r.tensor().dtype() + " (" + r.fallback() + ")");
            }
            SequencedMap<String, GgufValue> kv = new LinkedHashMap<>(source);
            kv.put(KEY_PREFIX + "method", GgufValue.string("absmean per tensor, BitNet b1.58 (jquant ternarize)"));
            kv.put(KEY_PREFIX + "source", GgufValue.string(String.valueOf(model.getFileName())));
            kv.put(KEY_PREFIX + "layout", GgufValue.string(type));
            kv.put(KEY_PREFIX + "ternarized", GgufValue.stringArray(ternarized));
            kv.put(KEY_PREFIX + "fallback", GgufValue.stringArray(fallback));
            requireCarried(model, source, kv);
            GgufWriter.write(out, kv, written);
            return new Summary(ternarized, fallback);
        }
    }

    /** A ternarized tensor and, if it is not in the requested type, why. */
    private record Result(Tensor tensor, String fallback) {}

    /**
     * The absmean scale is one per tensor, so the codes do not depend on the shape: the weights are
     * ternarized as rows of 128 and the result laid out in the tensor's real shape where a block
     * layout fits it, else written as exact ternary floats.
     */
    private static Result ternarize(Tensor t, DType target) throws T2pShapeException {
        float[] w = t.toFloats();
        if (w.length % TernaryTensor.BLOCK != 0) {
            throw new IllegalArgumentException(t.name() + ": " + w.length + " weights are not a whole number of 128-weight rows; absmean ternarization here needs that");
        }
        TernaryTensor flat = Ternarizer.absmean(t.name(), w, w.length / TernaryTensor.BLOCK, TernaryTensor.BLOCK);
        if (target == DType.F32 || t.cols() % TernaryTensor.BLOCK != 0) {
            float[] values = flat.toFloats();
            // a byte[]-backed segment: the writer hands tensor data to a channel as a ByteBuffer
            MemorySegment bytes = MemorySegment.ofArray(new byte[4 * values.length]);
            MemorySegment.copy(values, 0, bytes, ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, values.length);
            Tensor floats = new Tensor(t.name(), t.shape(), DType.F32, bytes);
            return new Result(floats, target == DType.F32 ? null
                    : "cols " + t.cols() + " not a multiple of 128: exact ternary F32 (one scale per tensor)");
        }
        float[] scales = new float[t.rows() * (t.cols() / TernaryTensor.BLOCK)];
        Arrays.fill(scales, flat.scales()[0]);
        TernaryTensor tt = new TernaryTensor(t.name(), t.rows(), t.cols(), scales, flat.codes());
        if (target == DType.TQ2_0 && t.cols() % 256 != 0) {
            return new Result(TernaryCodecs.encode(tt, t.shape(), DType.PQ2_0), "cols " + t.cols() + " not a multiple of 256: PQ2_0");
        }
        try {
            return new Result(TernaryCodecs.encode(tt, t.shape(), target), null);
        } catch (T2pShapeException e) {
            return new Result(TernaryCodecs.encode(tt, t.shape(), DType.PQ2_0), e.getMessage() + ": PQ2_0");
        }
    }

    /** A ternary GGUF converted to the ternary layout {@code format} ({@code t2p}, {@code pq2_0}, {@code ptq1_0}, {@code tq2_0}). */
    public static Summary repack(Path model, Path out, String format, Listener listener) throws IOException {
        DType target = Format.parse(format).dtype;
        try (Checkpoint c = Checkpoints.open(model, null)) {
            if (!(c instanceof GgufCheckpoint)) {
                throw new CheckpointException(model, "repack reads GGUF files (" + c.format() + " given); make one with jquant ternarize");
            }
            SequencedMap<String, GgufValue> source = GgufSource.metadata(c);
            Set<String> linear = GgufSource.blockLinearNames(c, c.tensors());
            List<Tensor> written = new ArrayList<>();
            List<String> repacked = new ArrayList<>(), kept = new ArrayList<>();
            for (Tensor t : c.tensors().values()) {
                boolean ternaryType = TernaryCodecs.isTernary(t.dtype());
                if (!ternaryType && !linear.contains(t.name())) {
                    written.add(t);
                    continue;
                }
                if (!ternaryType && t.cols() % TernaryTensor.BLOCK != 0) {
                    kept.add(keep(listener, written, t, "cols " + t.cols() + " not a multiple of 128: no ternary block layout fits, kept " + t.dtype()));
                    continue;
                }
                TernaryTensor tt = ternaryType ? TernaryCodecs.decode(t)
                        : TernaryDetector.detect(t.name(), t.toFloats(), t.rows(), t.cols(), TernaryDetector.Granularity.PER_BLOCK);
                try {
                    written.add(TernaryCodecs.encode(tt, t.shape(), target));
                    repacked.add(t.name());
                    listener.written(t, t.dtype() + " -> " + target);
                } catch (T2pShapeException e) {
                    kept.add(keep(listener, written, t, e.getMessage() + ", kept " + t.dtype()));
                }
            }
            SequencedMap<String, GgufValue> kv = new LinkedHashMap<>(source);
            kv.put(KEY_PREFIX + "layout", GgufValue.string(format));
            kv.put(KEY_PREFIX + "repacked", GgufValue.stringArray(repacked));
            kv.put(KEY_PREFIX + "kept", GgufValue.stringArray(kept));
            requireCarried(model, source, kv);
            GgufWriter.write(out, kv, written);
            return new Summary(repacked, kept);
        }
    }

    private static String keep(Listener listener, List<Tensor> written, Tensor t, String why) {
        written.add(t);
        listener.written(t, why);
        return t.name() + ": " + why;
    }

    /**
     * Refuses an output metadata map that drops or changes a source key (keys under
     * {@value #KEY_PREFIX} excepted: they describe this very write).
     */
    static void requireCarried(Path source, Map<String, GgufValue> from, Map<String, GgufValue> to) {
        for (var e : from.entrySet()) {
            if (e.getKey().startsWith(KEY_PREFIX)) continue;
            GgufValue v = to.get(e.getKey());
            if (v == null) throw new IllegalStateException("refusing to write: metadata key " + e.getKey() + " of " + source + " would be dropped");
            if (!v.equals(e.getValue())) {
                throw new IllegalStateException("refusing to write: metadata key " + e.getKey() + " of " + source + " would change from "
                        + e.getValue().toJava() + " to " + v.toJava());
            }
        }
    }
}
