package jquant.pack.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.core.Memory;
import jquant.core.ProgressListener;
import jquant.formats.Checkpoint;
import jquant.formats.JsonRecords;
import jquant.formats.LlamaLayout;
import jquant.formats.ModelConfig;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;
import jquant.formats.jqw.JqwModelMetadata;
import jquant.formats.jqw.TensorEncoding;
import jquant.formats.jqw.JqwWriter;
import jquant.formats.jqw.QuantizationMetadata;
import jquant.formats.weightlet.WeightletLayout;
import jquant.quantize.BitPlan;
import jquant.quantize.BitPlanJson;
import jquant.quantize.ErrorCompensatedRounding;
import jquant.quantize.Rounding;
import jquant.quantize.SymmetricChannelQuantizer;
import jquant.quantize.SymmetricChannelQuantizer.QuantizedMatrix;
import jquant.quantize.TensorPlan;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code jquant pack}: writes a checkpoint as a jquant packed model file ({@code docs/jqw-format.md}).
 * Streams: one source tensor is decoded, quantized to its plan's per-channel widths, packed and
 * written before the next is read. The output appears only when complete ({@link JqwWriter}), and the
 * same inputs give the same bytes.
 *
 * <p>Layers in file order: {@code embedding} (token_embd), {@code layer.N} (attn_norm, attn_q, attn_k,
 * attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down), {@code head} (output_norm, and output
 * unless the embeddings are tied). Norms are always {@code f32}; the seven block matrices are always
 * {@code weightlet}; token_embd and output are {@code weightlet} unless {@link Options#keep} names them.
 *
 * <p>With {@link Options#smoothing} the file holds the smoothed model ({@link SmoothedSource}): W' in
 * place of every packed linear layer, with S_O'^β folded into its channel scales and its static input
 * and output scales and α in its attrs; folded norm gains; α per group and the stats' SHA-256 in the
 * metadata. The plan must have been allocated on the same smoothed weights (its α must match).
 *
 * <p>{@link Options#rounding}: every packed linear layer is rounded to nearest ({@link Rounding#RTN}), or
 * with GPTQ's error compensation on its smoothed input's statistics ({@link Rounding#GPTQ}, which needs
 * the smoothing and E[x·xᵀ]); the same widths and grids either way. The embedding is a lookup, not a
 * matmul, so it is always rounded to nearest. The rounding is recorded in the metadata.
 */
public final class ModelPacker {
    public static final String FORMAT = "jquant-packed-model";
    /** Metadata key of the bit plan (the plan file's JSON, verbatim), so that verify needs only the source. */
    public static final String PLAN = "plan";

    /** The tensors {@code --keep} may name, and its default: both. */
    public static final Set<TensorKind> KEEPABLE = Set.of(TensorKind.EMBEDDING, TensorKind.HEAD);

    /**
     * How a kept tensor is stored: float32, float16 (half the bytes, and rounding to 11 significant bits
     * is far below what any plan's widths lose), 8-bit weightlets with one float32 scale per row (a
     * quarter of float32; runs weight-only, {@link TensorEncoding#KEPT}), or the smaller of the last two.
     */
    public enum KeepType {
        f32, f16, q8,
        /**
         * q8 where its rows take fewer bytes than f16's, else f16: the default. A q8 row is a byte a weight
         * (its last stripe of 16 padded) and a scale, so only rows of a few weights are smaller in f16. Kept
         * as q8, tinystories-6M's embedding and head free a tenth of a 3-bit file for the blocks at no
         * measurable cost in KL divergence (bench/RESULTS.md, issue 28).
         */
        auto;

        /** The type a kept {@code rows × cols} matrix is stored as: this one, or for {@link #auto} the smaller of q8 and f16. */
        public KeepType of(int rows, int cols) {
            if (this != auto) return this;
            long q8Row = WeightletLayout.channelBytes(WeightletLayout.MAX_BITS, cols) + Float.BYTES;
            return q8Row < 2L * cols ? q8 : f16;
        }

        /** The keep type named {@code name}, or an error listing the names. */
        public static KeepType parse(String name) {
            try {
                return valueOf(name);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("unknown keep type '" + name + "' (" + java.util.Arrays.toString(values()) + ")");
            }
        }
    }

    private ModelPacker() {}

    /**
     * What to pack with.
     *
     * @param plan      per-channel widths of every tensor packed as weightlets
     * @param keep      which of token_embd / output stay out of the plan (a subset of {@link #KEEPABLE})
     * @param keepType  how the kept ones are stored
     * @param smoothing the source after calibration's smoothing, or null to pack the raw weights (the
     *                  file then has no static activation scales and cannot run in the NPU mode)
     * @param rounding  how the planned tensors' weights are rounded onto their grids (GPTQ needs {@code smoothing})
     */
    public record Options(BitPlan plan, Set<TensorKind> keep, KeepType keepType, SmoothedSource smoothing, Rounding rounding) {
        public Options {
            keep = keep.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(keep));
            if (!KEEPABLE.containsAll(keep)) throw new IllegalArgumentException("only token_embd and output can be kept out of the plan, not " + keep);
            if (keepType == null) throw new IllegalArgumentException("no keep type");
            if (rounding.compensated() && smoothing == null) {
                throw new IllegalArgumentException("GPTQ rounding needs calibration stats (E[x·xᵀ] of every layer's input): pack with --stats");
            }
        }

        /** Rounded to nearest. */
        public Options(BitPlan plan, Set<TensorKind> keep, KeepType keepType, SmoothedSource smoothing) {
            this(plan, keep, keepType, smoothing, Rounding.RTN);
        }

        /** Kept tensors stored as {@link KeepType#auto} says, rounded to nearest. */
        public Options(BitPlan plan, Set<TensorKind> keep, SmoothedSource smoothing) {
            this(plan, keep, KeepType.auto, smoothing);
        }

        /**
         * Whether the classifier's group is smoothed: only when it is packed. A float32 classifier runs
         * dense, where smoothing buys nothing, so it and output_norm stay as the source has them (and a
         * tied embedding stays tied).
         */
        boolean smoothsHead() {
            return smoothing != null && !keep.contains(TensorKind.HEAD);
        }

        /** Whether {@code kind}'s tensor comes from the smoothed view: linear layers, their norms, not the embedding. */
        boolean smooths(TensorKind kind) {
            if (smoothing == null) return false;
            return switch (kind) {
                case EMBEDDING -> false;
                case FINAL_NORM, HEAD -> smoothsHead();
                default -> true;
            };
        }
    }

    /** One tensor of the file: its role and block. */
    record Entry(TensorKind kind, int layer) {
        String name() {
            return kind.canonicalName(layer);
        }
    }

    /** One contiguous layer of the file. */
    record Stage(String name, List<Entry> entries) {}

    /** The file's layers and their tensors, in file order. */
    static List<Stage> stages(ModelConfig c) {
        List<Stage> stages = new ArrayList<>();
        stages.add(new Stage("embedding", List.of(new Entry(TensorKind.EMBEDDING, 0))));
        TensorKind[] block = {TensorKind.ATTN_NORM, TensorKind.WQ, TensorKind.WK, TensorKind.WV, TensorKind.Q_BIAS, TensorKind.K_BIAS,
                TensorKind.V_BIAS, TensorKind.WO, TensorKind.FFN_NORM, TensorKind.W_GATE, TensorKind.W_UP, TensorKind.W_DOWN};
        for (int l = 0; l < c.layers(); l++) {
            List<Entry> entries = new ArrayList<>();
            for (TensorKind k : block) if (k.presentIn(c)) entries.add(new Entry(k, l));
            stages.add(new Stage("layer." + l, entries));
        }
        List<Entry> head = new ArrayList<>(List.of(new Entry(TensorKind.FINAL_NORM, 0)));
        if (!c.tiedEmbeddings()) head.add(new Entry(TensorKind.HEAD, 0));
        stages.add(new Stage("head", head));
        return stages;
    }

    /**
     * The config the file records: the source's, untied when smoothing separates the classifier from
     * the embedding (the embedding is a lookup of the original rows; the classifier multiplies by W').
     */
    static ModelConfig fileConfig(ModelConfig c, Options options) {
        if (!c.tiedEmbeddings() || !options.smoothsHead()) return c;
        return c.withTiedEmbeddings(false);
    }

    /**
     * Heap that packing (or verifying) {@code source} needs at its largest tensor, about: the tensor in
     * float32 twice (as computed, and as the rounding reads it), its codes, and with GPTQ its input's
     * E[x·xᵀ] and the inverse factor, D² floats each (3.3 GB each at D = 28,672). One tensor at a time:
     * the figure does not grow with the number of layers.
     */
    public static long memoryNeeded(ModelConfig c, Options options) {
        long need = 0;
        for (Stage s : stages(fileConfig(c, options))) {
            for (Entry e : s.entries()) {
                long[] shape = LlamaLayout.expectedShape(e.kind(), c);
                if (shape.length < 2) continue;
                long weights = shape[0] * shape[1];
                long bytes = 2 * weights * Float.BYTES + weights;
                if (!isFloat(e.kind(), options) && options.rounding().compensated() && e.kind() != TensorKind.EMBEDDING) {
                    bytes += 2 * shape[1] * shape[1] * Float.BYTES;
                }
                need = Math.max(need, bytes);
            }
        }
        return need;
    }

    /**
     * Refuses, before any work, a pack or verify the JVM's heap cannot hold ({@link #memoryNeeded}), saying
     * how much it needs and how to give it.
     */
    public static void requireMemory(Checkpoint source, Options options) {
        long need = memoryNeeded(source.config(), options);
        if (need > Memory.heap()) {
            throw new IllegalArgumentException(String.format("packing %s%s needs about %s of memory for its largest tensor, more than the JVM's heap (%s): "
                            + "give it more with %s=-Xmx%dg", source.source().getFileName(), options.rounding().compensated() ? " with GPTQ rounding" : "",
                    Memory.format(need), Memory.format(Memory.heap()), Memory.JAVA_OPTS, Memory.gibibytesFor(need)));
        }
    }

    /** Packs {@code source} into {@code out}; with {@link Options#smoothing}, its smoothed weights; {@code listener} is told after each tensor is written, with its name. */
    public static void pack(Checkpoint source, Options options, Path out, ProgressListener listener) throws IOException {
        requireMemory(source, options);
        ModelConfig c = fileConfig(source.config(), options);
        Vocabulary vocabulary = source.vocabulary().orElseThrow(() -> new IllegalArgumentException(
                source.source() + ": no tokenizer found; a packed file must carry one (pass --tokenizer)"));
        checkKeep(c, options.keep());
        checkWholeFile(options);
        checkPlan(source, options);
        List<Stage> stages = stages(c);
        int total = stages.stream().mapToInt(s -> s.entries().size()).sum();
        int done = 0;
        try (JqwWriter w = new JqwWriter(out)) {
            for (Stage stage : stages) {
                w.beginLayer(stage.name());
                for (Entry e : stage.entries()) {
                    TensorEncoding.Parts parts = encode(source, e, options);
                    Tensor t = source.tensor(e.kind(), e.layer());
                    w.addTensor(e.name(), parts.encoding(), t.shape(), parts.bytes(), attrs(e, parts, options));
                    listener.update(++done, total, e.name());
                    // The model is read once, in file order: its resident pages need not outlive the tensor.
                    t.unload();
                }
                Memory.layerDone(Float.BYTES * c.layerWeights());
            }
            w.finish(metadata(source, c, vocabulary, options));
        }
    }

    /** The parts tensor {@code e} gets from {@code source} under {@code options}: what pack writes and verify expects. */
    static TensorEncoding.Parts encode(Checkpoint source, Entry e, Options options) {
        boolean smoothed = options.smooths(e.kind());
        if (isFloat(e.kind(), options)) {
            Tensor t = (smoothed ? options.smoothing().smoothed() : source).tensor(e.kind(), e.layer());
            if (!KEEPABLE.contains(e.kind())) return TensorEncoding.f32(t.toFloats());
            return switch (options.keepType().of(t.rows(), t.cols())) {
                case f32 -> TensorEncoding.f32(t.toFloats());
                case f16 -> TensorEncoding.f16(t.toFloats());
                case q8 -> {
                    byte[] eight = new byte[t.rows()];
                    java.util.Arrays.fill(eight, (byte) 8);
                    yield weightlet(SymmetricChannelQuantizer.quantize(t.toFloats(), t.rows(), t.cols(), eight), null);
                }
                case auto -> throw new IllegalStateException("auto resolves to q8 or f16");
            };
        }
        Tensor t = source.tensor(e.kind(), e.layer());
        TensorPlan p = planFor(options.plan(), e, source);
        if (p.rows() != t.rows() || p.cols() != t.cols()) {
            throw new IllegalArgumentException("the plan's " + p.name() + " is " + p.rows() + "×" + p.cols() + " but the model's "
                    + e.name() + " is " + t.rows() + "×" + t.cols());
        }
        float[] outputFactor = smoothed ? options.smoothing().outputFactor(e.kind(), e.layer()) : null;
        // The Hessian first, then W': at 70B widths each is gigabytes, and neither needs the other's transients.
        ErrorCompensatedRounding.Hessian hessian = options.rounding().compensated() && e.kind() != TensorKind.EMBEDDING
                ? options.smoothing().hessian(e.kind(), e.layer(), options.rounding()) : null;
        float[] weights = smoothed ? options.smoothing().weights(e.kind(), e.layer()) : t.toFloats();
        QuantizedMatrix q = hessian != null
                ? ErrorCompensatedRounding.quantize(weights, t.rows(), t.cols(), p.bits(), hessian)
                : SymmetricChannelQuantizer.quantize(weights, t.rows(), t.cols(), p.bits());
        return weightlet(q, outputFactor);
    }

    /** Packs a quantized matrix, channel r's scale multiplied by {@code outputFactor[r]} (smoothing's S_O'^β) unless it is null. */
    static TensorEncoding.Parts weightlet(QuantizedMatrix q, float[] outputFactor) {
        float[] scales = q.scales();
        if (outputFactor != null) {
            if (outputFactor.length != q.rows()) {
                throw new IllegalArgumentException(q.rows() + " channels but " + outputFactor.length + " output factors");
            }
            for (int r = 0; r < q.rows(); r++) scales[r] *= outputFactor[r];
        }
        return TensorEncoding.weightlet(q.rows(), q.cols(), q.bits(), q.values(), scales);
    }

    static boolean isFloat(TensorKind kind, Options options) {
        return !(kind.isBlockLinear() || KEEPABLE.contains(kind)) || options.keep().contains(kind);
    }

    /**
     * A smoothed, packed linear layer records its static int8 input and output scales and its group's α.
     * (Only smoothed files have them; a packed embedding is then a lookup, never the classifier.)
     */
    static Map<String, Object> attrs(Entry e, TensorEncoding.Parts parts, Options options) {
        Map<String, Object> attrs = new LinkedHashMap<>();
        if (parts.encoding().equals(TensorEncoding.WEIGHTLET) && options.keep().contains(e.kind())) {
            attrs.put(TensorEncoding.KEPT, KeepType.q8.name());
            return attrs;
        }
        if (!parts.encoding().equals(TensorEncoding.WEIGHTLET) || !options.smooths(e.kind())) return attrs;
        SmoothedSource s = options.smoothing();
        attrs.put(TensorEncoding.INPUT_SCALE, (double) s.inputScale(e.kind(), e.layer()));
        attrs.put(TensorEncoding.OUTPUT_SCALE, (double) s.outputScale(e.kind(), e.layer()));
        attrs.put(TensorEncoding.ALPHA, (double) s.alpha(e.kind(), e.layer()));
        return attrs;
    }

    /** The plan entry of a tensor: named canonically ({@code blk.0.attn_q}), with {@code .weight}, or as the source names it. */
    static TensorPlan planFor(BitPlan plan, Entry e, Checkpoint source) {
        for (String name : candidateNames(e, source)) {
            for (TensorPlan p : plan.tensors()) if (p.name().equals(name)) return p;
        }
        throw new IllegalArgumentException("the plan has no entry for " + e.name() + " (looked for " + candidateNames(e, source) + ")");
    }

    private static List<String> candidateNames(Entry e, Checkpoint source) {
        List<String> names = new ArrayList<>(List.of(e.name(), e.name() + ".weight"));
        source.sourceName(e.kind(), e.layer()).filter(n -> !names.contains(n)).ifPresent(names::add);
        return names;
    }

    /**
     * The tensors a whole-file plan keeps in float16 ({@link BitPlan.WholeFile#float16}): the allocator chose
     * the embedding's and the classifier's encodings, so the pack keeps exactly those, in float16.
     */
    public static Set<TensorKind> wholeFileKeep(BitPlan plan) {
        Set<TensorKind> keep = EnumSet.noneOf(TensorKind.class);
        for (String name : plan.wholeFile().float16()) {
            TensorKind kind = KEEPABLE.stream().filter(k -> k.canonicalName(0).equals(name)).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("the plan keeps " + name + " in float16, which is not token_embd or output"));
            keep.add(kind);
        }
        return keep;
    }

    /** A whole-file plan is packed with the encodings it chose, else the file would not be the size it counted. */
    private static void checkWholeFile(Options options) {
        if (options.plan().wholeFile() == null) return;
        Set<TensorKind> keep = wholeFileKeep(options.plan());
        if (!options.keep().equals(keep) || !keep.isEmpty() && options.keepType() != KeepType.f16) {
            throw new IllegalArgumentException("the plan's budget counts the whole file and chose the embedding's and classifier's encodings "
                    + (keep.isEmpty() ? "(both in the plan)" : "(" + plan16(options.plan()) + " in float16)") + ": pack it without --keep and --keep-type");
        }
    }

    private static String plan16(BitPlan plan) {
        return String.join(" and ", plan.wholeFile().float16());
    }

    private static void checkKeep(ModelConfig c, Set<TensorKind> keep) {
        if (c.tiedEmbeddings() && keep.contains(TensorKind.EMBEDDING) != keep.contains(TensorKind.HEAD)) {
            throw new IllegalArgumentException("the embeddings are tied (token_embd is also the classifier): keep both or neither");
        }
    }

    /**
     * Every plan entry must be a tensor of this model, so a plan for another model fails loudly; and
     * the plan must have been allocated the way it is packed: on W' of these very stats (each tensor's
     * α is its group's), or on the raw weights (no α).
     */
    private static void checkPlan(Checkpoint source, Options options) {
        Set<String> known = new HashSet<>();
        for (Stage s : stages(fileConfig(source.config(), options))) {
            for (Entry e : s.entries()) {
                known.addAll(candidateNames(e, source));
                if (!isFloat(e.kind(), options)) checkAlpha(planFor(options.plan(), e, source), e, options);
            }
        }
        if (source.config().tiedEmbeddings()) known.addAll(candidateNames(new Entry(TensorKind.HEAD, 0), source));
        for (TensorPlan p : options.plan().tensors()) {
            if (!known.contains(p.name())) throw new IllegalArgumentException("the plan's tensor " + p.name() + " is not in " + source.source());
        }
    }

    private static void checkAlpha(TensorPlan p, Entry e, Options options) {
        if (options.smoothing() == null) {
            if (p.alpha() != null) {
                throw new IllegalArgumentException("the plan was allocated on smoothed weights (" + p.name() + " has α " + p.alpha()
                        + "): pack it with the same calibration stats (--stats), or allocate a plan without --stats");
            }
        } else if (options.smooths(e.kind())) {
            double alpha = options.smoothing().alpha(e.kind(), e.layer());
            if (p.alpha() == null) {
                throw new IllegalArgumentException("the plan was allocated on the raw weights (" + p.name() + " has no α) but the pack "
                        + "applies calibration stats: allocate the plan with the same --stats, or pack without --stats");
            }
            if (options.plan().smoothing() != options.smoothing().rule()) {
                throw new IllegalArgumentException("the plan was allocated with " + options.plan().smoothing().label() + "'s smoothing but is packed with "
                        + options.smoothing().rule().label() + "'s");
            }
            if (p.alpha() != alpha) {
                throw new IllegalArgumentException("the plan's " + p.name() + " was allocated with α " + p.alpha() + " but these calibration "
                        + "stats choose α " + alpha + ": the plan was allocated with other stats");
            }
        }
    }

    private static ObjectNode metadata(Checkpoint source, ModelConfig config, Vocabulary vocabulary, Options options) {
        ObjectMapper json = new ObjectMapper();
        ObjectNode meta = json.createObjectNode();
        meta.put("format", FORMAT);
        JqwModelMetadata.put(meta, config, source.rope(), vocabulary);
        List<String> keep = new ArrayList<>();
        for (TensorKind k : TensorKind.values()) if (options.keep().contains(k)) keep.add(k.canonicalName(0));
        QuantizationMetadata.Smoothing smoothing = null;
        if (options.smoothing() != null) {
            SmoothedSource s = options.smoothing();
            Map<String, Double> alphas = new LinkedHashMap<>();
            s.groupAlphas().forEach((group, alpha) -> alphas.put(group, (double) alpha));
            smoothing = new QuantizationMetadata.Smoothing(s.modelFingerprint(), s.statsSha256(), options.smoothsHead(), s.rule().label(), alphas);
        }
        meta.set(QuantizationMetadata.SECTION, JsonRecords.MAPPER.valueToTree(new QuantizationMetadata(options.plan().budget(), options.plan().averageBits(),
                keep, options.keepType().name(), options.smoothing() != null, options.rounding().label(), smoothing)));
        try {
            meta.set(PLAN, json.readTree(BitPlanJson.toBytes(options.plan())));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return meta;
    }
}
