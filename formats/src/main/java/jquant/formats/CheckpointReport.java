package jquant.formats;

import java.lang.reflect.Array;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@code jquant inspect} shows of a checkpoint: format, architecture, config, RoPE, vocabulary,
 * the tensor table (source and canonical names, shape, dtype, bytes), totals and metadata.
 */
public final class CheckpointReport {
    /** Metadata arrays longer than this are summarized by their length. */
    private static final int SHOWN_ITEMS = 8;

    private CheckpointReport() {}

    /** The report as plain maps and lists, the shape of {@code jquant inspect --json}'s output. */
    public static Map<String, Object> describe(Checkpoint c) {
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
            if (v.kind() == Vocabulary.Kind.BPE) {
                vocab.put("preTokenizer", v.preTokenizer().llamaCppName().orElse(null));
                vocab.put("splitPatterns", v.preTokenizer().patterns());
                vocab.put("ignoreMerges", v.ignoreMerges());
            }
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
            int layers = kind.perLayer() && kind.presentIn(c.config()) ? c.config().layers() : kind.perLayer() ? 0 : 1;
            for (int l = 0; l < layers; l++) {
                int layer = l;
                c.sourceName(kind, l).ifPresent(n -> names.put(n, kind.canonicalName(layer)));
            }
        }
        return names;
    }

    /** Long arrays (GGUF token lists) are shown as their length, not their content. */
    private static Object summarize(Object v) {
        if (v instanceof List<?> l && l.size() > SHOWN_ITEMS) return "[" + l.size() + " items]";
        if (v != null && v.getClass().isArray() && Array.getLength(v) > SHOWN_ITEMS) return "[" + Array.getLength(v) + " items]";
        return v;
    }
}
