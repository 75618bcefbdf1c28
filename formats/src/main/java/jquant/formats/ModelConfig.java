package jquant.formats;

/**
 * Hyper-parameters of a Llama-family decoder, whatever checkpoint format they came from.
 *
 * @param architecture     the family ({@link Architecture}): decides q/k/v biases and how GGUF stores it
 * @param dim              hidden size
 * @param hiddenDim        SwiGLU intermediate size
 * @param layers           number of transformer blocks
 * @param heads            query heads
 * @param kvHeads          key/value heads (grouped-query attention when fewer than {@code heads})
 * @param headDim          elements per attention head; {@code dim / heads} unless the checkpoint says
 *                         otherwise (HF {@code head_dim}, GGUF {@code *.attention.key_length})
 * @param vocabSize        vocabulary size
 * @param maxSeqLen        maximum context length (positions)
 * @param ropeTheta        RoPE base frequency
 * @param ropeScaling      per-frequency RoPE divisors (Llama 3.1's scaling), or null for plain RoPE
 * @param rmsEps           RMSNorm epsilon
 * @param tiedEmbeddings   classifier shares the token embedding matrix
 */
public record ModelConfig(Architecture architecture, int dim, int hiddenDim, int layers, int heads, int kvHeads, int headDim,
                          int vocabSize, int maxSeqLen, float ropeTheta, RopeScaling ropeScaling, float rmsEps,
                          boolean tiedEmbeddings) {

    public ModelConfig {
        if (architecture == null) throw new IllegalArgumentException("no architecture");
        if (dim <= 0 || hiddenDim <= 0 || layers <= 0 || heads <= 0 || kvHeads <= 0 || headDim <= 0 || vocabSize <= 0 || maxSeqLen <= 0) {
            throw new IllegalArgumentException("model dimensions must be positive: " + describe(dim, hiddenDim, layers, heads, kvHeads, headDim, vocabSize, maxSeqLen));
        }
        if (heads % kvHeads != 0) throw new IllegalArgumentException("heads " + heads + " is not a multiple of kv heads " + kvHeads);
        if (headDim % 2 != 0) throw new IllegalArgumentException("head dim " + headDim + " must be even for RoPE");
        if (!(ropeTheta > 0) || !(rmsEps > 0)) throw new IllegalArgumentException("rope theta and rms eps must be positive");
        if (ropeScaling != null && ropeScaling.frequencies() != headDim / 2) {
            throw new IllegalArgumentException("RoPE scaling has " + ropeScaling.frequencies() + " factors for head dim " + headDim
                    + " (needs " + headDim / 2 + ")");
        }
    }

    /** A Llama model with heads of {@code dim / heads} and plain RoPE. */
    public ModelConfig(int dim, int hiddenDim, int layers, int heads, int kvHeads, int vocabSize, int maxSeqLen, float ropeTheta,
                       float rmsEps, boolean tiedEmbeddings) {
        if (heads > 0 && dim % heads != 0) throw new IllegalArgumentException("dim " + dim + " is not a multiple of heads " + heads);
        this(Architecture.LLAMA, dim, hiddenDim, layers, heads, kvHeads, heads > 0 ? dim / heads : 0, vocabSize, maxSeqLen, ropeTheta,
                null, rmsEps, tiedEmbeddings);
    }

    /** Width of the attention's queries and of o_proj's input: {@code heads · headDim}. */
    public int qDim() { return heads * headDim; }

    public int kvDim() { return kvHeads * headDim; }

    /** Weights of one decoder layer's matrices (q, k, v, o, gate, up, down). */
    public long layerWeights() {
        return (long) dim * (qDim() + 2L * kvDim()) + (long) qDim() * dim + 3L * dim * hiddenDim;
    }

    /** This config with the classifier untied from the embedding (or tied). */
    public ModelConfig withTiedEmbeddings(boolean tied) {
        return new ModelConfig(architecture, dim, hiddenDim, layers, heads, kvHeads, headDim, vocabSize, maxSeqLen, ropeTheta,
                ropeScaling, rmsEps, tied);
    }

    /** Whether this is the shape every reader assumed before head dims and RoPE scaling: a Llama with {@code headDim = dim / heads}. */
    public boolean isPlainLlama() {
        return architecture == Architecture.LLAMA && headDim * heads == dim && ropeScaling == null;
    }

    private static String describe(int... v) {
        return java.util.Arrays.toString(v);
    }
}
