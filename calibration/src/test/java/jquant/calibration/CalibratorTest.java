package jquant.calibration;

import jquant.formats.CheckpointException;
import jquant.formats.gguf.GgufFile;
import jquant.formats.Checkpoint;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.runtime.Compute;
import jquant.runtime.DenseF32Weights;
import jquant.runtime.LinearWeights;
import jquant.runtime.LlamaModel;
import jquant.runtime.Tokenizer;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Slow
class CalibratorTest {

    @Test
    void statsBoundEveryActivationSeen() throws IOException {
        CalibrationStats stats = StoriesFixture.storiesStats();
        // An independent observer (on the same kernels) records max |x| and max |o| over the first window (512 tokens) of the same text.
        Map<String, float[]> inMax = new HashMap<>(), outMax = new HashMap<>();
        Compute compute = Compute.vector();
        try (Checkpoint c = StoriesFixture.stories260K()) {
            LlamaModel model = LlamaModel.load(c, compute, (kind, layer, tensor) -> observed(kind, layer, tensor, compute, inMax, outMax));
            int[] tokens = Arrays.copyOf(Tokenizer.of(c.vocabulary().orElseThrow()).encode(StoriesFixture.text()), 512);
            model.newSession(512).forward(tokens, 0);
            assertThat(stats.groups()).hasSize(4 * c.config().layers() + 1);
            assertThat(stats.tokens()).isEqualTo(2048);
            for (GroupStats g : stats.groups()) {
                float[] seen = inMax.get(CalibrationStats.tensorName(g.group().members().getFirst(), g.layer()));
                float[] sIn = g.inputMax(), x2 = g.inputMeanSquare();
                for (int j = 0; j < sIn.length; j++) {
                    assertThat(sIn[j]).as("%s S_I[%d]", g.name(), j).isGreaterThanOrEqualTo(seen[j]);
                    assertThat((double) x2[j]).as("%s E[x²][%d]", g.name(), j).isLessThanOrEqualTo((double) sIn[j] * sIn[j] * (1 + 1e-6))
                            .isGreaterThan(0);
                }
                assertThat(g.alphas()).extracting(GroupStats.SearchedAlpha::budget).containsExactlyElementsOf(StoriesFixture.OPTIONS.budgets());
                for (GroupStats.SearchedAlpha a : g.alphas()) {
                    assertThat(a.alpha()).isBetween(0f, 1f);
                    assertThat(a.error()).isLessThanOrEqualTo(a.unsmoothedError());
                }
                // E[x·xᵀ]: symmetric, its diagonal is E[x²] (summed in float rather than double, so to float precision).
                float[] m = g.secondMoment().full(null);
                int d = g.channels();
                for (int i = 0; i < d; i++) {
                    assertThat(m[i * d + i]).as("%s E[x_%d²]", g.name(), i).isCloseTo(x2[i], org.assertj.core.data.Percentage.withPercentage(0.01));
                    for (int j = 0; j < i; j++) assertThat(m[i * d + j]).isEqualTo(m[j * d + i]);
                }
            }
            outMax.forEach((name, seen) -> {
                float[] sOut = stats.outputMax().get(name);
                for (int i = 0; i < seen.length; i++) assertThat(sOut[i]).as("%s S_O[%d]", name, i).isGreaterThanOrEqualTo(seen[i]);
            });
            assertThat(stats.fingerprint()).isEqualTo(ModelFingerprint.of(c));
        }
    }

    private static LinearWeights observed(TensorKind kind, int layer, Tensor tensor, Compute compute,
                                          Map<String, float[]> inMax, Map<String, float[]> outMax) {
        LinearWeights dense = new DenseF32Weights(tensor.toFloats(), tensor.rows(), tensor.cols(), compute);
        float[] in = new float[tensor.cols()], out = new float[tensor.rows()];
        inMax.put(CalibrationStats.tensorName(kind, layer), in);
        outMax.put(CalibrationStats.tensorName(kind, layer), out);
        return new LinearWeights() {
            public int inFeatures() { return dense.inFeatures(); }
            public int outFeatures() { return dense.outFeatures(); }
            public void matmul(float[] x, int n, float[] y) {
                dense.matmul(x, n, y);
                for (int k = 0; k < n * in.length; k++) in[k % in.length] = Math.max(in[k % in.length], Math.abs(x[k]));
                for (int k = 0; k < n * out.length; k++) out[k % out.length] = Math.max(out[k % out.length], Math.abs(y[k]));
            }
        };
    }

    /**
     * Run one decoder layer at a time over every window, the statistics are those of whole-model forward
     * passes over the same windows (an independent recorder on the runtime's own forward), to the bit.
     */
    @Test
    void layerSequentialStatsAreTheWholeModelPassesBitForBit() throws IOException {
        CalibrationStats stats = StoriesFixture.storiesStats();
        Calibrator.Options o = StoriesFixture.OPTIONS;
        try (Checkpoint c = StoriesFixture.stories260K()) {
            Compute compute = Compute.vector();
            ActivationRecorder recorder = new ActivationRecorder(compute, o.sampleTokens(), o.seed(), o.secondMoments());
            LlamaModel model = LlamaModel.load(c, compute, recorder);
            Tokenizer tokenizer = Tokenizer.of(c.vocabulary().orElseThrow());
            int[] tokens = Arrays.copyOf(tokenizer.encode(StoriesFixture.text()), o.maxTokens());
            for (int start = 0; start < tokens.length; start += o.context()) {
                int[] window = Arrays.copyOfRange(tokens, start, Math.min(tokens.length, start + o.context()));
                if (start > 0) window[0] = tokenizer.bos();
                model.newSession(window.length).forward(window, 0);
            }
            for (GroupStats g : stats.groups()) {
                ActivationRecorder.InputStats in = recorder.take(g.group(), g.layer());
                assertThat(g.inputMax()).as(g.name()).isEqualTo(in.max);
                assertThat(g.inputMeanSquare()).as(g.name()).isEqualTo(in.meanSquare());
                assertThat(g.secondMoment().upperTriangle()).as(g.name()).isEqualTo(((SecondMoment.Held) in.meanSecondMoment()).triangle());
            }
            assertThat(stats.outputMax().keySet()).containsExactlyInAnyOrderElementsOf(recorder.outputs().keySet());
            recorder.outputs().forEach((name, sOut) -> assertThat(stats.outputMax().get(name)).as(name).isEqualTo(sOut));
        }
    }

    @Test
    void calibrationIsDeterministicAndSurvivesTheFile(@TempDir Path dir) throws IOException {
        CalibrationStats first = StoriesFixture.storiesStats();
        CalibrationStats again;
        try (Checkpoint c = StoriesFixture.stories260K()) {
            again = Calibrator.calibrate(c, StoriesFixture.text(), StoriesFixture.OPTIONS, dir.resolve("again.gguf"), (done, total, stage) -> {});
        }
        assertThat(again).isEqualTo(first);
        // the loss probe's sample: the text's first 512 token ids, as calibration ran them
        try (Checkpoint c = StoriesFixture.stories260K()) {
            int[] text = Tokenizer.of(c.vocabulary().orElseThrow()).encode(StoriesFixture.text());
            assertThat(first.probeTokens()).isEqualTo(java.util.Arrays.copyOf(text, CalibrationStats.PROBE_TOKENS));
        }
        Path file = dir.resolve("stats.gguf");
        CalibrationStatsFile.write(first, file);
        assertThat(CalibrationStatsFile.recognises(file)).isTrue();
        assertThat(CalibrationStatsFile.read(file)).isEqualTo(first);
        assertThat(CalibrationStatsFile.read(file).probeTokens()).isEqualTo(first.probeTokens());
        Path copy = dir.resolve("copy.gguf");
        CalibrationStatsFile.write(CalibrationStatsFile.read(file), copy);
        assertThat(Files.mismatch(file, copy)).isEqualTo(-1L);
    }

    @Test
    void aChangedByteFailsTheChecksum(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("stats.gguf");
        CalibrationStatsFile.write(StoriesFixture.storiesStats(), file);
        byte[] bytes = Files.readAllBytes(file);
        long dataOffset;
        try (GgufFile gguf = GgufFile.open(file)) {
            dataOffset = gguf.dataOffset();
        }
        bytes[(int) dataOffset + 5] ^= 0x10;  // one bit of the first vector: still a well-formed GGUF
        Path damaged = Files.write(dir.resolve("damaged.gguf"), bytes);
        assertThatThrownBy(() -> CalibrationStatsFile.read(damaged)).isInstanceOf(CheckpointException.class)
                .hasMessageContainingAll("damaged.gguf", "checksum mismatch");
    }

    @Test
    void aModelIsNotAStatsFile() throws IOException {
        Path model = SharedFiles.model("stories260K-f32.gguf");
        assertThat(CalibrationStatsFile.recognises(model)).isFalse();
        assertThatThrownBy(() -> CalibrationStatsFile.read(model)).isInstanceOf(CheckpointException.class)
                .hasMessageContaining("not a calibration stats file");
        assertThatThrownBy(() -> CalibrationStatsFile.read(model.resolveSibling("missing.gguf"))).isInstanceOf(IOException.class)
                .hasMessageContaining("missing.gguf");
    }
}
