package jquant.quantize;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Per-channel bit widths under an average budget: EdgeFlow Algorithm 1 with a max-heap
 * ({@link ChannelHeap}: a primitive-array binary heap, same order as a PriorityQueue with the tie-break below).
 *
 * <pre>
 *  B_i ← 1 for every channel;  remaining ← ⌊budget · N⌋ − N          (N = weights in scope)
 *  heap ← every channel i with its best step: k_i ∈ 1..8−B_i maximising the gain per bit
 *         g_i = (E_i(B_i) − E_i(B_i + k)) / k, keyed by g_i / len_i      (ties: smallest k)
 *  while remaining ≥ shortest channel and heap not empty:
 *      i ← pop max key                            (ties: lower tensor index, then lower row)
 *      if k_i · len_i > remaining: re-push i with its best step among those that fit (drop i if none)
 *      else B_i ← B_i + k_i;  remaining ← remaining − k_i · len_i;  if B_i &lt; 8: re-push i
 * </pre>
 *
 * <b>Convex curves: exactly Algorithm 1.</b> When a channel's gains E(B) − E(B+1) are
 * non-negative and non-increasing ({@link ErrorTable#hasDiminishingGains}), the best step is always
 * k = 1 and this is the paper's loop: pop the largest gain, add one bit, re-push. Within one tensor
 * it is then exactly optimal for the separable objective Σ_i E_i(B_i) (the paper's exchange
 * argument; the tests check it against dynamic programming). {@link Metric#APPROX} curves are
 * always convex; {@link Metric#EXACT} curves of real channels almost always are.
 *
 * <b>Non-convex curves: steps along the lower convex hull.</b> A channel with a few huge outliers
 * can gain little from its 2nd bit and much from its 3rd. One-bit greedy would starve it forever;
 * looking ahead to the best average gain per bit lets it take both bits together. This is greedy on
 * each channel's lower convex hull: optimal whenever the budget ends on hull vertices, and a close
 * heuristic otherwise (the tests measure the gap against dynamic programming). A step that no
 * longer fits the remaining budget is re-evaluated lazily when popped; keys only ever fall, so the
 * heap order stays correct.
 *
 * <b>Budget.</b> Average bits per weight over every weight in scope; one more bit of a channel
 * costs its length. For one tensor every channel has the same length, so this is the paper's
 * average over channels; across tensors of different row lengths the key is gain per weight-bit
 * and the problem is a knapsack, so greedy is a close heuristic there. The budget must be in
 * [1, 8] and is taken at its decimal value ({@link Double#toString}). The plan never exceeds it;
 * when it is not exactly reachable the shortfall is less than one channel's worth of bits, since
 * allocation stops only when no further bit of any channel below 8 bits fits. Zero or negative
 * gains are still spent last: the budget is what the caller asked to fill.
 *
 * <b>Cost.</b> At most 7 steps (plus at most 7 lazy re-evaluations) per channel, each O(log C):
 * O(C log C). The heap is sequential; parallelism lives in {@link RelativeError#table}. The result
 * depends only on the tables, never on thread count.
 */
public final class GreedyBitAllocator {

    private GreedyBitAllocator() {}

    /** Allocates one tensor on its own. */
    public static TensorPlan allocate(ErrorTable table, double budget) {
        return allocate(List.of(table), budget).tensors().getFirst();
    }

    /** Allocates every tensor of {@code tables} under one shared average budget (model-wide scope). */
    public static BitPlan allocate(List<ErrorTable> tables, double budget) {
        checkTables(tables);
        long weights = 0;
        int shortest = Integer.MAX_VALUE;
        for (ErrorTable t : tables) {
            weights = Math.addExact(weights, (long) t.rows() * t.cols());
            shortest = Math.min(shortest, t.cols());
        }
        long remaining = budgetBits(budget, weights) - weights;

        // Channels are numbered tensor by tensor, so id order is (tensor index, row) order.
        int[] firstChannel = new int[tables.size() + 1];
        for (int t = 0; t < tables.size(); t++) firstChannel[t + 1] = Math.addExact(firstChannel[t], tables.get(t).rows());
        int channels = firstChannel[tables.size()];
        int[] tensorOf = new int[channels];
        byte[] bits = new byte[channels];
        byte[] steps = new byte[channels];
        java.util.Arrays.fill(bits, (byte) QuantLimits.MIN_BITS);
        ChannelHeap heap = new ChannelHeap(channels);
        for (int t = 0; t < tables.size(); t++) {
            for (int id = firstChannel[t]; id < firstChannel[t + 1]; id++) {
                tensorOf[id] = t;
                push(heap, tables.get(t), id, id - firstChannel[t], QuantLimits.MIN_BITS,
                        QuantLimits.MAX_BITS - QuantLimits.MIN_BITS, steps);
            }
        }
        while (remaining >= shortest && !heap.isEmpty()) {
            int id = heap.topChannel();
            heap.pop();
            ErrorTable table = tables.get(tensorOf[id]);
            int row = id - firstChannel[tensorOf[id]];
            long cost = (long) steps[id] * table.cols();
            if (cost > remaining) {
                int fitting = (int) Math.min(steps[id] - 1, remaining / table.cols());
                if (fitting > 0) push(heap, table, id, row, bits[id], fitting, steps);
                continue;
            }
            bits[id] += steps[id];
            remaining -= cost;
            if (bits[id] < QuantLimits.MAX_BITS) {
                push(heap, table, id, row, bits[id], QuantLimits.MAX_BITS - bits[id], steps);
            }
        }

        List<TensorPlan> plans = new ArrayList<>(tables.size());
        for (int t = 0; t < tables.size(); t++) {
            ErrorTable table = tables.get(t);
            plans.add(new TensorPlan(table.name(), table.rows(), table.cols(),
                    java.util.Arrays.copyOfRange(bits, firstChannel[t], firstChannel[t + 1]), table.metric(), null));
        }
        return new BitPlan(budget, plans);
    }

    /**
     * ⌊budget · weights⌋, computed in decimal from the budget's shortest representation so that
     * e.g. 5.3 × 10 is 53 and not 52 after binary rounding.
     */
    static long budgetBits(double budget, long weights) {
        BitPlan.checkBudget(budget);
        return new BigDecimal(Double.toString(budget)).multiply(BigDecimal.valueOf(weights))
                .setScale(0, RoundingMode.FLOOR).longValueExact();
    }

    private static void checkTables(List<ErrorTable> tables) {
        if (tables.isEmpty()) throw new IllegalArgumentException("nothing to allocate: no tensors");
        Metric metric = tables.getFirst().metric();
        Set<String> names = new HashSet<>();
        for (ErrorTable t : tables) {
            if (!names.add(t.name())) throw new IllegalArgumentException("tensor " + t.name() + " given twice");
            if (t.metric() != metric) {
                throw new IllegalArgumentException("tensor " + t.name() + " uses " + t.metric() + " but " + tables.getFirst().name()
                        + " uses " + metric + ": errors of different metrics are not comparable");
            }
        }
    }

    /**
     * Pushes channel {@code id} (row {@code row} of {@code table}, now at {@code bits}) with its best
     * step of 1..maxSteps bits: the largest average gain per bit (the smallest step on ties), keyed
     * per weight-bit. The step is remembered in {@code steps[id]}.
     */
    private static void push(ChannelHeap heap, ErrorTable table, int id, int row, int bits, int maxSteps, byte[] steps) {
        double from = table.error(row, bits);
        double bestGain = Double.NEGATIVE_INFINITY;
        int bestSteps = 1;
        for (int k = 1; k <= maxSteps; k++) {
            double gain = (from - table.error(row, bits + k)) / k;
            if (gain > bestGain) {
                bestGain = gain;
                bestSteps = k;
            }
        }
        steps[id] = (byte) bestSteps;
        // + 0.0 turns −0.0 into 0.0 so that equal gains compare equal and fall to the id tie-break.
        heap.push(bestGain / table.cols() + 0.0, id);
    }
}
