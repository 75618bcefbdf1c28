package jquant.calibration;

import jquant.formats.Checkpoint;
import jquant.quantize.BitPlan;
import jquant.quantize.BitPlanJson;
import jquant.quantize.Metric;
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
            assertThat(plan.tensor("blk.2.ffn_up.weight").alpha()).isEqualTo((double) stats.group(LinearGroup.FFN_GATE_UP, 2).alpha());
            assertThat(plan.tensor("output.weight").alpha()).isEqualTo((double) stats.group(LinearGroup.HEAD, 0).alpha());
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
            BitPlan plan = BitAllocation.allocate(c, StoriesFixture.storiesStats(),
                    new BitAllocation.Options(3.5, BitAllocation.Scope.MODEL, Metric.APPROX, false), (d, n) -> {});
            assertThat(plan.averageBits()).isLessThanOrEqualTo(3.5).isGreaterThan(3.5 - 512.0 / plan.weights());
            assertThatThrownBy(() -> BitAllocation.allocate(c, null, new BitAllocation.Options(5, BitAllocation.Scope.TENSOR, Metric.APPROX, true), (d, n) -> {}))
                    .hasMessageContaining("needs calibration stats");
        }
        assertThatThrownBy(() -> new BitAllocation.Options(0, BitAllocation.Scope.TENSOR, Metric.APPROX, false)).hasMessageContaining("outside [1, 8]");
        assertThatThrownBy(() -> new BitAllocation.Options(8.5, BitAllocation.Scope.TENSOR, Metric.APPROX, false)).hasMessageContaining("outside [1, 8]");
    }
}
