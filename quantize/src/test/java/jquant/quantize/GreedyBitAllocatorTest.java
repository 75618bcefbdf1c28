package jquant.quantize;

import jquant.testsupport.Stories260K;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class GreedyBitAllocatorTest {

    /** Σ_i error_i(B_i) of a plan. */
    static double objective(ErrorTable table, TensorPlan plan) {
        double sum = 0;
        for (int r = 0; r < table.rows(); r++) sum += table.error(r, plan.bits(r));
        return sum;
    }

    /**
     * The exact optimum by dynamic programming over channels × extra bits spent (the problem is
     * separable): best[k] = least error of the channels so far using k bits above 1 each.
     */
    static double dynamicProgrammingOptimum(ErrorTable table, long extraBits) {
        int rows = table.rows();
        int maxExtra = (int) Math.min(extraBits, 7L * rows);
        double[] best = new double[maxExtra + 1];
        java.util.Arrays.fill(best, Double.POSITIVE_INFINITY);
        best[0] = 0;
        for (int r = 0; r < rows; r++) {
            double[] next = new double[maxExtra + 1];
            java.util.Arrays.fill(next, Double.POSITIVE_INFINITY);
            for (int k = 0; k <= maxExtra; k++) {
                if (best[k] == Double.POSITIVE_INFINITY) continue;
                for (int extra = 0; extra <= 7 && k + extra <= maxExtra; extra++) {
                    next[k + extra] = Math.min(next[k + extra], best[k] + table.error(r, 1 + extra));
                }
            }
            best = next;
        }
        double optimum = Double.POSITIVE_INFINITY;
        for (double v : best) optimum = Math.min(optimum, v);
        return optimum;
    }

    static float[] randomMatrix(SplittableRandom random, int rows, int cols) {
        float[] m = new float[rows * cols];
        for (int r = 0; r < rows; r++) {
            // Channels of different scale and shape so that they deserve different widths.
            float[] row = random.nextBoolean() ? SymmetricChannelQuantizerTest.gaussianRow(random, cols, random.nextDouble(0.01, 1))
                    : SymmetricChannelQuantizerTest.outlierRow(random, cols);
            System.arraycopy(row, 0, m, r * cols, cols);
        }
        return m;
    }

    @Test
    void greedyReachesTheDynamicProgrammingOptimumOnRandomTensors() {
        SplittableRandom random = new SplittableRandom(31);
        int convexInstances = 0;
        double worstNonConvexGap = 0;
        for (int trial = 0; trial < 400; trial++) {
            int rows = 1 + random.nextInt(12);
            int cols = 32 + random.nextInt(97);
            Metric metric = trial % 2 == 0 ? Metric.APPROX : Metric.EXACT;
            ErrorTable table = RelativeError.table("t", randomMatrix(random, rows, cols), rows, cols, metric, null);
            if (trial % 3 == 0) table = table.weighted(random.doubles(rows, 0, 3).toArray());
            double budget = trial % 4 == 0 ? 1 + random.nextInt(8 * rows - rows + 1) / (double) rows : random.nextDouble(1, 8);
            TensorPlan plan = GreedyBitAllocator.allocate(table, budget);
            long extraBits = GreedyBitAllocator.budgetBits(budget, (long) rows * cols) / cols - rows;
            assertThat(plan.totalChannelBits()).isEqualTo(rows + Math.min(extraBits, 7L * rows));
            double optimum = dynamicProgrammingOptimum(table, extraBits);
            double greedy = objective(table, plan);
            boolean convex = true;
            for (int r = 0; r < rows; r++) convex &= table.hasDiminishingGains(r);
            if (convex) {
                assertThat(greedy).as("trial %d, budget %s", trial, budget).isCloseTo(optimum, within(1e-12 * (1 + optimum)));
                convexInstances++;
            } else {
                assertThat(metric).as("APPROX curves are always convex").isEqualTo(Metric.EXACT);
                assertThat(greedy).isGreaterThanOrEqualTo(optimum - 1e-12);
                worstNonConvexGap = Math.max(worstNonConvexGap, (greedy - optimum) / optimum);
            }
        }
        assertThat(convexInstances).as("instances where the exactness proof applies").isGreaterThan(300);
        // Channels with extreme outliers can have non-convex EXACT curves; hull steps keep greedy close.
        assertThat(worstNonConvexGap).as("worst relative excess over the optimum, non-convex instances").isLessThan(0.05);
    }

    @Test
    void greedyReachesTheOptimumOnArbitraryConvexCurves() {
        SplittableRandom random = new SplittableRandom(32);
        for (int trial = 0; trial < 300; trial++) {
            int rows = 1 + random.nextInt(15);
            double[] errors = new double[rows * 8];
            for (int r = 0; r < rows; r++) {
                // Gains drawn at random, sorted non-increasing (some zero, some tied): a convex curve.
                double[] gains = new double[7];
                for (int b = 0; b < 7; b++) gains[b] = random.nextInt(4) == 0 ? random.nextInt(3) : random.nextDouble(0, 10);
                java.util.Arrays.sort(gains);
                double e = 0;
                for (int b = 7; b >= 1; b--) {
                    errors[r * 8 + b] = e;
                    e += gains[7 - b];
                }
                errors[r * 8] = e;
            }
            ErrorTable table = new ErrorTable("t", rows, 10, Metric.EXACT, errors);
            double budget = 1 + random.nextInt(70 * rows + 1) / (10.0 * rows);
            TensorPlan plan = GreedyBitAllocator.allocate(table, budget);
            double optimum = dynamicProgrammingOptimum(table, GreedyBitAllocator.budgetBits(budget, rows * 10L) / 10 - rows);
            assertThat(objective(table, plan)).as("trial %d", trial).isCloseTo(optimum, within(1e-9));
        }
    }

    @Test
    void budgetIsNeverExceededAndMissedByLessThanOneChannel() {
        SplittableRandom random = new SplittableRandom(33);
        for (int trial = 0; trial < 100; trial++) {
            List<ErrorTable> tables = new ArrayList<>();
            int count = 1 + random.nextInt(5);
            int longest = 0;
            for (int t = 0; t < count; t++) {
                int rows = 1 + random.nextInt(20), cols = 8 + random.nextInt(200);
                longest = Math.max(longest, cols);
                tables.add(RelativeError.table("t" + t, randomMatrix(random, rows, cols), rows, cols, Metric.APPROX, null));
            }
            double budget = random.nextDouble(1, 8);
            BitPlan plan = GreedyBitAllocator.allocate(tables, budget);
            long spent = Math.round(plan.averageBits() * plan.weights());
            assertThat(plan.averageBits()).isLessThanOrEqualTo(budget);
            assertThat(budget * plan.weights() - spent).as("shortfall in bits").isLessThan(longest);
        }
    }

    @Test
    void modelWideAllocationOfEqualLengthTensorsIsOptimalOverAllOfThem() {
        SplittableRandom random = new SplittableRandom(34);
        for (int trial = 0; trial < 50; trial++) {
            int cols = 64;
            int rowsA = 1 + random.nextInt(8), rowsB = 1 + random.nextInt(8);
            float[] a = randomMatrix(random, rowsA, cols), b = randomMatrix(random, rowsB, cols);
            ErrorTable tableA = RelativeError.table("a", a, rowsA, cols, Metric.EXACT, null);
            ErrorTable tableB = RelativeError.table("b", b, rowsB, cols, Metric.EXACT, null);
            float[] both = new float[a.length + b.length];
            System.arraycopy(a, 0, both, 0, a.length);
            System.arraycopy(b, 0, both, a.length, b.length);
            ErrorTable joint = RelativeError.table("ab", both, rowsA + rowsB, cols, Metric.EXACT, null);
            double budget = random.nextDouble(1, 8);
            BitPlan plan = GreedyBitAllocator.allocate(List.of(tableA, tableB), budget);
            double total = objective(tableA, plan.tensor("a")) + objective(tableB, plan.tensor("b"));
            long extra = GreedyBitAllocator.budgetBits(budget, (long) (rowsA + rowsB) * cols) / cols - rowsA - rowsB;
            assertThat(total).isCloseTo(dynamicProgrammingOptimum(joint, extra), within(1e-12));
        }
    }

    @Test
    void tiesGoToTheLowerTensorThenTheLowerRow() {
        float[] channel = SymmetricChannelQuantizerTest.gaussianRow(new SplittableRandom(35), 16, 1);
        float[] four = new float[64];
        for (int r = 0; r < 4; r++) System.arraycopy(channel, 0, four, r * 16, 16);
        ErrorTable table = RelativeError.table("same", four, 4, 16, Metric.EXACT, null);
        assertThat(GreedyBitAllocator.allocate(table, 1.5).bits()).containsExactly(2, 2, 1, 1);
        assertThat(GreedyBitAllocator.allocate(table, 2.25).bits()).containsExactly(3, 2, 2, 2);
        ErrorTable twin = RelativeError.table("twin", four, 4, 16, Metric.EXACT, null);
        BitPlan plan = GreedyBitAllocator.allocate(List.of(table, twin), 1.25);
        assertThat(plan.tensor("same").bits()).containsExactly(2, 2, 1, 1);
        assertThat(plan.tensor("twin").bits()).containsExactly(1, 1, 1, 1);
    }

    @Test
    void thePlanDoesNotDependOnTheThreadCount() throws Exception {
        float[] matrix = randomMatrix(new SplittableRandom(36), 200, 300);
        List<BitPlan> plans = new ArrayList<>();
        for (int threads : new int[] {1, 2, 7}) {
            try (ForkJoinPool pool = new ForkJoinPool(threads)) {
                plans.add(pool.submit(() -> GreedyBitAllocator.allocate(
                        List.of(RelativeError.table("w", matrix, 200, 300, Metric.EXACT, null)), 4.37)).get());
            }
        }
        assertThat(plans.get(1)).isEqualTo(plans.get(0));
        assertThat(plans.get(2)).isEqualTo(plans.get(0));
    }

    @Test
    void budgetEdgesAndBadInputs() {
        ErrorTable table = RelativeError.table("w", randomMatrix(new SplittableRandom(37), 10, 20), 10, 20, Metric.APPROX, null);
        assertThat(GreedyBitAllocator.allocate(table, 1).bits()).containsOnly(1);
        assertThat(GreedyBitAllocator.allocate(table, 8).bits()).containsOnly(8);
        assertThat(GreedyBitAllocator.allocate(table, 5.3).totalChannelBits()).as("5.3 × 10 channels").isEqualTo(53);
        assertThat(GreedyBitAllocator.allocate(table, 5.39).totalChannelBits()).isEqualTo(53);
        for (double bad : new double[] {0.99, 8.01, Double.NaN, Double.POSITIVE_INFINITY}) {
            assertThatThrownBy(() -> GreedyBitAllocator.allocate(table, bad)).hasMessageContaining("outside [1, 8]");
        }
        ErrorTable exact = RelativeError.table("x", new float[20], 1, 20, Metric.EXACT, null);
        assertThatThrownBy(() -> GreedyBitAllocator.allocate(List.of(table, exact), 4)).hasMessageContaining("not comparable");
        assertThatThrownBy(() -> GreedyBitAllocator.allocate(List.of(table, table), 4)).hasMessageContaining("given twice");
        assertThatThrownBy(() -> GreedyBitAllocator.allocate(List.of(), 4)).hasMessageContaining("no tensors");
        assertThatThrownBy(() -> table.weighted(new double[] {1, 1, 1, 1, 1, 1, 1, 1, 1, Double.NaN})).hasMessageContaining("channel 9");
    }

    /**
     * Counted in a channel's stored cost: with cost B · len it is the budgeted allocation bit for bit; with a
     * cost that rounds up to whole blocks (as a short weightlet group does) it never spends more than given,
     * takes a step that costs nothing, and stops within one step of the budget.
     */
    @Test
    void aChannelsStoredCostIsTheBudgetWhenGiven() {
        List<ErrorTable> tables = List.of(RelativeError.table("a", randomMatrix(new SplittableRandom(38), 40, 72), 40, 72, Metric.APPROX, null),
                RelativeError.table("b", randomMatrix(new SplittableRandom(39), 30, 128), 30, 128, Metric.APPROX, null));
        long weights = 40 * 72 + 30 * 128;
        assertThat(GreedyBitAllocator.allocate(tables, GreedyBitAllocator.budgetBits(4.3, weights), GreedyBitAllocator.ChannelCost.WEIGHTS))
                .isEqualTo(GreedyBitAllocator.allocate(tables, 4.3).tensors());
        // blocks of 128 bits: a channel of 72 weights at B bits takes ⌈72·B / 128⌉ blocks, so 2→3, 4→5 and 6→7 bits are free
        GreedyBitAllocator.ChannelCost blocks = (table, bits) -> 128 * ((table.cols() * (long) bits + 127) / 128);
        long available = 4 * weights;
        List<TensorPlan> plans = GreedyBitAllocator.allocate(tables, available, blocks);
        long spent = 0;
        long cheapestStep = Long.MAX_VALUE;
        for (int t = 0; t < 2; t++) {
            for (int r = 0; r < plans.get(t).rows(); r++) {
                int b = plans.get(t).bits(r);
                spent += blocks.bits(tables.get(t), b);
                if (b < 8) cheapestStep = Math.min(cheapestStep, blocks.bits(tables.get(t), b + 1) - blocks.bits(tables.get(t), b));
            }
        }
        assertThat(spent).isLessThanOrEqualTo(available).isGreaterThan(available - cheapestStep);
        for (int r = 0; r < 40; r++) assertThat(plans.get(0).bits(r)).as("a free step is always taken").isNotIn(2, 4, 6);
        assertThatThrownBy(() -> GreedyBitAllocator.allocate(tables, weights - 1, GreedyBitAllocator.ChannelCost.WEIGHTS))
                .hasMessageContaining("less than every channel at 1 bit costs");
    }

    @Test
    void onARealAttentionMatrixTheHarderChannelsGetMoreBits() throws IOException {
        Stories260K model = Stories260K.load();
        float[] wq = model.matrix(Stories260K.Matrix.WQ, 2);
        ErrorTable approx = RelativeError.table("layers.2.wq", wq, 64, 64, Metric.APPROX, null);
        // APPROX curves are scaled copies of one another (k_i · 4^−B): a channel gets a bit more than
        // another only if its k_i = max²/E[W²] is 4× larger, so at budget 5 a layer whose channels
        // are that alike gets 5 bits everywhere, and at 4.5 the half with the larger k_i gets 5.
        TensorPlan plan = GreedyBitAllocator.allocate(approx, 5);
        assertThat(plan.averageBits()).isEqualTo(5.0);
        TensorPlan half = GreedyBitAllocator.allocate(approx, 4.5);
        assertThat(half.histogram()).containsExactly(0, 0, 0, 32, 32, 0, 0, 0);
        for (TensorPlan p : List.of(plan, half)) {
            for (int i = 0; i < 64; i++) {
                for (int j = 0; j < 64; j++) {
                    if (approx.error(i, 1) > approx.error(j, 1)) assertThat(p.bits(i)).isGreaterThanOrEqualTo(p.bits(j));
                }
            }
        }
        ErrorTable exact = RelativeError.table("layers.2.wq", wq, 64, 64, Metric.EXACT, null);
        TensorPlan exactPlan = GreedyBitAllocator.allocate(exact, 5);
        assertThat(exactPlan.averageBits()).isEqualTo(5.0);
        assertThat(objective(exact, exactPlan)).isCloseTo(dynamicProgrammingOptimum(exact, 64 * 4), within(1e-15));
        double richRe = 0, poorRe = 0;
        int rich = 0, poor = 0;
        for (int r = 0; r < 64; r++) {
            if (exactPlan.bits(r) > 5) { richRe += exact.error(r, 5); rich++; }
            if (exactPlan.bits(r) < 5) { poorRe += exact.error(r, 5); poor++; }
        }
        assertThat(rich).isPositive();
        assertThat(poor).isPositive();
        assertThat(richRe / rich).as("mean 5-bit RE of channels given more than 5 bits vs fewer").isGreaterThan(2 * poorRe / poor);
        double uniform = 0;
        for (int r = 0; r < 64; r++) uniform += exact.error(r, 5);
        assertThat(objective(exact, exactPlan)).isLessThan(uniform);
    }

    @Test
    void modelWideOnTheRealModelSpendsTheBudgetAcrossTensorsOfDifferentLengths() throws IOException {
        Stories260K model = Stories260K.load();
        List<ErrorTable> tables = new ArrayList<>();
        for (int layer = 0; layer < Stories260K.LAYERS; layer++) {
            for (Stories260K.Matrix m : Stories260K.Matrix.values()) {
                tables.add(RelativeError.table(Stories260K.name(m, layer), model.matrix(m, layer), m.rows, m.cols, Metric.EXACT, null));
            }
        }
        BitPlan plan = GreedyBitAllocator.allocate(tables, 4.5);
        assertThat(plan.averageBits()).isLessThanOrEqualTo(4.5).isGreaterThan(4.5 - (double) Stories260K.HIDDEN / plan.weights());
        assertThat(plan.tensors()).extracting(TensorPlan::name).containsExactlyElementsOf(tables.stream().map(ErrorTable::name).toList());
        double[] perTensorAverages = plan.tensors().stream().mapToDouble(TensorPlan::averageBits).toArray();
        assertThat(java.util.Arrays.stream(perTensorAverages).max().getAsDouble())
                .as("some tensors are worth more bits than others")
                .isGreaterThan(java.util.Arrays.stream(perTensorAverages).min().getAsDouble() + 0.25);
    }
}
