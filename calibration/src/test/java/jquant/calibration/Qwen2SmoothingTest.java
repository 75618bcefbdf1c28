package jquant.calibration;

import jquant.formats.Architecture;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.DType;
import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;
import jquant.formats.synthetic.SyntheticHfFolder;
import jquant.runtime.Compute;
import jquant.runtime.LlamaModel;
import jquant.testsupport.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Smoothing a Qwen2 model: v_proj's rows take o_proj's input factors, so its bias must follow
 * ({@code b_v / r}); q/k biases are unchanged. The folded model computes the original logits.
 */
class Qwen2SmoothingTest {
    private static final ModelConfig QWEN2 = new ModelConfig(Architecture.QWEN2, 64, 96, 2, 4, 2, 16, 512, 128, 1000000f, null, 1e-6f, true);

    @Test
    void smoothedQwen2ComputesTheOriginalLogits(@TempDir Path dir) throws Exception {
        Path hf = dir.resolve("qwen2");
        SyntheticHfFolder.write(hf, QWEN2, null, 3, DType.F32, SharedFiles.model("stories260K-hf"), 1, 2);
        Compute compute = Compute.vector();
        try (Checkpoint c = Checkpoints.open(hf)) {
            CalibrationStats stats = Calibrator.calibrate(c, StoriesFixture.text(), new Calibrator.Options(512, 128, 64, List.of(5.0), false, 7), dir.resolve("calibration.gguf"), (d, t, s) -> {});
            int[] tokens = {1, 400, 20, 33, 71, 300, 5, 9, 250, 100, 42, 77};
            float[] original = LlamaModel.load(c).newSession(64).forward(tokens, 0);
            SmoothedModel smoothed = Smoothing.searched(c, stats, 5);
            float[] folded = LlamaModel.load(smoothed, compute, smoothed.weightsFactory(compute)).newSession(64).forward(tokens, 0);
            double diff = 0, scale = 0;
            for (int i = 0; i < original.length; i++) {
                diff = Math.max(diff, Math.abs((double) folded[i] - original[i]));
                scale = Math.max(scale, Math.abs(original[i]));
            }
            assertThat(diff / scale).as("max relative logit difference").isLessThan(1e-4);
            // the v bias was folded: it differs from the source's wherever o_proj's factor is not 1
            assertThat(smoothed.tensor(TensorKind.V_BIAS, 0).toFloats()).isNotEqualTo(c.tensor(TensorKind.V_BIAS, 0).toFloats());
            assertThat(smoothed.tensor(TensorKind.Q_BIAS, 0).toFloats()).isEqualTo(c.tensor(TensorKind.Q_BIAS, 0).toFloats());
        }
    }
}
