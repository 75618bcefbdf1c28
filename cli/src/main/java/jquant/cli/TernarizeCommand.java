package jquant.cli;

import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.formats.TernaryCodecs;
import jquant.formats.gguf.GgufValue;
import jquant.formats.gguf.GgufWriter;
import jquant.formats.quant.T2pShapeException;
import jquant.formats.quant.TernaryTensor;
import jquant.pack.ternary.Ternarizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * {@code jquant ternarize}: a ternary test model from a float checkpoint. Every block linear matrix
 * becomes {@code s · clip(round(W / s), −1, 1)} with one absmean scale per tensor (BitNet b1.58,
 * {@link Ternarizer}) — the explicit lossy path. A matrix whose columns fit no 128-block layout (or
 * that the chosen type cannot hold) is written in the fallback named in the report; embeddings,
 * norms and the classifier are copied unchanged, and so is every metadata key of a GGUF source.
 */
@Command(name = "ternarize", description = "Make a ternary test model (absmean, BitNet b1.58 style) from a float checkpoint, as GGUF.")
final class TernarizeCommand implements Callable<Integer> {

    @Parameters(paramLabel = "<model>", description = "Float checkpoint (llama2.c .bin, GGUF, HF folder with adjacent-pair RoPE).")
    Path model;

    @Option(names = "--out", required = true, paramLabel = "<gguf>", description = "GGUF file to write.")
    Path out;

    @Option(names = "--type", defaultValue = "pq2_0", paramLabel = "<type>",
            description = "Storage of the ternary matrices: pq2_0, tq2_0, ptq1_0, t2p, or f32 (exact s·{-1,0,+1} floats) (default: ${DEFAULT-VALUE}).")
    String type;

    @Option(names = "--tokenizer", paramLabel = "<file>", description = "llama2.c tokenizer.bin for a .bin checkpoint.")
    Path tokenizer;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        DType target = type.equals("f32") ? DType.F32 : parse(type).dtype;
        if (out.toAbsolutePath().normalize().equals(model.toAbsolutePath().normalize())) {
            throw new IllegalArgumentException("--out " + out + " would overwrite the input");
        }
        PrintWriter log = spec.commandLine().getOut();
        try (Checkpoint c = Checkpoints.open(model, tokenizer)) {
            SequencedMap<String, GgufValue> source = TernaryGguf.sourceMetadata(c);
            SequencedMap<String, Tensor> tensors = TernaryGguf.sourceTensors(c);
            Set<String> linear = TernaryGguf.blockLinearNames(c, tensors);
            List<Tensor> written = new ArrayList<>();
            List<String> ternarized = new ArrayList<>(), fallback = new ArrayList<>();
            for (Tensor t : tensors.values()) {
                if (!linear.contains(t.name())) {
                    written.add(t);
                    continue;
                }
                Result r = ternarize(t, target);
                written.add(r.tensor());
                ternarized.add(t.name());
                if (r.fallback() != null) fallback.add(t.name() + ": " + r.fallback());
                log.printf("  %-28s %-10s %s%n", t.name(), t.shapeString(), r.fallback() == null ? r.tensor().dtype() : r.tensor().dtype() + " (" + r.fallback() + ")");
            }
            SequencedMap<String, GgufValue> kv = new LinkedHashMap<>(source);
            kv.put(TernaryGguf.KEY_PREFIX + "method", GgufValue.string("absmean per tensor, BitNet b1.58 (jquant ternarize)"));
            kv.put(TernaryGguf.KEY_PREFIX + "source", GgufValue.string(String.valueOf(model.getFileName())));
            kv.put(TernaryGguf.KEY_PREFIX + "layout", GgufValue.string(type));
            kv.put(TernaryGguf.KEY_PREFIX + "ternarized", GgufValue.stringArray(ternarized));
            kv.put(TernaryGguf.KEY_PREFIX + "fallback", GgufValue.stringArray(fallback));
            TernaryGguf.requireCarried(model, source, kv);
            GgufWriter.write(out, kv, written);
            log.printf("Wrote %s: %d matrices ternarized, %d in a fallback layout%n", out, ternarized.size(), fallback.size());
        }
        log.flush();
        return 0;
    }

    static TernaryGguf.Format parse(String name) {
        try {
            return TernaryGguf.Format.valueOf(name);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown ternary type '" + name + "' (" + Arrays.toString(TernaryGguf.Format.values()) + ")");
        }
    }

    /** A ternarized tensor and, if it is not in the requested type, why. */
    record Result(Tensor tensor, String fallback) {}

    /**
     * The absmean scale is one per tensor, so the codes do not depend on the shape: the weights are
     * ternarized as rows of 128 and the result laid out in the tensor's real shape where a block
     * layout fits it, else written as exact ternary floats.
     */
    static Result ternarize(Tensor t, DType target) throws T2pShapeException {
        float[] w = t.toFloats();
        if (w.length % TernaryTensor.BLOCK != 0) {
            throw new IllegalArgumentException(t.name() + ": " + w.length + " weights are not a whole number of 128-weight rows; absmean ternarization here needs that");
        }
        TernaryTensor flat = Ternarizer.absmean(t.name(), w, w.length / TernaryTensor.BLOCK, TernaryTensor.BLOCK);
        if (target == DType.F32 || t.cols() % TernaryTensor.BLOCK != 0) {
            float[] values = flat.toFloats();
            // a byte[]-backed segment: the writer hands tensor data to a channel as a ByteBuffer
            MemorySegment bytes = MemorySegment.ofArray(new byte[4 * values.length]);
            MemorySegment.copy(values, 0, bytes, ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, values.length);
            Tensor floats = new Tensor(t.name(), t.shape(), DType.F32, bytes);
            return new Result(floats, target == DType.F32 ? null
                    : "cols " + t.cols() + " not a multiple of 128: exact ternary F32 (one scale per tensor)");
        }
        float[] scales = new float[t.rows() * (t.cols() / TernaryTensor.BLOCK)];
        Arrays.fill(scales, flat.scales()[0]);
        TernaryTensor tt = new TernaryTensor(t.name(), t.rows(), t.cols(), scales, flat.codes());
        if (target == DType.TQ2_0 && t.cols() % 256 != 0) {
            return new Result(TernaryCodecs.encode(tt, t.shape(), DType.PQ2_0), "cols " + t.cols() + " not a multiple of 256: PQ2_0");
        }
        try {
            return new Result(TernaryCodecs.encode(tt, t.shape(), target), null);
        } catch (T2pShapeException e) {
            return new Result(TernaryCodecs.encode(tt, t.shape(), DType.PQ2_0), e.getMessage() + ": PQ2_0");
        }
    }
}
