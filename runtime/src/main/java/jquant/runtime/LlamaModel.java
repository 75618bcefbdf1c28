package jquant.runtime;

import jquant.formats.Checkpoint;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;

import java.util.ArrayList;
import java.util.List;

/**
 * A Llama-family decoder ready to run: token embedding, then per block RMSNorm → grouped-query
 * attention with RoPE → residual, RMSNorm → SwiGLU feed-forward → residual, then a final RMSNorm and
 * the classifier. Activations are float32; every linear layer is a {@link LinearWeights}, so the
 * same forward pass runs dense, quantized or ternary weights.
 *
 * <p>The model is immutable and can be shared; the state of one text (its KV cache) lives in an
 * {@link InferenceSession} from {@link #newSession}.
 */
public final class LlamaModel {

    /**
     * Waits until the weights of one stage of the forward pass may be used: stage 0 the embedding,
     * {@code l + 1} block {@code l}, {@code layers + 1} the final norm and classifier
     * ({@link LayerLoader}).
     */
    @FunctionalInterface
    public interface LayerGate {
        /** Every stage ready from the start. */
        LayerGate OPEN = stage -> {};

        void await(int stage);
    }

    /**
     * One transformer block's parameters; norms are float32 vectors of length {@code dim}; the q/k/v
     * biases (Qwen2) are float32 vectors added to the projections' outputs, or null where the
     * architecture has none.
     */
    public record Layer(float[] attnNorm, LinearWeights wq, LinearWeights wk, LinearWeights wv, LinearWeights wo,
                        float[] ffnNorm, LinearWeights gate, LinearWeights up, LinearWeights down,
                        float[] qBias, float[] kBias, float[] vBias) {

        /** A block without biases (Llama). */
        public Layer(float[] attnNorm, LinearWeights wq, LinearWeights wk, LinearWeights wv, LinearWeights wo,
                     float[] ffnNorm, LinearWeights gate, LinearWeights up, LinearWeights down) {
            this(attnNorm, wq, wk, wv, wo, ffnNorm, gate, up, down, null, null, null);
        }
    }

    private final ModelConfig config;
    private final RopeConvention rope;
    private final TokenEmbedding embedding;
    private final List<Layer> layers;
    private final float[] finalNorm;
    private final LinearWeights head;
    private final Compute compute;
    private final RotaryEmbedding rotary;
    private final LayerGate gate;

    /**
     * Assembles a model from its parts, checking every shape against {@code config}.
     *
     * @param embedding the token embedding, {@code vocabSize} rows of {@code dim}
     * @param head      the classifier, {@code vocabSize × dim}
     */
    public LlamaModel(ModelConfig config, RopeConvention rope, TokenEmbedding embedding, List<Layer> layers,
                      float[] finalNorm, LinearWeights head, Compute compute) {
        this(config, rope, embedding, layers, finalNorm, head, compute, LayerGate.OPEN);
    }

    private LlamaModel(ModelConfig config, RopeConvention rope, TokenEmbedding embedding, List<Layer> layers,
                       float[] finalNorm, LinearWeights head, Compute compute, LayerGate gate) {
        int dim = config.dim();
        int kvDim = config.kvDim();
        int hidden = config.hiddenDim();
        require(layers.size() == config.layers(), "layers", layers.size() + " given, config says " + config.layers());
        require(finalNorm.length == dim, TensorKind.FINAL_NORM.canonicalName(0), "length " + finalNorm.length + ", expected " + dim);
        checkShape(head, config.vocabSize(), dim, TensorKind.HEAD.canonicalName(0));
        for (int l = 0; l < layers.size(); l++) {
            Layer layer = layers.get(l);
            require(layer.attnNorm().length == dim, TensorKind.ATTN_NORM.canonicalName(l), "length " + layer.attnNorm().length);
            require(layer.ffnNorm().length == dim, TensorKind.FFN_NORM.canonicalName(l), "length " + layer.ffnNorm().length);
            checkShape(layer.wq(), config.qDim(), dim, TensorKind.WQ.canonicalName(l));
            checkShape(layer.wk(), kvDim, dim, TensorKind.WK.canonicalName(l));
            checkShape(layer.wv(), kvDim, dim, TensorKind.WV.canonicalName(l));
            checkShape(layer.wo(), dim, config.qDim(), TensorKind.WO.canonicalName(l));
            boolean biased = config.architecture().qkvBias();
            checkBias(layer.qBias(), biased, config.qDim(), TensorKind.Q_BIAS.canonicalName(l));
            checkBias(layer.kBias(), biased, kvDim, TensorKind.K_BIAS.canonicalName(l));
            checkBias(layer.vBias(), biased, kvDim, TensorKind.V_BIAS.canonicalName(l));
            checkShape(layer.gate(), hidden, dim, TensorKind.W_GATE.canonicalName(l));
            checkShape(layer.up(), hidden, dim, TensorKind.W_UP.canonicalName(l));
            checkShape(layer.down(), dim, hidden, TensorKind.W_DOWN.canonicalName(l));
        }
        this.config = config;
        this.rope = rope;
        this.embedding = embedding;
        this.layers = List.copyOf(layers);
        this.finalNorm = finalNorm;
        this.head = head;
        this.compute = compute;
        this.rotary = new RotaryEmbedding(rope, config.headDim(), config.maxSeqLen(), config.ropeTheta(), config.ropeScaling());
        this.gate = gate;
    }

    /** The same model, whose forward pass waits at each stage for {@code gate} (a {@link LayerLoader}). */
    public LlamaModel withGate(LayerGate gate) {
        return new LlamaModel(config, rope, embedding, layers, finalNorm, head, compute, gate);
    }

    LayerGate gate() {
        return gate;
    }

    /** Loads {@code checkpoint} on the Vector API kernels, every weight multiplied where it is stored. */
    public static LlamaModel load(Checkpoint checkpoint) {
        Compute compute = Compute.vector();
        return load(checkpoint, compute, LinearWeightsFactory.inPlace(compute));
    }

    /**
     * Loads {@code checkpoint}, asking {@code weights} for every linear layer (the seven block
     * matrices and the classifier). Embedding rows are decoded when looked up; norms are copied to
     * float32. q/k rows are used as stored; {@link Checkpoint#rope()} picks the matching rotation.
     * The model reads the checkpoint's mapping: keep the checkpoint open while the model is used.
     */
    public static LlamaModel load(Checkpoint checkpoint, Compute compute, LinearWeightsFactory weights) {
        ModelConfig c = checkpoint.config();
        List<Layer> layers = new ArrayList<>(c.layers());
        for (int l = 0; l < c.layers(); l++) {
            layers.add(new Layer(
                    vector(checkpoint, TensorKind.ATTN_NORM, l),
                    linear(checkpoint, weights, TensorKind.WQ, l),
                    linear(checkpoint, weights, TensorKind.WK, l),
                    linear(checkpoint, weights, TensorKind.WV, l),
                    linear(checkpoint, weights, TensorKind.WO, l),
                    vector(checkpoint, TensorKind.FFN_NORM, l),
                    linear(checkpoint, weights, TensorKind.W_GATE, l),
                    linear(checkpoint, weights, TensorKind.W_UP, l),
                    linear(checkpoint, weights, TensorKind.W_DOWN, l),
                    bias(checkpoint, TensorKind.Q_BIAS, l),
                    bias(checkpoint, TensorKind.K_BIAS, l),
                    bias(checkpoint, TensorKind.V_BIAS, l)));
        }
        Tensor embedding = checkpoint.tensor(TensorKind.EMBEDDING, 0);
        try {
            if (embedding.rows() != c.vocabSize() || embedding.cols() != c.dim()) {
                throw new IllegalArgumentException("token embedding is " + embedding.rows() + "×" + embedding.cols()
                        + ", expected " + c.vocabSize() + "×" + c.dim());
            }
            return new LlamaModel(c, checkpoint.rope(), TokenEmbedding.of(embedding), layers,
                    vector(checkpoint, TensorKind.FINAL_NORM, 0), linear(checkpoint, weights, TensorKind.HEAD, 0), compute);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(checkpoint.source() + ": " + e.getMessage(), e);
        }
    }

    private static LinearWeights linear(Checkpoint checkpoint, LinearWeightsFactory weights, TensorKind kind, int layer) {
        return weights.create(kind, layer, checkpoint.tensor(kind, layer));
    }

    private static float[] vector(Checkpoint checkpoint, TensorKind kind, int layer) {
        return checkpoint.tensor(kind, layer).toFloats();
    }

    /** A bias vector as float32, or null when the architecture has none. */
    private static float[] bias(Checkpoint checkpoint, TensorKind kind, int layer) {
        return kind.presentIn(checkpoint.config()) ? vector(checkpoint, kind, layer) : null;
    }

    private static void checkBias(float[] bias, boolean expected, int length, String name) {
        require(expected == (bias != null), name, expected ? "is missing" : "is given, but the architecture has no biases");
        if (bias != null) require(bias.length == length, name, "length " + bias.length + ", expected " + length);
    }

    private static void checkShape(LinearWeights w, int out, int in, String name) {
        require(w.outFeatures() == out && w.inFeatures() == in, name,
                "is " + w.outFeatures() + "×" + w.inFeatures() + ", expected " + out + "×" + in);
    }

    private static void require(boolean ok, String what, String problem) {
        if (!ok) throw new IllegalArgumentException(what + " " + problem);
    }

    /** A fresh KV cache for up to {@link ModelConfig#maxSeqLen()} positions. */
    public InferenceSession newSession() {
        return new InferenceSession(this, config.maxSeqLen());
    }

    /** A fresh KV cache for up to {@code contextLength} positions (at most the model's context). */
    public InferenceSession newSession(int contextLength) {
        return new InferenceSession(this, contextLength);
    }

    public ModelConfig config() {
        return config;
    }

    public RopeConvention rope() {
        return rope;
    }

    public Compute compute() {
        return compute;
    }

    /** Bytes of stored weights every token's forward pass reads: all linear layers and the classifier. */
    public long linearWeightBytes() {
        long bytes = head.storedBytes();
        for (Layer l : layers) {
            for (LinearWeights w : List.of(l.wq(), l.wk(), l.wv(), l.wo(), l.gate(), l.up(), l.down())) bytes += w.storedBytes();
        }
        return bytes;
    }

    TokenEmbedding embedding() {
        return embedding;
    }

    List<Layer> layers() {
        return layers;
    }

    float[] finalNorm() {
        return finalNorm;
    }

    LinearWeights head() {
        return head;
    }

    RotaryEmbedding rotary() {
        return rotary;
    }
}
