package jquant.formats.gguf;

import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.DType;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.formats.RopeScaling;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Objects;
import java.util.SequencedMap;
import java.util.regex.Pattern;

/**
 * Any checkpoint as the source of a llama.cpp GGUF file: its metadata keys (copied whole from a GGUF,
 * built from the config and vocabulary otherwise, as llama.cpp's convert_hf_to_gguf.py writes them) and
 * its tensors under llama.cpp's names ({@link GgufTensor}), q/k rows in the order the architecture's GGUF
 * files use ({@link jquant.formats.Architecture#ggufRope()}: a Hugging Face Llama's rotate-half rows go
 * back to adjacent pairs, as convert_hf_to_gguf.py's {@code LlamaModel.permute} does; Qwen2's stay).
 */
public final class GgufSource {
    /** A SentencePiece byte piece, {@code <0x0A>}. */
    private static final Pattern BYTE_PIECE = Pattern.compile("<0x[0-9A-Fa-f]{2}>");

    private GgufSource() {}

    /**
     * Every metadata key of a GGUF source, in order; for other formats, the architecture's hyper-parameters
     * and the tokenizer. Neither includes {@code general.file_type}, which depends on what is written
     * ({@link GgufFileType}).
     */
    public static SequencedMap<String, GgufValue> metadata(Checkpoint c) throws CheckpointException {
        if (c instanceof GgufCheckpoint g) return new LinkedHashMap<>(g.file().metadata());
        ModelConfig m = c.config();
        String p = m.architecture().ggufName() + ".";
        SequencedMap<String, GgufValue> kv = new LinkedHashMap<>();
        kv.put("general.architecture", GgufValue.string(m.architecture().ggufName()));
        kv.put("general.type", GgufValue.string("model"));
        kv.put("general.name", GgufValue.string(Objects.toString(c.source().getFileName())));
        kv.put(p + "block_count", GgufValue.uint32(m.layers()));
        kv.put(p + "context_length", GgufValue.uint32(m.maxSeqLen()));
        kv.put(p + "embedding_length", GgufValue.uint32(m.dim()));
        kv.put(p + "feed_forward_length", GgufValue.uint32(m.hiddenDim()));
        kv.put(p + "attention.head_count", GgufValue.uint32(m.heads()));
        kv.put(p + "attention.head_count_kv", GgufValue.uint32(m.kvHeads()));
        kv.put(p + "rope.freq_base", GgufValue.float32(m.ropeTheta()));
        kv.put(p + "attention.layer_norm_rms_epsilon", GgufValue.float32(m.rmsEps()));
        if (m.qDim() != m.dim()) {
            // convert_hf_to_gguf.py writes both whenever head_dim is not hidden_size / heads
            kv.put(p + "attention.key_length", GgufValue.uint32(m.headDim()));
            kv.put(p + "attention.value_length", GgufValue.uint32(m.headDim()));
        }
        kv.put(p + "vocab_size", GgufValue.uint32(m.vocabSize()));
        kv.put(p + "rope.dimension_count", GgufValue.uint32(m.headDim()));
        Vocabulary v = c.vocabulary().orElseThrow(() -> new CheckpointException(c.source(),
                "no tokenizer found: pass --tokenizer, or put tokenizer.bin beside the checkpoint"));
        putTokenizer(c, v, kv);
        return kv;
    }

    /**
     * The tokenizer keys: SentencePiece as model "llama" (tokens, scores, token types), byte-level BPE as
     * model "gpt2" (tokenizer.ggml.pre, tokens, token types, merges), then the special ids. A SentencePiece
     * vocabulary read without types (llama2.c's tokenizer.bin) gets them as llama.cpp's converters give
     * them: the unknown piece, BOS/EOS as control, {@code <0xNN>} as byte pieces.
     */
    private static void putTokenizer(Checkpoint c, Vocabulary v, SequencedMap<String, GgufValue> kv) throws CheckpointException {
        boolean sentencePiece = v.kind() == Vocabulary.Kind.SENTENCEPIECE;
        kv.put("tokenizer.ggml.model", GgufValue.string(sentencePiece ? "llama" : "gpt2"));
        if (!sentencePiece) {
            String pre = v.preTokenizer().llamaCppName().orElseThrow(() -> new CheckpointException(c.source(),
                    "its tokenizer's pre-tokenizer has no llama.cpp name to write as tokenizer.ggml.pre"));
            kv.put("tokenizer.ggml.pre", GgufValue.string(pre));
        }
        kv.put("tokenizer.ggml.tokens", GgufValue.stringArray(v.pieces()));
        if (sentencePiece) {
            List<GgufValue> scores = new ArrayList<>(v.size());
            for (int i = 0; i < v.size(); i++) scores.add(GgufValue.float32(v.scores()[i]));
            kv.put("tokenizer.ggml.scores", GgufValue.array(GgufType.FLOAT32, scores));
        }
        List<Vocabulary.TokenType> types = sentencePiece && v.types().stream().allMatch(t -> t == Vocabulary.TokenType.NORMAL)
                ? sentencePieceTypes(v) : v.types();
        kv.put("tokenizer.ggml.token_type", GgufValue.array(GgufType.INT32, types.stream().map(t -> GgufValue.int32(t.code())).toList()));
        if (!v.merges().isEmpty()) kv.put("tokenizer.ggml.merges", GgufValue.stringArray(v.merges()));
        if (v.bos() >= 0) kv.put("tokenizer.ggml.bos_token_id", GgufValue.uint32(v.bos()));
        if (v.eos() >= 0) kv.put("tokenizer.ggml.eos_token_id", GgufValue.uint32(v.eos()));
        if (sentencePiece) {
            int unk = v.pieces().indexOf("<unk>");
            if (unk >= 0) kv.put("tokenizer.ggml.unknown_token_id", GgufValue.uint32(unk));
        }
        kv.put("tokenizer.ggml.add_bos_token", GgufValue.bool(v.addBos()));
    }

    private static List<Vocabulary.TokenType> sentencePieceTypes(Vocabulary v) {
        List<Vocabulary.TokenType> types = new ArrayList<>(v.size());
        for (int i = 0; i < v.size(); i++) {
            String piece = v.pieces().get(i);
            if (piece.equals("<unk>")) types.add(Vocabulary.TokenType.UNKNOWN);
            else if (i == v.bos() || i == v.eos()) types.add(Vocabulary.TokenType.CONTROL);
            else if (BYTE_PIECE.matcher(piece).matches()) types.add(Vocabulary.TokenType.BYTE);
            else types.add(Vocabulary.TokenType.NORMAL);
        }
        return types;
    }

    /**
     * The tensors of the GGUF file, in order: a GGUF's own; any other format's under llama.cpp's names in
     * llama.cpp's order (the RoPE divisors {@code rope_freqs.weight} when the config scales RoPE, the
     * embedding, each block, the final norm, the classifier unless tied), q/k rows in the architecture's
     * GGUF order.
     */
    public static List<GgufTensor> tensors(Checkpoint c) {
        List<GgufTensor> out = new ArrayList<>();
        if (c instanceof GgufCheckpoint) {
            c.tensors().forEach((name, t) -> out.add(new GgufTensor(name, t, null)));
            return out;
        }
        ModelConfig m = c.config();
        if (m.ropeScaling() != null) out.add(new GgufTensor(RopeScaling.GGUF_TENSOR, f32(RopeScaling.GGUF_TENSOR, m.ropeScaling().factors()), null));
        out.add(entry(c, TensorKind.EMBEDDING, 0));
        for (int l = 0; l < m.layers(); l++) {
            for (TensorKind kind : TensorKind.values()) {
                if (kind.perLayer() && kind.presentIn(m)) out.add(entry(c, kind, l));
            }
        }
        out.add(entry(c, TensorKind.FINAL_NORM, 0));
        if (!m.tiedEmbeddings()) out.add(entry(c, TensorKind.HEAD, 0));
        return out;
    }

    private static GgufTensor entry(Checkpoint c, TensorKind kind, int layer) {
        ModelConfig m = c.config();
        RopeConvention target = m.architecture().ggufRope();
        int[] order = null;
        if (c.rope() != target && (kind == TensorKind.WQ || kind == TensorKind.WK || kind == TensorKind.Q_BIAS || kind == TensorKind.K_BIAS)) {
            if (target != RopeConvention.ADJACENT_PAIRS) {
                throw new IllegalStateException(c.source() + ": q/k rows in " + c.rope() + " order cannot become " + target);
            }
            boolean query = kind == TensorKind.WQ || kind == TensorKind.Q_BIAS;
            order = RopeConvention.adjacentPairOrder(query ? m.heads() : m.kvHeads(), m.headDim());
        }
        return new GgufTensor(kind.ggufName(layer), c.tensor(kind, layer), order);
    }

    private static Tensor f32(String name, float[] values) {
        MemorySegment bytes = MemorySegment.ofArray(new byte[4 * values.length]);
        MemorySegment.copy(values, 0, bytes, ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, values.length);
        return new Tensor(name, new long[] {values.length}, DType.F32, bytes);
    }

    /** llama.cpp names of the seven linear matrices of every block, in file order. */
    public static List<String> blockLinearNames(Checkpoint c) {
        List<String> names = new ArrayList<>();
        for (int l = 0; l < c.config().layers(); l++) {
            for (TensorKind kind : TensorKind.values()) {
                if (!kind.isBlockLinear()) continue;
                names.add(c instanceof GgufCheckpoint ? c.sourceName(kind, l).orElseThrow() : kind.ggufName(l));
            }
        }
        return names;
    }
}
