package jquant.quantize;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Set;

/**
 * Per-channel bit widths under an average budget: EdgeFlow Algorithm 1 with a max-heap.
 *
 * <pre>
 *  B_i ← 1 for every channel;  remaining ← ⌊budget · N⌋ − N          (N = weights in scope)
 *  heap ← every channel, keyed by gain_i / len_i = (E_i(B_i) − E_i(B_i + 1)) / len_i
 *  while remaining ≥ shortest channel and heap not empty:
 *      i ← pop max key                            (ties: lower tensor index, then lower row)
 *      if len_i > remaining: drop i              (it can never fit again)
 *      else B_i ← B_i + 1;  remaining ← remaining − len_i;  if B_i < 8: push i with its next gain
 * </pre>
 *
 * <b>Budget.</b> Average bits per weight over every weight in scope; one more bit of a channel
 * costs its length. For one tensor every channel has the same length, so this is the paper's
 * average over channels. The budget must be in [1, 8]. The plan never exceeds it, and when it is
 * not exactly reachable the shortfall is less than one channel's worth of bits: allocation stops
 * only when no channel still below 8 bits fits in what is left.
 *
 * <b>Optimality.</b> The objective Σ_i E_i(B_i) is separable. When every channel's gains are
 * non-negative and non-increasing in B ({@link ErrorTable#hasDiminishingGains}) and all channels
 * have one length, greedy is exactly optimal (the exchange argument of the paper); this always
 * holds for {@link Metric#APPROX} within a tensor. With {@link Metric#EXACT} an occasional channel
 * has a non-monotone curve, and across tensors of different row lengths the problem is a knapsack:
 * greedy by gain per weight-bit is then a very close heuristic, not a proof. Gains that are zero or
 * negative are still spent last, because the budget is what the caller asked to fill.
 *
 * <b>Cost.</b> At most 7 pops per channel, each O(log C): O(C log C). The heap is sequential;
 * parallelism lives in {@link RelativeError#table}. The result depends only on the tables.
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

        byte[][] bits = new byte[tables.size()][];
        PriorityQueue<Candidate> heap = new PriorityQueue<>(Candidate.BEST_FIRST);
        for (int t = 0; t < tables.size(); t++) {
            ErrorTable table = tables.get(t);
            bits[t] = new byte[table.rows()];
            java.util.Arrays.fill(bits[t], (byte) SymmetricChannelQuantizer.MIN_BITS);
            for (int r = 0; r < table.rows(); r++) heap.add(Candidate.of(table, t, r, SymmetricChannelQuantizer.MIN_BITS));
        }
        while (remaining >= shortest && !heap.isEmpty()) {
            Candidate c = heap.poll();
            ErrorTable table = tables.get(c.tensor);
            if (table.cols() > remaining) continue;
            int next = ++bits[c.tensor][c.row];
            remaining -= table.cols();
            if (next < SymmetricChannelQuantizer.MAX_BITS) heap.add(Candidate.of(table, c.tensor, c.row, next));
        }

        List<TensorPlan> plans = new ArrayList<>(tables.size());
        for (int t = 0; t < tables.size(); t++) {
            ErrorTable table = tables.get(t);
            plans.add(new TensorPlan(table.name(), table.rows(), table.cols(), bits[t], table.metric(), null));
        }
        return new BitPlan(budget, plans);
    }

    /**
     * ⌊budget · weights⌋, computed in decimal from the budget's shortest representation so that
     * e.g. 5.3 × 10 is 53 and not 52 after binary rounding.
     */
    static long budgetBits(double budget, long weights) {
        if (!(budget >= SymmetricChannelQuantizer.MIN_BITS && budget <= SymmetricChannelQuantizer.MAX_BITS)) {
            throw new IllegalArgumentException("budget " + budget + " bits per weight is outside [1, 8]");
        }
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

    /** One channel in the heap, keyed by the gain of its next bit per weight-bit it costs. */
    private record Candidate(double key, int tensor, int row) {
        static final Comparator<Candidate> BEST_FIRST = Comparator.comparingDouble(Candidate::key).reversed()
                .thenComparingInt(Candidate::tensor).thenComparingInt(Candidate::row);

        static Candidate of(ErrorTable table, int tensor, int row, int bits) {
            // + 0.0 turns −0.0 into 0.0 so that equal gains compare equal and fall to the index tie-break.
            return new Candidate(table.gain(row, bits) / table.cols() + 0.0, tensor, row);
        }
    }
}
