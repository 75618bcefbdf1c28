package jquant.runtime;

import java.util.Optional;
import jquant.core.WorkerPool;
import jquant.runtime.LinearWeights.RowGroups;
import jquant.runtime.kernels.Kernels;

/**
 * The products of matrices that read the same input (q, k and v; gate and up) handed to the pool as one
 * job instead of one a matrix. A decode job lasts tens of microseconds, and each costs a hand-off and a
 * tail in which one thread waits for the other's last chunk; SwiGLU's gating, which one thread ran
 * between the jobs, runs inside the gate-and-up job on each chunk's rows. The input is quantized,
 * arranged or copied once for all the products that take the same form of it ({@link SharedInput}):
 * in prefill, float16 matrices share the batch's aligned copy. Each row comes from the same kernel call
 * as in a product of its own, so the outputs are the same bits.
 */
final class SharedInputProducts {

    private SharedInputProducts() {}

    /**
     * {@code ys[i] = x · ws[i]} for the {@code n} token rows of {@code x}: one job where the products can
     * all be prepared ({@link LinearWeights#prepare}), otherwise one product after another.
     */
    static void matmul(WorkerPool pool, float[] x, int n, LinearWeights[] ws, float[][] ys) {
        RowGroups[] ps = prepared(x, n, ws, ys);
        if (ps == null) {
            for (int i = 0; i < ws.length; i++) ws[i].matmul(x, n, ys[i]);
            return;
        }
        int[] first = new int[ps.length + 1];
        long work = 0;
        for (int i = 0; i < ps.length; i++) {
            first[i + 1] = first[i] + ps[i].groups();
            work = Math.max(work, ps[i].workPerGroup());
        }
        pool.forRange(first[ps.length], work, (worker, start, end) -> {
            for (int i = 0; i < ps.length; i++) {
                int from = Math.max(start, first[i]), to = Math.min(end, first[i + 1]);
                if (from < to) ps[i].run(from - first[i], to - first[i]);
            }
        });
    }

    /**
     * SwiGLU's {@code g = silu(x · gate) · (x · up)} for one token as one job, each chunk's rows gated as
     * soon as both products have them; false, having written nothing, where the two products cannot
     * both be prepared, differ in rows, or run them in another order.
     */
    static boolean gated(WorkerPool pool, Kernels kernels, float[] x, LinearWeights gate, LinearWeights up, float[] g, float[] u) {
        if (gate.outFeatures() != up.outFeatures()) return false;
        RowGroups[] ps = prepared(x, 1, new LinearWeights[] {gate, up}, new float[][] {g, u});
        if (ps == null || !ps[0].inOrder() || !ps[1].inOrder()) return false;
        // Chunks of whole groups of both: the larger group (four or sixteen rows) is a multiple of the other.
        int rows = gate.outFeatures(), unit = Math.max(ps[0].groupRows(), ps[1].groupRows());
        if (unit % ps[0].groupRows() != 0 || unit % ps[1].groupRows() != 0) return false;
        long work = ps[0].workPerGroup() * (unit / ps[0].groupRows()) + ps[1].workPerGroup() * (unit / ps[1].groupRows());
        pool.forRange((rows + unit - 1) / unit, work, (worker, start, end) -> {
            int r0 = unit * start, r1 = Math.min(rows, unit * end);
            ps[0].rows().run(r0, r1);
            ps[1].rows().run(r0, r1);
            kernels.siluMul(g, u, r0, r1 - r0);
        });
        return true;
    }

    /** Every product prepared on the {@code n} tokens of {@code x}, or null where one cannot be (or the matrices differ in columns). */
    private static RowGroups[] prepared(float[] x, int n, LinearWeights[] ws, float[][] ys) {
        SharedInput input = new SharedInput(x, ws[0].inFeatures(), n);
        RowGroups[] ps = new RowGroups[ws.length];
        for (int i = 0; i < ws.length; i++) {
            if (ws[i].inFeatures() != input.length()) return null;
            Optional<RowGroups> p = ws[i].prepare(input, ys[i]);
            if (p.isEmpty()) return null;
            ps[i] = p.get();
        }
        return ps;
    }
}
