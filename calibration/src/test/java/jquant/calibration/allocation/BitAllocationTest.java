package jquant.calibration.allocation;

import jquant.calibration.CalibrationStats;
import jquant.calibration.LinearGroup;
import jquant.calibration.StoriesFixture;
import jquant.formats.Checkpoint;
import jquant.quantize.BitPlan;
import jquant.quantize.BitPlanJson;
import jquant.quantize.Metric;
import jquant.quantize.SmoothingRule;
import jquant.quantize.TensorPlan;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.concurrent.ForkJoinPool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Slow
class BitAllocationTest {

    /** Each named method sets its own component and keeps the others. */
    @Test
    void namedConstructionSetsEachComponent() {
        SmoothingChoice fixed = SmoothingChoice.fixed(SmoothingRule.SMOOTHQUANT, 0.5f);
        assertThat(BitAllocation.Options.budget(3).scope(BitAllocation.Scope.MODEL).metric(Metric.EXACT).weighted(true).outputWeighted(true)
                .widths(BitAllocation.Widths.UNIFORM).smoothing(fixed))
                .isEqualTo(new BitAllocation.Options(3, BitAllocation.Scope.MODEL, Metric.EXACT, true, true, BitAllocation.Widths.UNIFORM, fixed, null));
        assertThat(BitAllocation.Options.budget(3).weighted(true).scope(BitAllocation.Scope.MODEL))
                .isEqualTo(new BitAllocation.Options(3, BitAllocation.Scope.MODEL, Metric.APPROX, true, false, BitAllocation.Widths.GREEDY,
                        SmoothingChoice.searched(), null));
    }

    @Test
    void perTensorPlanOnSmoothedWeightsIsIndependentOfThreads() throws Exception {
        CalibrationStats stats = StoriesFixture.storiesStats();
        BitAllocation.Options options = BitAllocation.Options.budget(5).metric(Metric.EXACT).weighted(true);
        try (Checkpoint c = StoriesFixture.stories260K()) {
            BitPlan plan = BitAllocation.allocate(c, stats, options, (d, n, name) -> {});
            assertThat(plan.tensors()).hasSize(7 * c.config().layers() + 1);
            for (TensorPlan t : plan.tensors()) {
                assertThat(t.averageBits()).as(t.name()).isEqualTo(5.0);
            }
            assertThat(plan.tensor("blk.2.ffn_up.weight").alpha()).isEqualTo((double) stats.group(LinearGroup.FFN_GATE_UP, 2).alpha(5).alpha());
            assertThat(plan.tensor("output.weight").alpha()).isEqualTo((double) stats.group(LinearGroup.HEAD, 0).alpha(5).alpha());
            ForkJoinPool single = new ForkJoinPool(1);
            try {
                BitPlan oneThread = single.submit(() -> BitAllocation.allocate(c, stats, options, (d, n, name) -> {})).get();
                assertThat(BitPlanJson.toBytes(oneThread)).isEqualTo(BitPlanJson.toBytes(plan));
            } finally {
                single.shutdown();
            }
            // Activation-aware: the plan on W' with E[x²] differs from the plan on the raw weights.
            BitPlan raw = BitAllocation.allocate(c, null, BitAllocation.Options.budget(5).metric(Metric.EXACT), (d, n, name) -> {});
            assertThat(raw.tensors().getFirst().alpha()).isNull();
            assertThat(raw.tensors().stream().anyMatch(t -> !java.util.Arrays.equals(t.bits(), plan.tensor(t.name()).bits()))).isTrue();
        }
    }

    @Test
    void modelScopeSpendsOneBudgetAndBadRequestsAreRefused() throws IOException {
        try (Checkpoint c = StoriesFixture.stories260K()) {
            BitPlan plan = BitAllocation.allocate(c, StoriesFixture.storiesStats(), BitAllocation.Options.budget(3.5).scope(BitAllocation.Scope.MODEL)
                    .outputWeighted(true).smoothing(SmoothingChoice.fixed(SmoothingRule.EDGEFLOW, 0.5f)), (d, n, name) -> {});
            assertThat(plan.averageBits()).isLessThanOrEqualTo(3.5).isGreaterThan(3.5 - 512.0 / plan.weights());
            assertThat(plan.tensors()).allSatisfy(t -> assertThat(t.alpha()).isEqualTo(0.5));
            // α is searched per budget: a budget calibration did not search for is refused, naming the ones it did.
            assertThatThrownBy(() -> BitAllocation.allocate(c, StoriesFixture.storiesStats(),
                    BitAllocation.Options.budget(3.5).scope(BitAllocation.Scope.MODEL), (d, n, name) -> {}))
                    .hasMessageContaining("searched α for budgets 3, 5, not for 3.5");
            // Uniform widths: every channel at the budget, whole bits only.
            BitPlan uniform = BitAllocation.allocate(c, null, BitAllocation.Options.budget(4).widths(BitAllocation.Widths.UNIFORM), (d, n, name) -> {});
            assertThat(uniform.tensors()).allSatisfy(t -> assertThat(t.histogram()[3]).isEqualTo(t.rows()));
            assertThatThrownBy(() -> BitAllocation.Options.budget(4.5).widths(BitAllocation.Widths.UNIFORM)).hasMessageContaining("whole number of bits");
            assertThatThrownBy(() -> BitAllocation.allocate(c, null, BitAllocation.Options.budget(5).weighted(true), (d, n, name) -> {}))
                    .hasMessageContaining("needs calibration stats");
        }
        assertThatThrownBy(() -> BitAllocation.Options.budget(0)).hasMessageContaining("outside [1, 8]");
        assertThatThrownBy(() -> BitAllocation.Options.budget(8.5)).hasMessageContaining("outside [1, 8]");
    }

    /**
     * With the loss sensitivity the model-scope plan spends the same budget, moves bits between tensors,
     * is the same bytes on one thread; without it the plan is the one the options always gave.
     */
    @Test
    void lossSensitivityReweighsTensorsDeterministically() throws Exception {
        CalibrationStats stats = StoriesFixture.storiesStats();
        BitAllocation.Options ours = BitAllocation.Options.budget(5).scope(BitAllocation.Scope.MODEL).outputWeighted(true);
        BitAllocation.Options sensitive = ours.sensitivity(BitAllocation.Sensitivity.ofText(StoriesFixture.text(), 256));
        try (Checkpoint c = StoriesFixture.stories260K()) {
            BitPlan plain = BitAllocation.allocate(c, stats, ours, (d, n, name) -> {});
            assertThat(BitPlanJson.toBytes(BitAllocation.allocate(c, stats, ours.sensitivity(null), (d, n, name) -> {}))).isEqualTo(BitPlanJson.toBytes(plain));
            BitPlan plan = BitAllocation.allocate(c, stats, sensitive, (d, n, name) -> {});
            assertThat(plan.averageBits()).isLessThanOrEqualTo(5).isGreaterThan(5 - 512.0 / plan.weights());
            assertThat(plan.tensors().stream().filter(t -> !java.util.Arrays.equals(t.bits(), plain.tensor(t.name()).bits())).count()).isGreaterThan(10);
            // the classifier keeps its own budget, untouched by the block matrices' sensitivities
            assertThat(plan.tensor("output.weight").bits()).isEqualTo(plain.tensor("output.weight").bits());
            ForkJoinPool single = new ForkJoinPool(1);
            try {
                BitPlan oneThread = single.submit(() -> BitAllocation.allocate(c, stats, sensitive, (d, n, name) -> {})).get();
                assertThat(BitPlanJson.toBytes(oneThread)).isEqualTo(BitPlanJson.toBytes(plan));
            } finally {
                single.shutdown();
            }
            assertThatThrownBy(() -> BitAllocation.allocate(c, stats, BitAllocation.Options.budget(5).sensitivity(sensitive.sensitivity()), (d, n, name) -> {}))
                    .hasMessageContaining("needs greedy widths at model scope");
        }
        assertThatThrownBy(() -> BitAllocation.Sensitivity.ofText(" ", 128)).hasMessageContaining("empty");
        assertThatThrownBy(() -> BitAllocation.Sensitivity.ofText("text", 1)).hasMessageContaining("at least 2 tokens");
        assertThatThrownBy(() -> BitAllocation.Sensitivity.ofTokens(new int[] {1, 2, 3}, 4)).hasMessageContaining("has 3 tokens, fewer than the 4 asked");
    }

    /**
     * The best plan probes the calibration's recorded sample: the same tokens as the text it came from, so the
     * same plan bytes as the explicit options with that text; stats without a sample cannot give it.
     */
    @Test
    void bestPlanProbesTheRecordedSampleAsTheTextWouldBe() throws Exception {
        CalibrationStats stats = StoriesFixture.storiesStats();
        BitAllocation.Options best = BitAllocation.Options.best(5, stats, 256);
        BitAllocation.Options explicit = BitAllocation.Options.budget(5).scope(BitAllocation.Scope.MODEL).outputWeighted(true)
                .sensitivity(BitAllocation.Sensitivity.ofText(StoriesFixture.text(), 256));
        try (Checkpoint c = StoriesFixture.stories260K()) {
            assertThat(best.sensitivity().tokenIds(c)).isEqualTo(explicit.sensitivity().tokenIds(c));
            assertThat(BitPlanJson.toBytes(BitAllocation.allocate(c, stats, best, (d, n, name) -> {})))
                    .isEqualTo(BitPlanJson.toBytes(BitAllocation.allocate(c, stats, explicit, (d, n, name) -> {})));
        }
        assertThatThrownBy(() -> BitAllocation.Options.best(5, stats, CalibrationStats.PROBE_TOKENS + 1)).hasMessageContaining("fewer than the 513 asked");
        CalibrationStats older = new CalibrationStats(stats.fingerprint(), stats.model(), stats.tokens(), stats.sampleTokens(), stats.budgets(),
                stats.groups(), stats.outputMax(), null, stats.source());
        assertThatThrownBy(() -> BitAllocation.Options.best(5, older, 128)).hasMessageContaining("no sample for the loss probe");
    }
}
