package jquant.calibration;

import jquant.formats.Checkpoint;
import jquant.formats.DType;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;
import jquant.quantize.QuantLimits;
import jquant.quantize.SmoothingRule;
import jquant.runtime.Compute;
import jquant.runtime.DenseF32Weights;
import jquant.runtime.LinearWeightsFactory;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A checkpoint after NPU-aware smoothing (EdgeFlow §4.1), as a {@link Checkpoint} view: every linear
 * layer's weight is the smoothed {@code W'}, every norm has its group's input factors folded in.
 *
 * <pre>
 *  layer t in group g (input factors f from the group's S_I and α by the {@link SmoothingRule}:
 *  b_g^α_g for EdgeFlow, {@link SmoothingFactors}), row fold r (1 unless t
 *  produces another group's input: v_proj rows take o_proj's tied factors, up_proj rows down_proj's):
 *
 *    S_O'  = floor(S_O / r)                        output range of the folded layer, per channel
 *    W'    = diag(S_O'^-β) · diag(1/r) · W · diag(f)
 *    norm' = norm / f                               (attn_norm for q/k/v, ffn_norm for gate/up, output_norm for the head)
 *    b_v'  = b_v / r                                (Qwen2's v bias follows its rows; q/k biases are unchanged)
 *
 *  run time:  o = (x / f) · W'ᵀ · diag(S_O'^β)  =  (x · Wᵀ) / r
 * </pre>
 * The division by r is undone by the consumer (o_proj's or down_proj's diag(f)), so the model's
 * logits are unchanged. {@code x / f} is what the folded norm (or folded producer) already
 * outputs, so the only extra run-time operation is the output factor {@link #outputFactor}, which
 * belongs in the per-channel dequantization scale. A float32 run of this view therefore needs
 * {@link #weightsFactory}, which applies it; {@link jquant.runtime.LlamaModel#load(Checkpoint)}
 * alone would drop it.
 *
 * <p>Per-output-channel weight quantization does not see the row factor {@code S_O'^-β} (a row's grid
 * scales with it); the factor exists so that the int8 output of the matmul fills its static
 * per-tensor range: {@code max |o / S_O'^β| = 1} per channel ({@link #outputRange}).
 *
 * <p>Tensors are computed when asked for ({@link #tensor}, {@link #weights}); {@link #tensors()}
 * materialises them all once. The classifier is always its own tensor ({@code output.weight}) since
 * smoothing separates it from a tied embedding. Closing this view does not close the checkpoint it
 * reads.
 */
public final class SmoothedModel implements Checkpoint {

    private final Checkpoint base;
    private final CalibrationStats stats;
    private final SmoothingRule rule;
    private final Map<String, Float> alphas;
    private final Map<String, Float> inputClips;
    private final ModelConfig config;
    private final Map<String, float[]> factors = new ConcurrentHashMap<>();
    private SequencedMap<String, Tensor> tensors;

    /**
     * {@code alphas}: α of every group, keyed by its name ({@code blk.0.attn_qkv}, …, {@code output});
     * {@code inputClips}: each group's static input range as a fraction of its calibrated maximum.
     */
    SmoothedModel(Checkpoint base, CalibrationStats stats, SmoothingRule rule, Map<String, Float> alphas, Map<String, Float> inputClips) {
        this.base = base;
        this.stats = stats;
        this.rule = rule;
        for (GroupStats g : stats.groups()) {
            Float a = alphas.get(g.name());
            if (a == null) throw new IllegalArgumentException("no α for group " + g.name());
            if (!(a >= 0 && a <= 1)) throw new IllegalArgumentException(g.name() + ": α " + a + " outside [0, 1]");
            Float c = inputClips.get(g.name());
            if (c == null) throw new IllegalArgumentException("no input clip for group " + g.name());
            if (!(c > 0 && c <= 1)) throw new IllegalArgumentException(g.name() + ": input clip " + c + " outside (0, 1]");
        }
        this.alphas = Map.copyOf(alphas);
        this.inputClips = Map.copyOf(inputClips);
        this.config = base.config().withTiedEmbeddings(false);
    }

    public CalibrationStats stats() { return stats; }

    public SmoothingRule rule() { return rule; }

    /** α of the group {@code kind} belongs to (its input's smoothing exponent). */
    public float alpha(TensorKind kind, int layer) {
        return alpha(stats.group(LinearGroup.of(kind), layer));
    }

    /** The static input range of the group {@code kind} belongs to, as a fraction of its calibrated max |x / f|. */
    public float inputClip(TensorKind kind, int layer) {
        return inputClips.get(stats.group(LinearGroup.of(kind), layer).name());
    }

    /** α of every group, in forward order. */
    public SequencedMap<String, Float> groupAlphas() {
        SequencedMap<String, Float> out = new LinkedHashMap<>();
        for (GroupStats g : stats.groups()) out.put(g.name(), alpha(g));
        return out;
    }

    private float alpha(GroupStats g) {
        return alphas.get(g.name());
    }

    /** Input factors f_j of a group by the rule (length: its input channels); computed once. */
    public float[] inputFactors(LinearGroup group, int layer) {
        GroupStats g = stats.group(group, layer);
        return factors.computeIfAbsent(g.name(), name -> {
            float[] bases = SmoothingFactors.bases(group, g.inputMax(), base.config());
            return switch (rule) {
                case EDGEFLOW -> SmoothingFactors.factors(bases, alpha(g));
                case SMOOTHQUANT -> SmoothingFactors.smoothQuantFactors(bases, SmoothingFactors.weightRanges(group,
                        group.members().stream().map(kind -> base.tensor(kind, g.layer()).toFloats()).toList(), g.channels(), base.config()), alpha(g));
            };
        }).clone();
    }

    /**
     * E[(x/f)·(x/f)ᵀ] of the input a smoothed layer sees (row-major D×D, read from the stats file now):
     * what GPTQ rounds W' with.
     *
     * @throws IllegalArgumentException if calibration did not record E[x·xᵀ]
     */
    public float[] inputSecondMoment(TensorKind kind, int layer) {
        LinearGroup group = LinearGroup.of(kind);
        GroupStats g = stats.group(group, layer);
        if (g.secondMoment() == null) {
            throw new IllegalArgumentException("the calibration stats hold no E[x·xᵀ] (" + g.name() + "), which GPTQ rounding needs: "
                    + "calibrate with --second-moments");
        }
        return g.secondMoment().full(inputFactors(group, layer));
    }

    /** W' of a linear layer, row-major {@code [out][in]}. */
    public float[] weights(TensorKind kind, int layer) {
        Linear l = linear(kind, layer);
        float[] w = base.tensor(kind, layer).toFloats();
        int rows = l.outputFactor.length, cols = l.inputFactors.length;
        // In place: at 70B widths a second copy of a feed-forward matrix is another gigabyte.
        for (int i = 0; i < rows; i++) {
            double rowScale = 1.0 / ((double) l.rowFold[i] * l.outputFactor[i]);
            for (int j = 0; j < cols; j++) w[i * cols + j] = (float) (w[i * cols + j] * (double) l.inputFactors[j] * rowScale);
        }
        return w;
    }

    /**
     * The original layer's weights that {@code smoothed} (a W' of this view, e.g. quantized) stands for,
     * {@code diag(r · S_O'^β) · W' · diag(1/f)}, computed in place: what runs in the unsmoothed model.
     */
    public float[] unsmoothed(TensorKind kind, int layer, float[] smoothed) {
        Linear l = linear(kind, layer);
        int rows = l.outputFactor.length, cols = l.inputFactors.length;
        if (smoothed.length != (long) rows * cols) throw new IllegalArgumentException(smoothed.length + " floats are not a " + rows + "×" + cols + " matrix");
        for (int i = 0; i < rows; i++) {
            double rowScale = (double) l.rowFold[i] * l.outputFactor[i];
            for (int j = 0; j < cols; j++) smoothed[i * cols + j] = (float) (smoothed[i * cols + j] * rowScale / l.inputFactors[j]);
        }
        return smoothed;
    }

    /** S_O'^β per output channel: the factor that belongs in the layer's per-channel dequantization scale. */
    public float[] outputFactor(TensorKind kind, int layer) {
        return linear(kind, layer).outputFactor.clone();
    }

    /** Static per-tensor input range after smoothing: max |x / f| over the calibration run. */
    public float inputRange(TensorKind kind, int layer) {
        GroupStats g = stats.group(LinearGroup.of(kind), layer);
        return SmoothingFactors.smoothedRange(g.inputMax(), inputFactors(g.group(), layer));
    }

    /** The static int8 input scale: {@link #inputRange} · {@link #inputClip} / 127 (inputs beyond it saturate). */
    public float inputScale(TensorKind kind, int layer) {
        return inputRange(kind, layer) * inputClip(kind, layer) / QuantLimits.INT8_MAX;
    }

    /** Static per-tensor range of the smoothed output {@code o / S_O'^β}: 1 unless a channel was floored. */
    public float outputRange(TensorKind kind, int layer) {
        Linear l = linear(kind, layer);
        float[] sOut = stats.outputMax(kind, layer);
        float max = 0;
        for (int i = 0; i < sOut.length; i++) max = Math.max(max, sOut[i] / l.rowFold[i] / l.outputFactor[i]);
        return max;
    }

    /** The static int8 output scale: {@link #outputRange} / 127. */
    public float outputScale(TensorKind kind, int layer) {
        return outputRange(kind, layer) / QuantLimits.INT8_MAX;
    }

    /** A norm vector with its group's input factors divided out. */
    public float[] norm(TensorKind kind, int layer) {
        LinearGroup group = switch (kind) {
            case ATTN_NORM -> LinearGroup.ATTN_QKV;
            case FFN_NORM -> LinearGroup.FFN_GATE_UP;
            case FINAL_NORM -> LinearGroup.HEAD;
            default -> throw new IllegalArgumentException(kind + " is not a norm");
        };
        float[] gain = base.tensor(kind, layer).toFloats();
        float[] f = inputFactors(group, layer);
        for (int j = 0; j < gain.length; j++) gain[j] /= f[j];
        return gain;
    }

    /** Dense float32 W' followed by the output factor: runs this view exactly like the original model. */
    public LinearWeightsFactory weightsFactory(Compute compute) {
        return (kind, layer, tensor) -> new ChannelScaledWeights(
                new DenseF32Weights(tensor.toFloats(), tensor.rows(), tensor.cols(), compute), outputFactor(kind, layer));
    }

    /** The three per-layer vectors of one linear layer. */
    private record Linear(float[] inputFactors, float[] rowFold, float[] outputFactor) {}

    private Linear linear(TensorKind kind, int layer) {
        LinearGroup group = LinearGroup.of(kind);
        float[] f = inputFactors(group, layer);
        float[] sOut = stats.outputMax(kind, layer);
        float[] rowFold = new float[sOut.length];
        java.util.Arrays.fill(rowFold, 1f);
        if (kind == TensorKind.WV) {
            float[] o = inputFactors(LinearGroup.ATTN_OUTPUT, layer);
            int headDim = base.config().headDim(), perKv = base.config().heads() / base.config().kvHeads();
            for (int e = 0; e < rowFold.length; e++) rowFold[e] = o[(e / headDim) * perKv * headDim + e % headDim];
        } else if (kind == TensorKind.W_UP) {
            rowFold = inputFactors(LinearGroup.FFN_DOWN, layer);
        }
        float[] folded = new float[sOut.length];
        for (int i = 0; i < folded.length; i++) folded[i] = sOut[i] / rowFold[i];
        float[] outputFactor = SmoothingFactors.floored(folded);
        for (int i = 0; i < outputFactor.length; i++) outputFactor[i] = (float) Math.pow(outputFactor[i], CalibrationStats.BETA);
        return new Linear(f, rowFold, outputFactor);
    }

    @Override
    public Tensor tensor(TensorKind kind, int layer) {
        String name = kind.ggufName(layer);
        return switch (kind) {
            case EMBEDDING, Q_BIAS, K_BIAS -> base.tensor(kind, layer);
            case V_BIAS -> {
                float[] b = base.tensor(kind, layer).toFloats();
                float[] fold = linear(TensorKind.WV, layer).rowFold;
                for (int i = 0; i < b.length; i++) b[i] /= fold[i];
                yield f32(name, new long[] {b.length}, b);
            }
            case ATTN_NORM, FFN_NORM, FINAL_NORM -> f32(name, new long[] {config.dim()}, norm(kind, layer));
            default -> {
                Tensor original = base.tensor(kind, layer);
                yield f32(name, original.shape(), weights(kind, layer));
            }
        };
    }

    private static Tensor f32(String name, long[] shape, float[] values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        return new Tensor(name, shape, DType.F32, MemorySegment.ofArray(b.array()));
    }

    @Override
    public Path source() { return base.source(); }

    @Override
    public String format() { return "smoothed " + base.format(); }

    /** The base config, with untied embeddings (the smoothed classifier is no longer the embedding). */
    @Override
    public ModelConfig config() { return config; }

    @Override
    public RopeConvention rope() { return base.rope(); }

    @Override
    public synchronized SequencedMap<String, Tensor> tensors() {
        if (tensors == null) {
            SequencedMap<String, Tensor> all = new LinkedHashMap<>();
            for (TensorKind kind : TensorKind.values()) {
                if (!kind.presentIn(config)) continue;
                for (int l = 0; l < (kind.perLayer() ? config.layers() : 1); l++) {
                    Tensor t = tensor(kind, l);
                    all.put(sourceName(kind, l).orElseThrow(), t);
                }
            }
            tensors = Collections.unmodifiableSequencedMap(all);
        }
        return tensors;
    }

    @Override
    public Optional<String> sourceName(TensorKind kind, int layer) {
        if (!kind.presentIn(config)) return Optional.empty();
        return Optional.of(kind == TensorKind.EMBEDDING ? base.tensor(kind, 0).name() : kind.ggufName(layer));
    }

    @Override
    public Optional<Vocabulary> vocabulary() { return base.vocabulary(); }

    @Override
    public Map<String, Object> metadata() { return base.metadata(); }

    @Override
    public void close() {}
}
