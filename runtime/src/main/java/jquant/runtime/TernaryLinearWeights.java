package jquant.runtime;

import jquant.runtime.ternary.ActivationBlocks;
import jquant.runtime.ternary.TernaryMatrix;

/**
 * A linear layer on a packed ternary matrix ({@link TernaryMatrix}): each input row is quantized to
 * int8 per block of 128 ({@link ActivationBlocks#quantize}), then multiplied by the integer kernels —
 * the matvec (decode) path for one token, the prefill tiles for more. The result is the kernels'
 * shared formula, so every ternary layout of the same weights gives the same floats bit for bit.
 */
public final class TernaryLinearWeights implements LinearWeights {
    private final TernaryMatrix matrix;

    public TernaryLinearWeights(TernaryMatrix matrix) {
        this.matrix = matrix;
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
    public void matmul(float[] x, int n, float[] out) {
        int in = matrix.cols();
        if (n == 1) {
            matrix.matvec(ActivationBlocks.quantize(x, 0, in), out, 0);
            return;
        }
        ActivationBlocks[] columns = new ActivationBlocks[n];
        for (int i = 0; i < n; i++) columns[i] = ActivationBlocks.quantize(x, i * in, in);
        matrix.multiply(columns, out);
    }
}
