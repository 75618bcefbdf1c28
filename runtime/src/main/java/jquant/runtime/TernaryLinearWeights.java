package jquant.runtime;

import java.util.Optional;
import jquant.core.WorkerPool;
import jquant.runtime.ternary.ActivationBlocks;
import jquant.runtime.ternary.NativeTernaryMatrix;
import jquant.runtime.ternary.TernaryMatrix;

/**
 * A linear layer on a packed ternary matrix ({@link TernaryMatrix}): each input row is quantized to
 * int8 per block of 128 ({@link ActivationBlocks#quantize}), then multiplied by the integer kernels —
 * the matvec (decode) path for one token, the prefill tiles for more (a batch's columns quantized on
 * all threads). The result is the kernels'
 * shared formula, so every ternary layout of the same weights gives the same floats bit for bit.
 */
public final class TernaryLinearWeights implements LinearWeights {
    private final TernaryMatrix matrix;
    private final WorkerPool pool;

    /** {@code pool}: the one the matrix's kernels run on, which also quantizes a batch's columns. */
    public TernaryLinearWeights(TernaryMatrix matrix, WorkerPool pool) {
        this.matrix = matrix;
        this.pool = pool;
        KernelWarmup.startTernary(matrix);
    }

    /** The kernel matrix (its class names the layout). */
    public TernaryMatrix matrix() { return matrix; }

    @Override
    public int inFeatures() { return matrix.cols(); }

    @Override
    public long storedBytes() { return matrix.packedBytes(); }

    @Override
    public int outFeatures() { return matrix.rows(); }

    @Override
    public Optional<RowGroups> prepare(SharedInput x, float[] y) {
        if (x.tokens() != 1 || !(matrix instanceof NativeTernaryMatrix m)) return Optional.empty();
        return Optional.of(m.prepare(x.form(m.inputForm(), m::input), y));
    }

    @Override
    public void matmul(float[] x, int n, float[] out) {
        int in = matrix.cols();
        if (n == 1) {
            if (matrix instanceof NativeTernaryMatrix m) {
                m.prepare(m.input(x), out).runOn(pool);
            } else {
                matrix.matvec(ActivationBlocks.quantizeReused(x, 0, in), out, 0);
            }
            return;
        }
        ActivationBlocks[] columns = new ActivationBlocks[n];
        pool.forRange(n, in, (worker, start, end) -> {
            for (int i = start; i < end; i++) columns[i] = ActivationBlocks.quantize(x, i * in, in);
        });
        matrix.multiply(columns, out);
    }
}
