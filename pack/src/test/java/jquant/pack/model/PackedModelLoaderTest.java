package jquant.pack.model;

import jquant.core.ProgressListener;
import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.jqw.JqwFile;
import jquant.formats.jqw.JqwLayer;
import jquant.runtime.Compute;
import jquant.runtime.DenseF32Weights;
import jquant.runtime.KernelChoice;
import jquant.runtime.LayerLoader;
import jquant.runtime.LinearWeights;
import jquant.runtime.LinearWeightsFactory;
import jquant.runtime.LlamaModel;
import jquant.runtime.LoadedModel;
import jquant.runtime.PackedModelLoader;
import jquant.runtime.Tokenizer;
import jquant.quantize.BitPlan;
import jquant.quantize.SymmetricChannelQuantizer;
import jquant.runtime.kernels.ScalarMatmulKernels;
import jquant.runtime.kernels.VectorKernels;
import jquant.core.WorkerPool;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What the runtime makes of a packed file: the logits of both run modes, and a corrupted layer never computed with. */
class PackedModelLoaderTest {
    private static final ProgressListener QUIET = (done, total, name) -> {};

    private static int[] text(Checkpoint c, int chars) throws IOException {
        String s = Files.readString(SharedFiles.data("tinystories-valid-sample.txt")).substring(0, chars);
        return Tokenizer.of(c.vocabulary().orElseThrow()).encode(s);
    }

    private static float[] logits(LlamaModel m, int[] tokens) {
        return m.newSession(tokens.length).forward(tokens, 0);
    }

    @Slow
    @Test
    void weightOnlyLogitsEqualAFloatModelOfTheDequantizedWeights(@TempDir Path dir) throws IOException {
        try (Checkpoint c = TestModels.stories260K()) {
            BitPlan plan = TestModels.plan(c, 4);
            Path f = dir.resolve("m.jqw");
            ModelPacker.pack(c, new ModelPacker.Options(plan, ModelPacker.KEEPABLE, ModelPacker.KeepType.f32, null), f, QUIET);
            Compute compute = Compute.vector();
            LinearWeightsFactory dense = LinearWeightsFactory.dense(compute);
            LlamaModel reference = LlamaModel.load(c, compute, (kind, layer, tensor) -> {
                if (!kind.isBlockLinear()) return dense.create(kind, layer, tensor);
                var q = SymmetricChannelQuantizer.quantize(tensor.toFloats(), tensor.rows(), tensor.cols(),
                        plan.tensor(kind.canonicalName(layer)).bits());
                return new DenseF32Weights(q.dequantize(), tensor.rows(), tensor.cols(), compute);
            });
            int[] tokens = text(c, 400);
            try (JqwFile j = JqwFile.open(f)) {
                LlamaModel packed = PackedModelLoader.load(j, compute, PackedModelLoader.Mode.WEIGHT_ONLY);
                float[] a = logits(packed, tokens), b = logits(reference, tokens);
                assertThat(maxAbsDifference(a, b)).isLessThanOrEqualTo(1e-5f * maxAbs(b));
            }
        }
    }

    @Slow
    @Test
    void npuModeRefusesAFileWithoutActivationScales(@TempDir Path dir) throws IOException {
        try (Checkpoint c = TestModels.stories260K()) {
            Path f = dir.resolve("m.jqw");
            ModelPacker.pack(c, new ModelPacker.Options(TestModels.plan(c, 4), ModelPacker.KEEPABLE, null), f, QUIET);
            try (JqwFile j = JqwFile.open(f)) {
                assertThatThrownBy(() -> PackedModelLoader.load(j, Compute.vector(), PackedModelLoader.Mode.NPU))
                        .isInstanceOf(CheckpointException.class)
                        .hasMessageContaining("blk.0.attn_q has no static activation scale");
            }
        }
    }

    /**
     * Smoothing at α = 0 (no factors, W' = W, output factors 1) with each linear layer's input max |x| over
     * a text as its static range: the W8A8 arithmetic on the raw weights (calibration proper lives above
     * the runtime; the smoothed case is tested in the calibration module).
     */
    private static SmoothedSource unsmoothedRanges(Checkpoint c, int[] tokens) {
        Map<String, Float> max = new HashMap<>();
        Compute compute = Compute.vector();
        LinearWeightsFactory dense = LinearWeightsFactory.dense(compute);
        LlamaModel m = LlamaModel.load(c, compute, (kind, layer, tensor) -> {
            LinearWeights w = dense.create(kind, layer, tensor);
            return new LinearWeights() {
                @Override public int inFeatures() { return w.inFeatures(); }
                @Override public int outFeatures() { return w.outFeatures(); }
                @Override public void matmul(float[] x, int n, float[] y) {
                    float r = 0;
                    for (int i = 0; i < n * w.inFeatures(); i++) r = Math.max(r, Math.abs(x[i]));
                    max.merge(kind.canonicalName(layer), r, Math::max);
                    w.matmul(x, n, y);
                }
            };
        });
        for (int from = 0; from < tokens.length; from += 256) {
            m.newSession(256).forward(Arrays.copyOfRange(tokens, from, Math.min(from + 256, tokens.length)), 0);
        }
        return new FakeSmoothing(c, row -> 1f, (kind, layer) -> max.get(kind.canonicalName(layer)) / 127f, 1f, 0f,
                new LinkedHashMap<>(), "stories260K", "0".repeat(64));
    }

    @Slow
    @Test
    void w8a8IsCloseToFloatAndTheVectorDotMatchesTheScalarOracle(@TempDir Path dir) throws IOException {
        try (Checkpoint c = TestModels.stories260K()) {
            int[] calibration = text(c, 3000);
            SmoothedSource ranges = unsmoothedRanges(c, calibration);
            Path f = dir.resolve("m.jqw");
            BitPlan plan = TestModels.plan(c, 8);
            plan = new BitPlan(plan.budget(), plan.tensors().stream().map(t -> t.withAlpha(0.0)).toList());
            ModelPacker.pack(c, new ModelPacker.Options(plan, ModelPacker.KEEPABLE, ranges), f, QUIET);
            int[] tokens = Arrays.copyOfRange(text(c, 6000), calibration.length, calibration.length + 200);
            float[] reference = logits(LlamaModel.load(c), tokens);
            try (JqwFile j = JqwFile.open(f)) {
                float[] npu = logits(PackedModelLoader.load(j, Compute.vector(), PackedModelLoader.Mode.NPU), tokens);
                Compute scalarProducts = new Compute(new VectorKernels(), new ScalarMatmulKernels(), WorkerPool.common());
                float[] oracle = logits(PackedModelLoader.load(j, scalarProducts, PackedModelLoader.Mode.NPU), tokens);
                assertThat(maxAbsDifference(npu, oracle)).isZero();
                int vocab = c.config().vocabSize(), agree = 0;
                double err = 0, norm = 0;
                for (int i = 0; i < tokens.length; i++) {
                    if (argmax(npu, i * vocab, vocab) == argmax(reference, i * vocab, vocab)) agree++;
                }
                for (int k = 0; k < npu.length; k++) {
                    err += (npu[k] - reference[k]) * (double) (npu[k] - reference[k]);
                    norm += reference[k] * (double) reference[k];
                }
                System.out.printf("W8A8 vs fp32: top-1 agreement %d/%d, relative logit error %.4f%n", agree, tokens.length, Math.sqrt(err / norm));
                assertThat(agree).isGreaterThanOrEqualTo(tokens.length * 9 / 10);
                assertThat(Math.sqrt(err / norm)).isLessThan(0.1);
            }
        }
    }

    @Test
    void aCorruptedLayerOfAPackedFileIsNeverComputedWith(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("m.jqw");
        int[] tokens;
        try (Checkpoint c = TestModels.stories260K()) {
            ModelPacker.pack(c, new ModelPacker.Options(TestModels.plan(c, 5), ModelPacker.KEEPABLE, null), file, (done, total, name) -> {});
            tokens = Tokenizer.of(c.vocabulary().orElseThrow()).encode("Once upon a time, there was a little girl");
        }
        float[] pipelined, eager;
        try (LoadedModel m = open(file, LayerLoader.Policy.PIPELINED)) {
            pipelined = m.model().newSession(tokens.length).forward(tokens, 0);
        }
        try (LoadedModel m = open(file, LayerLoader.Policy.EAGER)) {
            eager = m.model().newSession(tokens.length).forward(tokens, 0);
        }
        assertThat(pipelined).containsExactly(eager);

        JqwLayer third;
        try (JqwFile f = JqwFile.open(file)) {
            third = f.layers().get(3);
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            long at = third.offset() + third.length() / 2;
            ch.read(b, at);
            b.put(0, (byte) (b.get(0) ^ 0x10)).rewind();
            ch.write(b, at);
        }
        for (LayerLoader.Policy policy : LayerLoader.Policy.values()) {
            assertThatThrownBy(() -> {
                try (LoadedModel m = open(file, policy)) {
                    m.model().newSession(tokens.length).forward(tokens, 0);
                }
            }).as(policy.name()).hasMessageContaining("checksum mismatch in layer " + third.name());
        }
    }

    private static LoadedModel open(Path file, LayerLoader.Policy policy) throws Exception {
        return LoadedModel.open(file, null, PackedModelLoader.Mode.WEIGHT_ONLY, KernelChoice.AUTO, Compute.vector(), policy);
    }

    private static float maxAbsDifference(float[] a, float[] b) {
        assertThat(a).hasSameSizeAs(b);
        float max = 0;
        for (int i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - b[i]));
        return max;
    }

    private static float maxAbs(float[] a) {
        float max = 0;
        for (float v : a) max = Math.max(max, Math.abs(v));
        return max;
    }

    private static int argmax(float[] x, int off, int len) {
        int best = 0;
        for (int k = 1; k < len; k++) if (x[off + k] > x[off + best]) best = k;
        return best;
    }
}
