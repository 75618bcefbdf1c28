package jquant.pack.model;

import jquant.core.Memory;
import jquant.formats.jqw.TensorEncoding;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jquant.core.ProgressListener;
import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwLayer;
import jquant.formats.jqw.JqwModelMetadata;
import jquant.formats.jqw.JqwTensor;
import jquant.formats.jqw.QuantizationMetadata;
import jquant.formats.weightlet.PackedTensor;
import jquant.quantize.BitPlan;
import jquant.quantize.BitPlanJson;
import jquant.quantize.Rounding;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code jquant verify}: recomputes every tensor of a packed file from its source checkpoint, the
 * plan and keep rule recorded in the file and, for a file packed with calibration stats, the same
 * stats (recorded by SHA-256; other stats, or none, are refused before any tensor is compared), then
 * compares every byte and checks every layer checksum. Problems name the tensor, the part and (for per-channel parts) the channel of the
 * first differing byte.
 */
public final class PackedModelVerifier {

    private PackedModelVerifier() {}

    /** The outcome: {@link #ok()} only if every byte and every checksum matched. */
    public record Report(int tensorsChecked, long bytesChecked, List<String> problems) {
        public Report {
            problems = List.copyOf(problems);
        }

        public boolean ok() {
            return problems.isEmpty();
        }
    }

    /**
     * @param smoothing the source smoothed with the calibration stats the file was packed with, or null
     *                  if it was packed without
     * @throws IllegalArgumentException if the file was packed with stats and {@code smoothing} is null or
     *                                  of other stats, or packed without and {@code smoothing} is given
     */
    public static Report verify(Path packed, Checkpoint source, SmoothedSource smoothing, ProgressListener listener) throws IOException {
        List<String> problems = new ArrayList<>();
        int tensors = 0;
        long bytes = 0;
        try (JqwFile file = JqwFile.openWithoutLayerChecksums(packed)) {
            ModelPacker.Options options = options(file, smoothing);
            ModelPacker.requireMemory(source, options);
            ModelConfig expected = ModelPacker.fileConfig(source.config(), options);
            if (!JqwModelMetadata.config(file).equals(expected)) {
                problems.add("model config differs: file " + JqwModelMetadata.config(file) + ", source " + expected);
                return new Report(0, 0, problems);
            }
            Set<String> expectedNames = new HashSet<>();
            List<ModelPacker.Stage> stages = ModelPacker.stages(expected);
            int total = stages.stream().mapToInt(s -> s.entries().size()).sum();
            for (ModelPacker.Stage stage : stages) {
                for (ModelPacker.Entry e : stage.entries()) {
                    expectedNames.add(e.name());
                    JqwTensor t = file.tensors().get(e.name());
                    String problem = t == null ? e.name() + ": missing from the file" : compare(file, t, stage, ModelPacker.encode(source, e, options));
                    if (problem != null) problems.add(problem);
                    tensors++;
                    if (t != null) for (long[] r : t.parts().values()) bytes += r[1];
                    listener.update(tensors, total, e.name());
                    source.tensor(e.kind(), e.layer()).unload();
                }
                file.unload();
                Memory.layerDone(Float.BYTES * expected.layerWeights());
            }
            for (String name : file.tensors().keySet()) {
                if (!expectedNames.contains(name)) problems.add(name + ": not a tensor of this model");
            }
            for (JqwLayer l : file.layers()) {
                if (!file.layerChecksumMatches(l)) problems.add("layer " + l.name() + ": checksum mismatch");
                file.unload();
            }
        }
        return new Report(tensors, bytes, problems);
    }

    /** The options the file was packed with, from its metadata, with the smoothing it records checked against {@code smoothing}. */
    static ModelPacker.Options options(JqwFile file, SmoothedSource smoothing) throws CheckpointException {
        BitPlan plan = plan(file);
        QuantizationMetadata q = QuantizationMetadata.of(file);
        Set<TensorKind> keep = EnumSet.noneOf(TensorKind.class);
        for (String k : q.keep()) {
            keep.add(Arrays.stream(TensorKind.values()).filter(kind -> kind.canonicalName(0).equals(k)).findFirst()
                    .orElseThrow(() -> new CheckpointException(file.path(), "unknown kept tensor \"" + k + "\"")));
        }
        ModelPacker.KeepType keepType;
        Rounding rounding;
        try {
            keepType = ModelPacker.KeepType.parse(q.keepTypeLabel());
            rounding = Rounding.of(q.roundingLabel());
            // .jqw version 1 files were written when jquant's gptq took the columns in their own order
            if (rounding == Rounding.GPTQ && file.version() == 1) rounding = Rounding.GPTQ_COLUMNS;
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(file.path(), e.getMessage());
        }
        return new ModelPacker.Options(plan, keep, keepType, checkedSmoothing(file, q, smoothing), rounding);
    }

    /**
     * The bit plan a packed file records: what {@code verify} smooths the source with (the plan's rule
     * and α) before it recomputes the bytes.
     */
    public static BitPlan recordedPlan(Path packed) throws IOException {
        try (JqwFile file = JqwFile.openWithoutLayerChecksums(packed)) {
            return plan(file);
        }
    }

    static BitPlan plan(JqwFile file) throws CheckpointException {
        JsonNode planNode = file.metadata().get(ModelPacker.PLAN);
        if (planNode == null) throw new CheckpointException(file.path(), "metadata has no bit plan");
        try {
            return BitPlanJson.fromBytes(new ObjectMapper().writeValueAsBytes(planNode));
        } catch (IOException | IllegalArgumentException e) {
            throw new CheckpointException(file.path(), "its bit plan is not valid: " + e.getMessage());
        }
    }

    /** {@code smoothing} if it is what the file records (its stats' SHA-256), or null if the file records none. */
    private static SmoothedSource checkedSmoothing(JqwFile file, QuantizationMetadata q, SmoothedSource smoothing) {
        QuantizationMetadata.Smoothing recorded = q.smoothing();
        if (recorded == null) {
            if (smoothing != null) {
                throw new IllegalArgumentException(file.path() + " was packed without calibration stats: verify it without --stats");
            }
            return null;
        }
        String sha = recorded.statsSha256();
        if (smoothing == null) {
            throw new IllegalArgumentException(file.path() + " was packed with calibration stats (SHA-256 " + sha
                    + "): verify needs the same stats file (--stats)");
        }
        if (!smoothing.statsSha256().equals(sha)) {
            throw new IllegalArgumentException("the calibration stats given (SHA-256 " + smoothing.statsSha256() + ") are not those "
                    + file.path() + " was packed with (SHA-256 " + sha + ")");
        }
        return smoothing;
    }

    /** Null if the file's tensor is exactly the expected one, else where the first difference is. */
    private static String compare(JqwFile file, JqwTensor t, ModelPacker.Stage stage, TensorEncoding.Parts expected) {
        if (!t.encoding().equals(expected.encoding())) {
            return t.name() + ": encoding " + t.encoding() + ", expected " + expected.encoding();
        }
        if (!file.layers().stream().filter(l -> l.name().equals(stage.name())).findFirst()
                .map(l -> l.tensors().stream().anyMatch(x -> x.name().equals(t.name()))).orElse(false)) {
            return t.name() + ": not in layer " + stage.name();
        }
        if (!t.parts().keySet().equals(expected.bytes().keySet())) {
            return t.name() + ": parts " + t.parts().keySet() + ", expected " + expected.bytes().keySet();
        }
        for (Map.Entry<String, ByteBuffer> p : expected.bytes().entrySet()) {
            MemorySegment actual = file.part(t, p.getKey());
            if (file.version() == 1 && t.encoding().equals(TensorEncoding.WEIGHTLET) && p.getKey().equals(TensorEncoding.DATA)) {
                actual = TensorEncoding.readWeightlet(file, t).packed().data();   // as read: version 1 padded short rows
            }
            MemorySegment want = MemorySegment.ofBuffer(p.getValue());
            if (actual.byteSize() != want.byteSize()) {
                return t.name() + ": part " + p.getKey() + " has " + actual.byteSize() + " bytes, expected " + want.byteSize();
            }
            long at = actual.mismatch(want);
            if (at >= 0) return t.name() + ": part " + p.getKey() + " differs at byte " + at + where(file, t, p.getKey(), at);
        }
        return null;
    }

    /** The channel (row) a byte offset of a part belongs to. */
    private static String where(JqwFile file, JqwTensor t, String part, long at) {
        int cols = (int) t.shape()[t.shape().length - 1];
        return switch (t.encoding() + "/" + part) {
            case TensorEncoding.F32 + "/" + TensorEncoding.DATA -> " (row " + at / Float.BYTES / cols + ")";
            case TensorEncoding.WEIGHTLET + "/" + TensorEncoding.SCALES -> " (channel " + at / Float.BYTES + ")";
            case TensorEncoding.WEIGHTLET + "/" + TensorEncoding.WIDTHS -> " (channel " + at * 8 / 3 + ")";
            case TensorEncoding.WEIGHTLET + "/" + TensorEncoding.DATA -> " (channel " + dataChannel(file, t, at) + ")";
            default -> "";
        };
    }

    private static String dataChannel(JqwFile file, JqwTensor t, long at) {
        try {
            PackedTensor p = TensorEncoding.readWeightlet(file, t).packed();
            int c = 0;
            while (c + 1 < p.channels() && p.channelOffset(c + 1) <= at) c++;
            return Integer.toString(c);
        } catch (IllegalArgumentException e) {
            return "unknown: " + e.getMessage();
        }
    }
}
