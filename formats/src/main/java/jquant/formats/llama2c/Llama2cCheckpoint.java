package jquant.formats.llama2c;

import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.DType;
import jquant.formats.MappedFile;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * Karpathy's llama2.c checkpoints, both header versions.
 *
 * <pre>
 * legacy (version 0)                          version 1 ("ak42")
 * int32 dim, hidden_dim, n_layers,            uint32 magic 0x616b3432, int32 version = 1,
 *       n_heads, n_kv_heads, vocab_size,      int32 × 7 as legacy (vocab_size positive),
 *       seq_len        (28 bytes)             uint8 shared_classifier, zero pad to 256 bytes
 * float32, each [layers][rows][cols]:          float32:
 *   token_embedding [vocab][dim]                rms_att, rms_ffn, rms_final,
 *   rms_att, wq, wk, wv, wo, rms_ffn,           token_embedding, wq, wk, wv, wo, w1, w2, w3,
 *   w1 (gate), w2 (down), w3 (up),              wcls if not shared
 *   rms_final, freq_cis_real, freq_cis_imag
 *     [seq_len][head_dim/2] (unused),
 *   wcls [vocab][dim] if vocab_size &lt; 0
 * </pre>
 *
 * A negative legacy {@code vocab_size} marks an untied classifier. RoPE rotates adjacent pairs. The
 * format stores no rope theta or norm epsilon: llama2.c hard-codes 10000 and 1e-5. Per-layer slices
 * are exposed as {@code layers.N.wq} and so on, in file order.
 */
public final class Llama2cCheckpoint implements Checkpoint {
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int LEGACY_HEADER_BYTES = 7 * 4;
    private static final int V1_HEADER_BYTES = 256;
    private static final int V1_MAGIC = 0x616b3432;
    private static final float ROPE_THETA = 10000f;
    private static final float RMS_EPS = 1e-5f;
    /** Upper bound on any header field: rejects garbage before it turns into absurd sizes. */
    private static final int MAX_DIM = 1 << 20;

    private final Path path;
    private final MappedFile file;
    private final String format;
    private final ModelConfig config;
    private final SequencedMap<String, Tensor> tensors = new LinkedHashMap<>();
    private final Vocabulary vocabulary;

    private Llama2cCheckpoint(Path path, MappedFile file, String format, ModelConfig config, Vocabulary vocabulary) {
        this.path = path;
        this.file = file;
        this.format = format;
        this.config = config;
        this.vocabulary = vocabulary;
    }

    /** Opens a checkpoint; its tokenizer is {@code tokenizer.bin} or {@code tok<vocab>.bin} beside it, if present. */
    public static Llama2cCheckpoint open(Path path) throws CheckpointException {
        return open(path, null);
    }

    /** Opens a checkpoint with an explicit llama2.c {@code tokenizer.bin} (null: look beside the checkpoint). */
    public static Llama2cCheckpoint open(Path path, Path tokenizer) throws CheckpointException {
        return MappedFile.parse(path, file -> read(path, file, tokenizer));
    }

    /** True if the file starts like a llama2.c checkpoint (the v1 magic, or a plausible legacy header). */
    public static boolean looksLike(MemorySegment head) {
        if (head.byteSize() < LEGACY_HEADER_BYTES) return false;
        if (head.get(I32, 0) == V1_MAGIC) return true;
        for (int i = 0; i < 7; i++) {
            int v = head.get(I32, 4L * i);
            if (i == 5 ? v == 0 || Math.abs((long) v) > MAX_DIM : v <= 0 || v > MAX_DIM) return false;
        }
        return true;
    }

    private static Llama2cCheckpoint read(Path path, MappedFile file, Path tokenizer) throws CheckpointException {
        MemorySegment seg = file.segment();
        if (seg.byteSize() < LEGACY_HEADER_BYTES) {
            throw new CheckpointException(path, "file is " + seg.byteSize() + " bytes, shorter than a llama2.c header");
        }
        boolean v1 = seg.get(I32, 0) == V1_MAGIC;
        long base;
        int[] p = new int[7];
        boolean shared;
        if (v1) {
            if (seg.byteSize() < V1_HEADER_BYTES) throw new CheckpointException(path, "truncated llama2.c v1 header");
            int version = seg.get(I32, 4);
            if (version != 1) throw new CheckpointException(path, "llama2.c version " + version + " is not supported (only 0 and 1)");
            for (int i = 0; i < 7; i++) p[i] = seg.get(I32, 8 + 4L * i);
            shared = seg.get(ValueLayout.JAVA_BYTE, 36) != 0;
            base = V1_HEADER_BYTES;
        } else {
            for (int i = 0; i < 7; i++) p[i] = seg.get(I32, 4L * i);
            shared = p[5] > 0;
            p[5] = Math.abs(p[5]);
            base = LEGACY_HEADER_BYTES;
        }
        for (int i = 0; i < 7; i++) {
            if (p[i] <= 0 || p[i] > MAX_DIM) {
                throw new CheckpointException(path, "header field " + HEADER_NAMES[i] + " = " + p[i] + " is not a plausible size");
            }
        }
        ModelConfig config;
        try {
            config = new ModelConfig(p[0], p[1], p[2], p[3], p[4], p[5], p[6], ROPE_THETA, RMS_EPS, shared);
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(path, "inconsistent header: " + e.getMessage());
        }
        Vocabulary vocab = loadTokenizer(path, tokenizer, config.vocabSize());
        Llama2cCheckpoint ckpt = new Llama2cCheckpoint(path, file, v1 ? "llama2c-v1" : "llama2c", config, vocab);
        Layout layout = new Layout(ckpt, seg, base);
        if (v1) layout.v1(shared);
        else layout.legacy(shared);
        if (layout.offset != seg.byteSize()) {
            throw new CheckpointException(path, "size " + seg.byteSize() + " bytes does not match the header, which needs "
                    + layout.offset + " bytes (" + (layout.offset > seg.byteSize() ? "truncated?" : "trailing data") + ")");
        }
        return ckpt;
    }

    private static final String[] HEADER_NAMES = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};

    /** Walks the float32 arrays in file order, slicing per-layer tensors. */
    private static final class Layout {
        final Llama2cCheckpoint ckpt;
        final MemorySegment seg;
        final ModelConfig c;
        long offset;

        Layout(Llama2cCheckpoint ckpt, MemorySegment seg, long offset) {
            this.ckpt = ckpt;
            this.seg = seg;
            this.c = ckpt.config;
            this.offset = offset;
        }

        void legacy(boolean shared) throws CheckpointException {
            global("token_embedding", c.vocabSize(), c.dim());
            perLayer("rms_att", c.dim());
            perLayer("wq", c.dim(), c.dim());
            perLayer("wk", c.kvDim(), c.dim());
            perLayer("wv", c.kvDim(), c.dim());
            perLayer("wo", c.dim(), c.dim());
            perLayer("rms_ffn", c.dim());
            perLayer("w1", c.hiddenDim(), c.dim());
            perLayer("w2", c.dim(), c.hiddenDim());
            perLayer("w3", c.hiddenDim(), c.dim());
            global("rms_final", c.dim());
            global("freq_cis_real", c.maxSeqLen(), c.headDim() / 2);
            global("freq_cis_imag", c.maxSeqLen(), c.headDim() / 2);
            if (!shared) global("wcls", c.vocabSize(), c.dim());
        }

        void v1(boolean shared) throws CheckpointException {
            perLayer("rms_att", c.dim());
            perLayer("rms_ffn", c.dim());
            global("rms_final", c.dim());
            global("token_embedding", c.vocabSize(), c.dim());
            perLayer("wq", c.dim(), c.dim());
            perLayer("wk", c.kvDim(), c.dim());
            perLayer("wv", c.kvDim(), c.dim());
            perLayer("wo", c.dim(), c.dim());
            perLayer("w1", c.hiddenDim(), c.dim());
            perLayer("w2", c.dim(), c.hiddenDim());
            perLayer("w3", c.hiddenDim(), c.dim());
            if (!shared) global("wcls", c.vocabSize(), c.dim());
        }

        private void perLayer(String name, long... shape) throws CheckpointException {
            for (int l = 0; l < c.layers(); l++) global("layers." + l + "." + name, shape);
        }

        private void global(String name, long... shape) throws CheckpointException {
            long bytes = 4;
            for (long d : shape) bytes *= d;
            if (offset + bytes > seg.byteSize()) {
                throw new CheckpointException(ckpt.path, "truncated: tensor " + name + " needs bytes " + offset + ".."
                        + (offset + bytes) + " but the file has " + seg.byteSize());
            }
            ckpt.tensors.put(name, new Tensor(name, shape, DType.F32, seg.asSlice(offset, bytes)));
            offset += bytes;
        }
    }

    private static Vocabulary loadTokenizer(Path model, Path explicit, int vocabSize) throws CheckpointException {
        Path tok = explicit;
        if (tok == null) {
            Path dir = model.toAbsolutePath().getParent();
            for (String name : new String[]{"tokenizer.bin", "tok" + vocabSize + ".bin"}) {
                if (Files.isRegularFile(dir.resolve(name))) {
                    tok = dir.resolve(name);
                    break;
                }
            }
            if (tok == null) return null;
        }
        Vocabulary v = Llama2cTokenizerReader.read(tok);
        if (v.size() != vocabSize) {
            throw new CheckpointException(tok, "tokenizer has " + v.size() + " tokens but the model's vocabulary is " + vocabSize);
        }
        return v;
    }

    @Override public Path source() { return path; }

    @Override public String format() { return format; }

    @Override public ModelConfig config() { return config; }

    @Override public RopeConvention rope() { return RopeConvention.ADJACENT_PAIRS; }

    @Override public SequencedMap<String, Tensor> tensors() { return tensors; }

    @Override
    public Optional<String> sourceName(TensorKind kind, int layer) {
        String name = switch (kind) {
            case EMBEDDING -> "token_embedding";
            case ATTN_NORM -> "layers." + layer + ".rms_att";
            case WQ -> "layers." + layer + ".wq";
            case WK -> "layers." + layer + ".wk";
            case WV -> "layers." + layer + ".wv";
            case WO -> "layers." + layer + ".wo";
            case FFN_NORM -> "layers." + layer + ".rms_ffn";
            case W_GATE -> "layers." + layer + ".w1";
            case W_DOWN -> "layers." + layer + ".w2";
            case W_UP -> "layers." + layer + ".w3";
            case FINAL_NORM -> "rms_final";
            case HEAD -> config.tiedEmbeddings() ? null : "wcls";
            case Q_BIAS, K_BIAS, V_BIAS -> null;   // llama2.c models have no biases
        };
        return Optional.ofNullable(name).filter(tensors::containsKey);
    }

    @Override public Optional<Vocabulary> vocabulary() { return Optional.ofNullable(vocabulary); }

    @Override
    public Map<String, Object> metadata() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("version", format.equals("llama2c-v1") ? 1 : 0);
        m.put("shared_classifier", config.tiedEmbeddings());
        return m;
    }

    @Override
    public void close() {
        file.close();
    }
}
