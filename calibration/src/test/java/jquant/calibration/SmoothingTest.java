package jquant.calibration;

import jquant.calibration.allocation.SmoothingChoice;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.TensorKind;
import jquant.quantize.SmoothingRule;
import jquant.runtime.Compute;
import jquant.runtime.LinearWeightsFactory;
import jquant.runtime.LlamaModel;
import jquant.runtime.Tokenizer;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Slow
class SmoothingTest {

    /** Logits of the first 64 tokens of the calibration text. */
    private static float[] logits(LlamaModel model, Checkpoint c) throws IOException {
        int[] tokens = Arrays.copyOf(Tokenizer.of(c.vocabulary().orElseThrow()).encode(StoriesFixture.text()), 64);
        return model.newSession(64).forward(tokens, 0);
    }

    /** max |a − b| / max |b|. */
    private static double relativeDifference(float[] a, float[] b) {
        double diff = 0, scale = 0;
        for (int i = 0; i < a.length; i++) {
            diff = Math.max(diff, Math.abs((double) a[i] - b[i]));
            scale = Math.max(scale, Math.abs(b[i]));
        }
        return diff / scale;
    }

    /** One α for every group, under {@code rule}. */
    private static SmoothedModel fixed(Checkpoint c, CalibrationStats stats, SmoothingRule rule, float alpha) {
        return Smoothing.apply(c, stats, rule, SmoothingChoice.fixed(rule, alpha).alphas(stats, 5));
    }

    @Test
    void smoothedModelComputesTheOriginalLogits() throws IOException {
        CalibrationStats chosen = StoriesFixture.storiesStats();
        Compute compute = Compute.vector();
        try (Checkpoint c = StoriesFixture.stories260K()) {
            float[] original = logits(LlamaModel.load(c), c);
            for (SmoothedModel smoothed : List.of(Smoothing.searched(c, chosen, 5), Smoothing.searched(c, chosen, 3),
                    fixed(c, chosen, SmoothingRule.EDGEFLOW, 1f), fixed(c, chosen, SmoothingRule.EDGEFLOW, 0.5f), fixed(c, chosen, SmoothingRule.SMOOTHQUANT, 0.5f))) {
                float[] folded = logits(LlamaModel.load(smoothed, compute, smoothed.weightsFactory(compute)), c);
                assertThat(relativeDifference(folded, original)).as("max relative logit difference").isLessThan(1e-4);
                // The check can fail: the same folded weights without their output factors are another model.
                float[] unscaled = logits(LlamaModel.load(smoothed, compute, LinearWeightsFactory.dense(compute)), c);
                assertThat(relativeDifference(unscaled, original)).isGreaterThan(1e-2);
            }
        }
    }

    @Test
    void smoothingMovesTheInputRangeIntoTheWeights() throws IOException {
        CalibrationStats stats = StoriesFixture.storiesStats();
        try (Checkpoint c = StoriesFixture.stories260K()) {
            SmoothedModel smoothed = fixed(c, stats, SmoothingRule.EDGEFLOW, 1f);
            for (int layer = 0; layer < c.config().layers(); layer++) {
                // At α = 1 every untied input channel's range becomes 1 (x / S_I); o_proj's tied channels stay ≤ 1.
                assertThat(smoothed.inputRange(TensorKind.WQ, layer)).isCloseTo(1f, org.assertj.core.data.Offset.offset(1e-6f));
                assertThat(smoothed.inputRange(TensorKind.WO, layer)).isLessThanOrEqualTo(1f + 1e-6f);
                assertThat(smoothed.outputRange(TensorKind.W_DOWN, layer)).isCloseTo(1f, org.assertj.core.data.Offset.offset(1e-6f));
                assertThat(smoothed.inputScale(TensorKind.W_GATE, layer)).isEqualTo(smoothed.inputRange(TensorKind.W_GATE, layer) / 127f);
            }
            // GQA: o_proj columns of the two query heads that share a kv head carry the same factor.
            float[] f = smoothed.inputFactors(LinearGroup.ATTN_OUTPUT, 0);
            int headDim = c.config().headDim();
            for (int d = 0; d < headDim; d++) assertThat(f[d]).isEqualTo(f[headDim + d]);
        }
    }

    /** SmoothQuant's α = 0.5 balances the two ranges: each input channel's max |x/f| equals its max |W·f| over the group's layers. */
    @Test
    void smoothQuantAtOneHalfEqualisesActivationAndWeightRanges() throws IOException {
        CalibrationStats stats = StoriesFixture.storiesStats();
        try (Checkpoint c = StoriesFixture.stories260K()) {
            SmoothedModel smoothed = fixed(c, stats, SmoothingRule.SMOOTHQUANT, 0.5f);
            for (int layer = 0; layer < c.config().layers(); layer++) {
                float[] f = smoothed.inputFactors(LinearGroup.FFN_GATE_UP, layer);
                float[] sIn = stats.group(LinearGroup.FFN_GATE_UP, layer).inputMax();
                float[] gate = c.tensor(TensorKind.W_GATE, layer).toFloats(), up = c.tensor(TensorKind.W_UP, layer).toFloats();
                for (int j = 0; j < f.length; j++) {
                    double w = 0;
                    for (int i = j; i < gate.length; i += f.length) w = Math.max(w, Math.max(Math.abs(gate[i]), Math.abs(up[i])));
                    assertThat(sIn[j] / f[j]).as("layer %d channel %d", layer, j).isCloseTo((float) (w * f[j]), org.assertj.core.data.Percentage.withPercentage(1e-3));
                }
            }
        }
    }

    @Test
    void statsFromAnotherModelAreRefused() throws IOException {
        CalibrationStats stats = StoriesFixture.storiesStats();
        try (Checkpoint other = Checkpoints.open(SharedFiles.model("stories260K-Q8_0.gguf"))) {
            assertThatThrownBy(() -> Smoothing.searched(other, stats, 5))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("another model").hasMessageContaining("stories260K.bin");
        }
    }
}
