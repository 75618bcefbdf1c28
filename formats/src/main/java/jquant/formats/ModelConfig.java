package jquant.formats;

/**
 * Hyper-parameters of a Llama-family decoder, whatever checkpoint format they came from.
 *
 * @param dim              hidden size
 * @param hiddenDim        SwiGLU intermediate size
 * @param layers           number of transformer blocks
 * @param heads            query heads
 * @param kvHeads          key/value heads (grouped-query attention when fewer than {@code heads})
 * @param vocabSize        vocabulary size
 * @param maxSeqLen        maximum context length (positions)
 * @param ropeTheta        RoPE base frequency
 * @param rmsEps           RMSNorm epsilon
 * @param tiedEmbeddings   classifier shares the token embedding matrix
 */
public record ModelConfig(int dim, int hiddenDim, int layers, int heads, int kvHeads, int vocabSize,
                          int maxSeqLen, float ropeTheta, float rmsEps, boolean tiedEmbeddings) {

    public ModelConfig {
        if (dim <= 0 || hiddenDim <= 0 || layers <= 0 || heads <= 0 || kvHeads <= 0 || vocabSize <= 0 || maxSeqLen <= 0) {
            throw new IllegalArgumentException("model dimensions must be positive: " + describe(dim, hiddenDim, layers, heads, kvHeads, vocabSize, maxSeqLen));
        }
        if (dim % heads != 0) throw new IllegalArgumentException("dim " + dim + " is not a multiple of heads " + heads);
        if (heads % kvHeads != 0) throw new IllegalArgumentException("heads " + heads + " is not a multiple of kv heads " + kvHeads);
        if ((dim / heads) % 2 != 0) throw new IllegalArgumentException("head dim " + dim / heads + " must be even for RoPE");
        if (!(ropeTheta > 0) || !(rmsEps > 0)) throw new IllegalArgumentException("rope theta and rms eps must be positive");
    }

    public int headDim() { return dim / heads; }

    public int kvDim() { return kvHeads * headDim(); }

    private static String describe(int... v) {
        return java.util.Arrays.toString(v);
    }
}
