package jquant.quantize;

import java.util.Arrays;

/**
 * The objective the allocator minimises for one tensor: for every output channel (row) its
 * error at B = 1..8 bits, {@code errors[row · 8 + (B − 1)]}. Usually RE from
 * {@link RelativeError#table}, optionally scaled per channel by {@link #weighted}.
 *
 * @param cols the channel length in weights: what one more bit of one channel costs
 */
public record ErrorTable(String name, int rows, int cols, Metric metric, double[] errors) {

    public ErrorTable {
        if (name == null || name.isEmpty()) throw new IllegalArgumentException("error table needs a tensor name");
        if (rows <= 0 || cols <= 0) throw new IllegalArgumentException(name + ": shape " + rows + "×" + cols + " is not positive");
        if (metric == null) throw new IllegalArgumentException(name + ": metric is null");
        if (errors.length != (long) rows * RelativeError.WIDTHS) {
            throw new IllegalArgumentException(name + ": " + errors.length + " errors for " + rows + " rows × 8 bit widths");
        }
        errors = errors.clone();
        for (int i = 0; i < errors.length; i++) {
            if (!Double.isFinite(errors[i]) || errors[i] < 0) {
                throw new IllegalArgumentException(name + ": error of row " + i / RelativeError.WIDTHS + " at "
                        + (i % RelativeError.WIDTHS + 1) + " bits is " + errors[i] + " (must be finite and ≥ 0)");
            }
        }
    }

    @Override
    public double[] errors() { return errors.clone(); }

    public double error(int row, int bits) {
        SymmetricChannelQuantizer.checkBits(bits);
        return errors[row * RelativeError.WIDTHS + bits - 1];
    }

    /** What adding one bit to {@code row} at {@code bits} saves: error(B) − error(B + 1). */
    public double gain(int row, int bits) {
        return error(row, bits) - error(row, bits + 1);
    }

    /**
     * This table with row i's errors multiplied by {@code channelWeights[i]} (finite, ≥ 0), e.g. an
     * output channel's share of the layer's output energy, so the allocator minimises Σ c_i·RE_i.
     */
    public ErrorTable weighted(double[] channelWeights) {
        if (channelWeights.length != rows) {
            throw new IllegalArgumentException(name + ": " + channelWeights.length + " channel weights for " + rows + " rows");
        }
        double[] scaled = errors.clone();
        for (int r = 0; r < rows; r++) {
            double c = channelWeights[r];
            if (!Double.isFinite(c) || c < 0) {
                throw new IllegalArgumentException(name + ": weight of channel " + r + " is " + c + " (must be finite and ≥ 0)");
            }
            for (int b = 0; b < RelativeError.WIDTHS; b++) scaled[r * RelativeError.WIDTHS + b] *= c;
        }
        return new ErrorTable(name, rows, cols, metric, scaled);
    }

    /**
     * Whether row's gains are non-negative and non-increasing in B (a convex, non-increasing error
     * curve): the condition under which greedy allocation is exactly optimal. Always true for
     * {@link Metric#APPROX}; usually, not always, for {@link Metric#EXACT}.
     */
    public boolean hasDiminishingGains(int row) {
        double previous = Double.POSITIVE_INFINITY;
        for (int b = 1; b < RelativeError.WIDTHS; b++) {
            double gain = gain(row, b);
            if (gain < 0 || gain > previous) return false;
            previous = gain;
        }
        return true;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ErrorTable t && name.equals(t.name) && rows == t.rows && cols == t.cols
                && metric == t.metric && Arrays.equals(errors, t.errors);
    }

    @Override
    public int hashCode() {
        return ((name.hashCode() * 31 + rows) * 31 + cols) * 31 + Arrays.hashCode(errors);
    }

    @Override
    public String toString() {
        return "ErrorTable[" + name + " " + rows + "×" + cols + " " + metric + "]";
    }
}
