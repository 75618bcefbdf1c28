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
                .isEqualTo(new BitAllocation.Options(3, BitAllocation.Scope.MODEL, Metric.EXACT, true, true, BitAllocation.Widths.UNIFORM, fixed, null, false));
        assertThat(BitAllocation.Options.fileBudget(9.5).scope(BitAllocation.Scope.MODEL))
                .isEqualTo(new BitAllocation.Options(9.5, BitAllocation.Scope.MODEL, Metric.APPROX, false, false, BitAllocation.Widths.GREEDY,
                        SmoothingChoice.searched(), null, true));
        assertThat(BitAllocation.Options.fileBudget(9.5).alphaBudget()).isEqualTo(8);
        assertThatThrownBy(() -> BitAllocation.Options.budget(9.5)).hasMessageContaining("outside [1, 8]");
        assertThatThrownBy(() -> BitAllocation.Options.fileBudget(16.5)).hasMessageContaining("outside [1, 16]");
        assertThat(BitAllocation.Options.budget(3).weighted(true).scope(BitAllocation.Scope.MODEL))
                .isEqualTo(new BitAllocation.Options(3, BitAllocation.Scope.MODEL, Metric.APPROX, true, false, BitAllocation.Widths.GREEDY,
                        SmoothingChoice.searched(), null, false));
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
        BitAllocation.Options best = BitAllocation.Options.best(BitAllocation.Options.budget(5), stats, 256);
        BitAllocation.Options explicit = BitAllocation.Options.budget(5).scope(BitAllocation.Scope.MODEL).outputWeighted(true)
                .sensitivity(BitAllocation.Sensitivity.ofText(StoriesFixture.text(), 256));
        try (Checkpoint c = StoriesFixture.stories260K()) {
            assertThat(best.sensitivity().tokenIds(c)).isEqualTo(explicit.sensitivity().tokenIds(c));
            assertThat(BitPlanJson.toBytes(BitAllocation.allocate(c, stats, best, (d, n, name) -> {})))
                    .isEqualTo(BitPlanJson.toBytes(BitAllocation.allocate(c, stats, explicit, (d, n, name) -> {})));
        }
        assertThatThrownBy(() -> BitAllocation.Options.best(BitAllocation.Options.budget(5), stats, CalibrationStats.PROBE_TOKENS + 1)).hasMessageContaining("fewer than the 513 asked");
        CalibrationStats older = new CalibrationStats(stats.fingerprint(), stats.model(), stats.tokens(), stats.sampleTokens(), stats.budgets(),
                stats.groups(), stats.outputMax(), null, stats.source());
        assertThatThrownBy(() -> BitAllocation.Options.best(BitAllocation.Options.budget(5), older, 128)).hasMessageContaining("no sample for the loss probe");
    }

    /**
     * A whole-file budget counts every byte of the packed tensors over every weight of the model, as llama.cpp's
     * bits per weight do: the plan covers the embedding and classifier too, the bytes it counts are the bytes pack
     * writes, they stay under the budget and fill it to within a channel; with budget enough, the allocator keeps
     * the embedding and classifier in float16.
     */
    @Test
    void wholeFileBudgetCountsTheBytesPackWrites(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        CalibrationStats stats = StoriesFixture.storiesStats();
        try (Checkpoint c = StoriesFixture.stories260K()) {
            long weights = 0;
            // llama2.c's RoPE tables are not weights; the classifier is tied, so the embedding counts once
            for (var t : c.tensors().entrySet()) if (!t.getKey().startsWith("freq_cis")) weights += t.getValue().elements();
            assertThat(c.config().tiedEmbeddings()).isTrue();
            BitAllocation.Options whole = BitAllocation.Options.fileBudget(5).scope(BitAllocation.Scope.MODEL).outputWeighted(true);
            BitPlan plan = BitAllocation.allocate(c, stats, whole, (d, n, name) -> {});
            assertThat(plan.tensors()).extracting(TensorPlan::name).contains("token_embd.weight", "output.weight");
            assertThat(plan.tensor("token_embd.weight").alpha()).isNull();
            assertThat(plan.wholeFile().weights()).isEqualTo(weights);
            assertThat(plan.wholeFile().float16()).isEmpty();
            assertThat(8.0 * plan.wholeFile().bytes()).isLessThanOrEqualTo(5.0 * weights).isGreaterThan(5.0 * weights - 8 * 64);
            assertThat(BitPlanJson.fromBytes(BitPlanJson.toBytes(plan))).isEqualTo(plan);
            assertThat(packedTensorBytes(c, stats, plan, dir.resolve("five.jqw"))).isEqualTo(plan.wholeFile().bytes());

            // every channel at 8 bits leaves room at 15: the tied pair goes to float16, one tensor in place of two
            BitAllocation.Options wide = BitAllocation.Options.fileBudget(15).scope(BitAllocation.Scope.MODEL).outputWeighted(true)
                    .smoothing(SmoothingChoice.fixed(SmoothingRule.EDGEFLOW, 0.5f));
            BitPlan f16 = BitAllocation.allocate(c, stats, wide, (d, n, name) -> {});
            assertThat(f16.wholeFile().float16()).containsExactlyInAnyOrder("output", "token_embd");
            assertThat(f16.tensors()).extracting(TensorPlan::name).doesNotContain("token_embd.weight", "output.weight");
            assertThat(f16.averageBits()).isEqualTo(8);
            assertThat(packedTensorBytes(c, stats, f16, dir.resolve("wide.jqw"))).isEqualTo(f16.wholeFile().bytes());

            assertThatThrownBy(() -> BitAllocation.allocate(c, stats, BitAllocation.Options.fileBudget(1.5).scope(BitAllocation.Scope.MODEL)
                    .smoothing(SmoothingChoice.fixed(SmoothingRule.EDGEFLOW, 0.5f)), (d, n, name) -> {}))
                    .hasMessageContaining("less than the file's smallest");
            assertThatThrownBy(() -> BitAllocation.allocate(c, stats, BitAllocation.Options.fileBudget(5), (d, n, name) -> {}))
                    .hasMessageContaining("needs greedy widths at model scope");
            assertThatThrownBy(() -> BitAllocation.allocate(c, null, whole.outputWeighted(false), (d, n, name) -> {}))
                    .hasMessageContaining("and calibration stats");
        }
    }

    /** The bytes of the tensors of {@code plan} packed (as pack packs a whole-file plan) into {@code file}, checked by verify. */
    private static long packedTensorBytes(Checkpoint c, CalibrationStats stats, BitPlan plan, java.nio.file.Path file) throws Exception {
        jquant.calibration.StatsSmoothing smoothing = jquant.calibration.StatsSmoothing.of(c, stats, plan);
        jquant.pack.model.ModelPacker.pack(c, new jquant.pack.model.ModelPacker.Options(plan, jquant.pack.model.ModelPacker.wholeFileKeep(plan),
                jquant.pack.model.ModelPacker.KeepType.f16, smoothing), file, (d, n, name) -> {});
        assertThat(jquant.pack.model.PackedModelVerifier.verify(file, c, smoothing, (d, n, name) -> {}).problems()).as("verify").isEmpty();
        assertThatThrownBy(() -> jquant.pack.model.ModelPacker.pack(c, new jquant.pack.model.ModelPacker.Options(plan, jquant.pack.model.ModelPacker.KEEPABLE,
                jquant.pack.model.ModelPacker.KeepType.q8, smoothing), file.resolveSibling("kept.jqw"), (d, n, name) -> {}))
                .hasMessageContaining("pack it without --keep and --keep-type");
        try (jquant.formats.jqw.JqwFile f = jquant.formats.jqw.JqwFile.open(file)) {
            return jquant.pack.model.PackedFileReport.describe(f).tensors().stream().mapToLong(jquant.pack.model.PackedFileReport.TensorRow::bytes).sum();
        }
    }
}
