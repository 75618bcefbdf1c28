package jquant.runtime;

import java.util.Optional;
import jquant.core.WorkerPool;

/**
 * One linear layer's weight matrix {@code W[out][in]} as the model multiplies by it: the seam where
 * a stored representation (dense float, weight-only int8, int8×int8, ternary …) meets the forward
 * pass. The model never sees how the weights are stored; a loader picks an implementation per tensor
 * through a {@link LinearWeightsFactory}.
 */
public interface LinearWeights {

    /** Input features (columns of W). */
    int inFeatures();

    /** Output features (rows of W). */
    int outFeatures();

    /**
     * {@code out[i*outFeatures + r] = Σ_k x[i*inFeatures + k] · W[r][k]} for the {@code n} token rows
     * of {@code x}: a matrix-vector product when {@code n == 1}, a batched product otherwise.
     */
    void matmul(float[] x, int n, float[] out);

    /**
     * Bytes of stored weights (codes, scales) one product reads: what a memory-bound decode step
     * streams. Float32 size unless the storage says otherwise.
     */
    default long storedBytes() {
        return 4L * inFeatures() * outFeatures();
    }

    /**
     * The product {@code y = W·x} of {@code x}'s token (decode) or tokens (a prefill batch) made ready to
     * run in groups of four rows: its input converted now (quantized, arranged, copied aligned: a form of
     * {@code x} other products of it share), its rows multiplied when {@link RowGroups#run} is called,
     * from any thread. So the forward pass can hand the pool one job for several matrices that read the
     * same input ({@link SharedInputProducts}). Empty where a product runs only whole (the Java kernels;
     * a first product that checks the weights; a batch where the storage has no batch form).
     */
    default Optional<RowGroups> prepare(SharedInput x, float[] y) {
        return Optional.empty();
    }

    /**
     * A prepared product of {@code outRows} rows in groups of {@code groupRows} (four, or sixteen for a
     * kernel that takes sixteen rows at a time): {@code rows.run(r0, r1)} writes rows {@code [r0, r1)} of
     * its output, or, not {@code inOrder}, the output rows that the product's own order puts there
     * (weightlet lanes run their rows by width); {@code workPerGroup} is about the multiply-adds of a
     * group, for {@link WorkerPool#forRange}.
     */
    record RowGroups(int outRows, int groupRows, long workPerGroup, RowRange rows, boolean inOrder) {

        /** Groups of four rows in the output's order. */
        public RowGroups(int outRows, long workPerGroup, RowRange rows) {
            this(outRows, 4, workPerGroup, rows, true);
        }

        /** Groups of four rows. */
        public RowGroups(int outRows, long workPerGroup, RowRange rows, boolean inOrder) {
            this(outRows, 4, workPerGroup, rows, inOrder);
        }

        /** Groups of {@link #groupRows}, the last one possibly short. */
        public int groups() {
            return (outRows + groupRows - 1) / groupRows;
        }

        /** Rows {@code [groupRows·start, min(outRows, groupRows·end))}: groups {@code [start, end)}. */
        public void run(int start, int end) {
            rows.run(groupRows * start, Math.min(outRows, groupRows * end));
        }

        /** Every group, dealt out to {@code pool}: the product made on its own. */
        public void runOn(WorkerPool pool) {
            pool.forRange(groups(), workPerGroup, (worker, start, end) -> run(start, end));
        }
    }

    /** Computes rows {@code [r0, r1)} of a prepared product. */
    @FunctionalInterface
    interface RowRange {
        void run(int r0, int r1);
    }
}
