package jquant.formats.gguf;

import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SequencedMap;
import java.util.Set;

/**
 * Any checkpoint as the source of a GGUF file: its metadata keys (copied whole from a GGUF, built from
 * the config and vocabulary otherwise) and its tensors under GGUF names in llama.cpp's order.
 */
public final class GgufSource {
    private GgufSource() {}

    /** Every metadata key of a GGUF source, in order; for other formats, the llama keys and tokenizer. */
    public static SequencedMap<String, GgufValue> metadata(Checkpoint c) throws CheckpointException {
        if (c instanceof GgufCheckpoint g) return new LinkedHashMap<>(g.file().metadata());
        if (c.rope() != RopeConvention.ADJACENT_PAIRS) {
            throw new CheckpointException(c.source(), "its q/k rows use " + c.rope() + " RoPE; GGUF llama files use adjacent pairs"
                    + " (convert the checkpoint to GGUF or llama2.c first)");
        }
        ModelConfig m = c.config();
        SequencedMap<String, GgufValue> kv = new LinkedHashMap<>();
        kv.put("general.architecture", GgufValue.string("llama"));
        kv.put("general.name", GgufValue.string(Objects.toString(c.source().getFileName())));
        kv.put("llama.embedding_length", GgufValue.uint32(m.dim()));
        kv.put("llama.feed_forward_length", GgufValue.uint32(m.hiddenDim()));
        kv.put("llama.block_count", GgufValue.uint32(m.layers()));
        kv.put("llama.attention.head_count", GgufValue.uint32(m.heads()));
        kv.put("llama.attention.head_count_kv", GgufValue.uint32(m.kvHeads()));
        kv.put("llama.vocab_size", GgufValue.uint32(m.vocabSize()));
        kv.put("llama.context_length", GgufValue.uint32(m.maxSeqLen()));
        kv.put("llama.rope.freq_base", GgufValue.float32(m.ropeTheta()));
        kv.put("llama.attention.layer_norm_rms_epsilon", GgufValue.float32(m.rmsEps()));
        Vocabulary v = c.vocabulary().orElseThrow(() -> new CheckpointException(c.source(),
                "no tokenizer found: pass --tokenizer, or put tokenizer.bin beside the checkpoint"));
        kv.put("tokenizer.ggml.model", GgufValue.string(v.kind() == Vocabulary.Kind.SENTENCEPIECE ? "llama" : "gpt2"));
        kv.put("tokenizer.ggml.tokens", GgufValue.stringArray(v.pieces()));
        List<GgufValue> scores = new ArrayList<>(v.size());
        for (int i = 0; i < v.size(); i++) scores.add(GgufValue.float32(v.scores()[i]));
        kv.put("tokenizer.ggml.scores", GgufValue.array(GgufType.FLOAT32, scores));
        if (!v.merges().isEmpty()) kv.put("tokenizer.ggml.merges", GgufValue.stringArray(v.merges()));
        if (v.kind() == Vocabulary.Kind.BPE) {
            String pre = v.preTokenizer().llamaCppName().orElseThrow(() -> new CheckpointException(c.source(),
                    "its tokenizer's pre-tokenizer has no llama.cpp name to write as tokenizer.ggml.pre"));
            kv.put("tokenizer.ggml.pre", GgufValue.string(pre));
            kv.put("tokenizer.ggml.token_type", GgufValue.array(GgufType.INT32, v.types().stream().map(t -> GgufValue.int32(t.code())).toList()));
        }
        kv.put("tokenizer.ggml.bos_token_id", GgufValue.uint32(v.bos()));
        kv.put("tokenizer.ggml.eos_token_id", GgufValue.uint32(v.eos()));
        kv.put("tokenizer.ggml.add_bos_token", GgufValue.bool(v.addBos()));
        return kv;
    }

    /**
     * The source's tensors by GGUF name, in order: a GGUF's own; any other format's under the canonical
     * names ({@code blk.0.attn_q.weight}) in llama.cpp's order (embedding, each block, final norm,
     * classifier), the classifier left out when tied.
     */
    public static SequencedMap<String, Tensor> tensors(Checkpoint c) {
        if (c instanceof GgufCheckpoint) return c.tensors();
        SequencedMap<String, Tensor> out = new LinkedHashMap<>();
        put(out, c, TensorKind.EMBEDDING, 0);
        for (int l = 0; l < c.config().layers(); l++) {
            for (TensorKind kind : TensorKind.values()) {
                if (kind.perLayer()) put(out, c, kind, l);
            }
        }
        put(out, c, TensorKind.FINAL_NORM, 0);
        if (!c.config().tiedEmbeddings()) put(out, c, TensorKind.HEAD, 0);
        return out;
    }

    private static void put(SequencedMap<String, Tensor> out, Checkpoint c, TensorKind kind, int layer) {
        Tensor t = c.tensor(kind, layer);
        String name = kind.canonicalName(layer) + ".weight";
        out.put(name, new Tensor(name, t.shape(), t.dtype(), t.data()));
    }

    /** GGUF names of the seven linear matrices of every block. */
    public static Set<String> blockLinearNames(Checkpoint c, Map<String, Tensor> gguf) {
        Set<String> names = new LinkedHashSet<>();
        for (TensorKind kind : TensorKind.values()) {
            if (!kind.isBlockLinear()) continue;
            for (int l = 0; l < c.config().layers(); l++) {
                String name = c instanceof GgufCheckpoint ? c.sourceName(kind, l).orElseThrow() : kind.canonicalName(l) + ".weight";
                if (gguf.containsKey(name)) names.add(name);
            }
        }
        return names;
    }
}
