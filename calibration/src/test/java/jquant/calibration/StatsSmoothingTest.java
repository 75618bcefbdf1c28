package jquant.calibration;

import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.jqw.JqwFile;
import jquant.pack.model.ModelPacker;
import jquant.quantize.Metric;
import jquant.runtime.Compute;
import jquant.runtime.LlamaModel;
import jquant.runtime.PackedModelLoader;
import jquant.runtime.Perplexity;
import jquant.runtime.Tokenizer;
import jquant.testsupport.Slow;
import jquant.testsupport.Stories260K;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** Calibration's smoothing through the packer and the NPU runtime: what the stats → pack bridge is for. */
@Slow
class StatsSmoothingTest {

    /**
     * EdgeFlow's claim for smoothing, on stories260K: W8A8 with the chosen α is closer to fp32 (mean KL
     * divergence over a text the calibration did not see) than W8A8 with α = 0, same stats, same static
     * per-tensor scales computed the same way.
     */
    @Test
    void smoothedW8A8IsCloserToFloatThanUnsmoothed(@TempDir Path dir) throws Exception {
        String text = Stories260K.text();
        try (Checkpoint c = Checkpoints.open(Stories260K.model(), Stories260K.tokenizer())) {
            CalibrationStats chosen = Calibrator.calibrate(c, text.substring(0, 20000), new Calibrator.Options(2048, 256, 256, 5, 7), (s, d, t) -> {});
            CalibrationStats none = new CalibrationStats(chosen.fingerprint(), chosen.model(), chosen.tokens(), chosen.sampleTokens(), chosen.referenceBits(),
                    chosen.groups().stream().map(g -> new GroupStats(g.group(), g.layer(), g.inputMax(), g.inputMeanSquare(), 0f, g.unsmoothedError(),
                            g.unsmoothedError())).toList(), chosen.outputMax());
            Tokenizer tokenizer = Tokenizer.of(c.vocabulary().orElseThrow());
            int[] tokens = tokenizer.encode(text.substring(20000, 24000));
            LlamaModel fp32 = LlamaModel.load(c);
            double[] kl = new double[2];
            CalibrationStats[] variants = {chosen, none};
            for (int i = 0; i < 2; i++) {
                StatsSmoothing smoothing = new StatsSmoothing(Smoothing.apply(c, variants[i]), Integer.toString(i).repeat(64));
                var plan = BitAllocation.allocate(c, variants[i], new BitAllocation.Options(8, BitAllocation.Scope.TENSOR, Metric.APPROX, false), (d, n) -> {});
                Path f = dir.resolve(i + ".jqw");
                ModelPacker.pack(c, new ModelPacker.Options(plan, ModelPacker.KEEPABLE, smoothing), f, (d, n, name) -> {});
                try (JqwFile j = JqwFile.open(f)) {
                    LlamaModel npu = PackedModelLoader.load(j, Compute.vector(), PackedModelLoader.Mode.NPU);
                    kl[i] = new Perplexity(256).compare(npu, fp32, tokens, c.vocabulary().orElseThrow().bos(), (d, n, p) -> {}).meanKl();
                }
            }
            System.out.printf("stories260K W8A8 mean KLD vs fp32: smoothed %.5f, unsmoothed (α = 0) %.5f%n", kl[0], kl[1]);
            assertThat(kl[0]).isLessThan(kl[1]);
        }
    }
}
