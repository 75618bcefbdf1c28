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
 *  while heap not empty:
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
 * <b>Bytes of a file.</b> {@link #allocate(List, long, ChannelCost)} counts what a channel costs as
 * stored ({@link ChannelCost}): {@code len_i} becomes the cost of a step, {@code cost_i(B + k) −
 * cost_i(B)}, and the key g_i over that cost per bit. The weightlet layout pads a short last group to
 * whole blocks, so a step can cost more or less than k · len_i, or nothing at all.
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
        for (ErrorTable t : tables) weights = Math.addExact(weights, (long) t.rows() * t.cols());
        return new BitPlan(budget, widths(tables, budgetBits(BitPlan.checkBudget(budget), weights), ChannelCost.WEIGHTS));
    }

    /**
     * What a channel of width B costs: {@link #WEIGHTS} (B bits a weight, the paper's budget) or its
     * stored bytes in a file, padding included ({@link #allocate(List, long, ChannelCost)}). Must not
     * fall as B grows.
     */
    @FunctionalInterface
    public interface ChannelCost {
        /** B · length: the budget counts weights. */
        ChannelCost WEIGHTS = (table, bits) -> (long) bits * table.cols();

        /** Bits one channel of {@code table} costs at width {@code bits}. */
        long bits(ErrorTable table, int bits);
    }

    /**
     * Allocates every tensor of {@code tables} so that their channels cost at most {@code available} bits
     * in all, each channel as {@code cost} says: the same loop, with a step's cost {@code cost(B + k) −
     * cost(B)} in place of {@code k · len} (a step that costs nothing is taken first).
     *
     * @return the tensors' plans, in order
     * @throws IllegalArgumentException if the channels at 1 bit already cost more than {@code available}
     */
    public static List<TensorPlan> allocate(List<ErrorTable> tables, long available, ChannelCost cost) {
        checkTables(tables);
        return widths(tables, available, cost);
    }

    private static List<TensorPlan> widths(List<ErrorTable> tables, long available, ChannelCost cost) {
        long remaining = available;
        for (ErrorTable t : tables) remaining -= t.rows() * cost.bits(t, QuantLimits.MIN_BITS);
        if (remaining < 0) {
            throw new IllegalArgumentException("the budget of " + available + " bits is less than every channel at " + QuantLimits.MIN_BITS + " bit costs ("
                    + (available - remaining) + ")");
        }

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
                push(heap, tables.get(t), cost, id, id - firstChannel[t], QuantLimits.MIN_BITS,
                        QuantLimits.MAX_BITS - QuantLimits.MIN_BITS, steps);
            }
        }
        while (!heap.isEmpty()) {
            int id = heap.topChannel();
            heap.pop();
            ErrorTable table = tables.get(tensorOf[id]);
            int row = id - firstChannel[tensorOf[id]];
            long step = cost.bits(table, bits[id] + steps[id]) - cost.bits(table, bits[id]);
            if (step > remaining) {
                int fitting = steps[id] - 1;
                while (fitting > 0 && cost.bits(table, bits[id] + fitting) - cost.bits(table, bits[id]) > remaining) fitting--;
                if (fitting > 0) push(heap, table, cost, id, row, bits[id], fitting, steps);
                continue;
            }
            bits[id] += steps[id];
            remaining -= step;
            if (bits[id] < QuantLimits.MAX_BITS) {
                push(heap, table, cost, id, row, bits[id], QuantLimits.MAX_BITS - bits[id], steps);
            }
        }

        List<TensorPlan> plans = new ArrayList<>(tables.size());
        for (int t = 0; t < tables.size(); t++) {
            ErrorTable table = tables.get(t);
            plans.add(new TensorPlan(table.name(), table.rows(), table.cols(),
                    java.util.Arrays.copyOfRange(bits, firstChannel[t], firstChannel[t + 1]), table.metric(), null));
        }
        return plans;
    }

    /**
     * ⌊budget · weights⌋, computed in decimal from the budget's shortest representation so that
     * e.g. 5.3 × 10 is 53 and not 52 after binary rounding. The caller checks the budget's range.
     */
    public static long budgetBits(double budget, long weights) {
        if (!Double.isFinite(budget) || budget < 0) throw new IllegalArgumentException("budget " + budget + " bits per weight is not a number of bits");
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
     * step of 1..maxSteps bits: the largest gain per bit of cost (the smallest step on ties). With
     * {@link ChannelCost#WEIGHTS} a step of k bits costs k · len, so the key is the paper's gain per bit
     * over the channel's length. The step is remembered in {@code steps[id]}.
     */
    private static void push(ChannelHeap heap, ErrorTable table, ChannelCost cost, int id, int row, int bits, int maxSteps, byte[] steps) {
        double from = table.error(row, bits);
        long at = cost.bits(table, bits);
        double bestKey = Double.NEGATIVE_INFINITY;
        int bestSteps = 1;
        for (int k = 1; k <= maxSteps; k++) {
            double gain = (from - table.error(row, bits + k)) / k;
            long step = cost.bits(table, bits + k) - at;
            // gain per bit of the width, over the cost of a bit of width: for WEIGHTS, gain / len
            double key = step > 0 ? gain / ((double) step / k) : gain >= 0 ? Double.POSITIVE_INFINITY : gain;
            if (key > bestKey) {
                bestKey = key;
                bestSteps = k;
            }
        }
        steps[id] = (byte) bestSteps;
        // + 0.0 turns −0.0 into 0.0 so that equal gains compare equal and fall to the id tie-break.
        heap.push(bestKey + 0.0, id);
    }
}
