package jquant.formats.synthetic;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.stream.IntStream;
import jquant.formats.Checkpoint;
import jquant.formats.DType;
import jquant.formats.LlamaLayout;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.Vocabulary;

/**
 * A {@link SyntheticLlama} as a checkpoint held in native memory: matrices in the chosen float type,
 * norms in float32, canonical names ({@code blk.0.attn_q.weight}), adjacent-pair RoPE, in llama.cpp's
 * tensor order. What the benchmark model is made of before it is written to a file; the weights are
 * generated once, on all cores, each tensor from its own seed, so the bytes do not depend on the
 * thread count.
 */
public final class SyntheticCheckpoint implements Checkpoint {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Path source;
    private final ModelConfig config;
    private final Vocabulary vocabulary;
    private final Arena arena = Arena.ofShared();
    private final SequencedMap<String, Tensor> tensors = new LinkedHashMap<>();

    /** Generates every tensor of {@code model}; matrices stored as {@code matrixType} (F32, F16 or BF16). */
    public SyntheticCheckpoint(Path source, SyntheticLlama model, DType matrixType, Vocabulary vocabulary) {
        if (matrixType != DType.F32 && matrixType != DType.F16 && matrixType != DType.BF16) {
            throw new IllegalArgumentException("synthetic matrices are F32, F16 or BF16, not " + matrixType);
        }
        this.source = source;
        this.config = model.config();
        this.vocabulary = vocabulary;
        List<Object[]> roles = new ArrayList<>();
        roles.add(new Object[] {TensorKind.EMBEDDING, 0});
        for (int l = 0; l < config.layers(); l++) {
            for (TensorKind kind : TensorKind.values()) if (kind.perLayer() && kind.presentIn(config)) roles.add(new Object[] {kind, l});
        }
        roles.add(new Object[] {TensorKind.FINAL_NORM, 0});
        if (!config.tiedEmbeddings()) roles.add(new Object[] {TensorKind.HEAD, 0});
        Tensor[] made = new Tensor[roles.size()];
        IntStream.range(0, roles.size()).parallel().forEach(i -> {
            TensorKind kind = (TensorKind) roles.get(i)[0];
            int layer = (Integer) roles.get(i)[1];
            made[i] = tensor(kind, layer, model.weights(kind, layer), kind == TensorKind.ATTN_NORM || kind == TensorKind.FFN_NORM
                    || kind == TensorKind.FINAL_NORM || kind.isBias() ? DType.F32 : matrixType);
        });
        for (Tensor t : made) tensors.put(t.name(), t);
    }

    private Tensor tensor(TensorKind kind, int layer, float[] w, DType type) {
        long[] shape = LlamaLayout.expectedShape(kind, config);
        MemorySegment data = arena.allocate(type.byteSize(w.length, shape[shape.length - 1]), 64);
        for (int i = 0; i < w.length; i++) {
            switch (type) {
                case F32 -> data.set(F32, 4L * i, w[i]);
                case F16 -> data.set(I16, 2L * i, Float.floatToFloat16(w[i]));
                default -> data.set(I16, 2L * i, (short) (Float.floatToRawIntBits(w[i]) + 0x7FFF + (Float.floatToRawIntBits(w[i]) >> 16 & 1) >>> 16));
            }
        }
        return new Tensor(kind.ggufName(layer), shape, type, data);
    }

    @Override public Path source() { return source; }

    @Override public String format() { return "synthetic"; }

    @Override public ModelConfig config() { return config; }

    @Override public RopeConvention rope() { return RopeConvention.ADJACENT_PAIRS; }

    @Override public SequencedMap<String, Tensor> tensors() { return tensors; }

    @Override
    public Optional<String> sourceName(TensorKind kind, int layer) {
        String name = kind.ggufName(layer);
        return tensors.containsKey(name) ? Optional.of(name) : Optional.empty();
    }

    @Override public Optional<Vocabulary> vocabulary() { return Optional.ofNullable(vocabulary); }

    @Override public Map<String, Object> metadata() { return Map.of("seeded", "synthetic"); }

    @Override
    public void close() {
        arena.close();
    }
}
