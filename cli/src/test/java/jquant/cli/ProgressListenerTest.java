package jquant.cli;

import jquant.calibration.CalibrationStats;
import jquant.calibration.Calibrator;
import jquant.calibration.StatsSmoothing;
import jquant.calibration.allocation.BitAllocation;
import jquant.core.ProgressListener;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.pack.model.ModelPacker;
import jquant.pack.model.PackedModelVerifier;
import jquant.quantize.BitPlan;
import jquant.reports.Evaluation;
import jquant.testsupport.Slow;
import jquant.testsupport.Stories260K;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Calibrate, allocate, pack, verify and eval tell one listener shape their progress, each counting up to its total. */
@Slow
class ProgressListenerTest {

    /** What one stage told: every update, in order. */
    private static final class Recorder implements ProgressListener {
        final List<long[]> counts = new ArrayList<>();
        final List<String> wheres = new ArrayList<>();

        @Override
        public void update(long done, long total, String where) {
            counts.add(new long[] {done, total});
            wheres.add(where);
        }

        void assertCountsUpToItsTotal() {
            assertThat(counts).isNotEmpty();
            long total = counts.getLast()[1], before = 0;
            for (long[] c : counts) {
                assertThat(c[1]).isEqualTo(total);
                assertThat(c[0]).isBetween(before, total);
                before = c[0];
            }
            assertThat(counts.getLast()[0]).isEqualTo(total).isPositive();
        }
    }

    @Test
    void everyStageTellsTheSameShape(@TempDir Path dir) throws Exception {
        Recorder calibrate = new Recorder(), allocate = new Recorder(), pack = new Recorder(), verify = new Recorder(), eval = new Recorder();
        Path statsFile = dir.resolve("stats.gguf"), packed = dir.resolve("m.jqw"), text = dir.resolve("eval.txt");
        Files.writeString(text, Stories260K.text().substring(0, 4000));
        try (Checkpoint c = Checkpoints.open(Stories260K.model(), Stories260K.tokenizer())) {
            CalibrationStats stats = Calibrator.calibrate(c, Stories260K.text().substring(4000, 12000),
                    new Calibrator.Options(512, 256, 128, List.of(4.0), false, 7), statsFile, calibrate);
            BitPlan plan = BitAllocation.allocate(c, stats, BitAllocation.Options.budget(4), allocate);
            StatsSmoothing smoothing = StatsSmoothing.of(c, stats, plan);
            ModelPacker.pack(c, new ModelPacker.Options(plan, ModelPacker.KEEPABLE, smoothing), packed, pack);
            assertThat(PackedModelVerifier.verify(packed, c, smoothing, verify).ok()).isTrue();
            Evaluation.run(Evaluation.Request.of(packed, text).ctx(64).base(Stories260K.model()).tokenizer(Stories260K.tokenizer()), eval);
        }
        for (Recorder r : List.of(calibrate, allocate, pack, verify, eval)) r.assertCountsUpToItsTotal();
        assertThat(calibrate.wheres.getLast()).isEqualTo("classifier");
        assertThat(allocate.wheres).hasSize(7 * Stories260K.LAYERS + 1).startsWith("blk.0.attn_q.weight").endsWith("output.weight");
        assertThat(pack.wheres).anyMatch(w -> w.startsWith("blk.0.attn_q"));
        assertThat(eval.counts.getFirst()[0]).as("told before the first window").isZero();
    }
}
