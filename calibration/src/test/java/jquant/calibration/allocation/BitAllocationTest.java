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

    @Test
    void perTensorPlanOnSmoothedWeightsIsIndependentOfThreads() throws Exception {
        CalibrationStats stats = StoriesFixture.storiesStats();
        BitAllocation.Options options = new BitAllocation.Options(5, BitAllocation.Scope.TENSOR, Metric.EXACT, true);
        try (Checkpoint c = StoriesFixture.stories260K()) {
            BitPlan plan = BitAllocation.allocate(c, stats, options, (d, n) -> {});
            assertThat(plan.tensors()).hasSize(7 * c.config().layers() + 1);
            for (TensorPlan t : plan.tensors()) {
                assertThat(t.averageBits()).as(t.name()).isEqualTo(5.0);
            }
            assertThat(plan.tensor("blk.2.ffn_up.weight").alpha()).isEqualTo((double) stats.group(LinearGroup.FFN_GATE_UP, 2).alpha(5).alpha());
            assertThat(plan.tensor("output.weight").alpha()).isEqualTo((double) stats.group(LinearGroup.HEAD, 0).alpha(5).alpha());
            ForkJoinPool single = new ForkJoinPool(1);
            try {
                BitPlan oneThread = single.submit(() -> BitAllocation.allocate(c, stats, options, (d, n) -> {})).get();
                assertThat(BitPlanJson.toBytes(oneThread)).isEqualTo(BitPlanJson.toBytes(plan));
            } finally {
                single.shutdown();
            }
            // Activation-aware: the plan on W' with E[x²] differs from the plan on the raw weights.
            BitPlan raw = BitAllocation.allocate(c, null, new BitAllocation.Options(5, BitAllocation.Scope.TENSOR, Metric.EXACT, false), (d, n) -> {});
            assertThat(raw.tensors().getFirst().alpha()).isNull();
            assertThat(raw.tensors().stream().anyMatch(t -> !java.util.Arrays.equals(t.bits(), plan.tensor(t.name()).bits()))).isTrue();
        }
    }

    @Test
    void modelScopeSpendsOneBudgetAndBadRequestsAreRefused() throws IOException {
        try (Checkpoint c = StoriesFixture.stories260K()) {
            BitPlan plan = BitAllocation.allocate(c, StoriesFixture.storiesStats(), new BitAllocation.Options(3.5, BitAllocation.Scope.MODEL,
                    Metric.APPROX, false, true, BitAllocation.Widths.GREEDY, SmoothingChoice.fixed(SmoothingRule.EDGEFLOW, 0.5f)), (d, n) -> {});
            assertThat(plan.averageBits()).isLessThanOrEqualTo(3.5).isGreaterThan(3.5 - 512.0 / plan.weights());
            assertThat(plan.tensors()).allSatisfy(t -> assertThat(t.alpha()).isEqualTo(0.5));
            // α is searched per budget: a budget calibration did not search for is refused, naming the ones it did.
            assertThatThrownBy(() -> BitAllocation.allocate(c, StoriesFixture.storiesStats(),
                    new BitAllocation.Options(3.5, BitAllocation.Scope.MODEL, Metric.APPROX, false), (d, n) -> {}))
                    .hasMessageContaining("searched α for budgets 3, 5, not for 3.5");
            // Uniform widths: every channel at the budget, whole bits only.
            BitPlan uniform = BitAllocation.allocate(c, null, new BitAllocation.Options(4, BitAllocation.Scope.TENSOR, Metric.APPROX, false, false,
                    BitAllocation.Widths.UNIFORM, SmoothingChoice.searched()), (d, n) -> {});
            assertThat(uniform.tensors()).allSatisfy(t -> assertThat(t.histogram()[3]).isEqualTo(t.rows()));
            assertThatThrownBy(() -> new BitAllocation.Options(4.5, BitAllocation.Scope.TENSOR, Metric.APPROX, false, false,
                    BitAllocation.Widths.UNIFORM, SmoothingChoice.searched())).hasMessageContaining("whole number of bits");
            assertThatThrownBy(() -> BitAllocation.allocate(c, null, new BitAllocation.Options(5, BitAllocation.Scope.TENSOR, Metric.APPROX, true), (d, n) -> {}))
                    .hasMessageContaining("needs calibration stats");
        }
        assertThatThrownBy(() -> new BitAllocation.Options(0, BitAllocation.Scope.TENSOR, Metric.APPROX, false)).hasMessageContaining("outside [1, 8]");
        assertThatThrownBy(() -> new BitAllocation.Options(8.5, BitAllocation.Scope.TENSOR, Metric.APPROX, false)).hasMessageContaining("outside [1, 8]");
    }
}
