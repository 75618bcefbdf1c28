package jquant.quantize;

import java.util.Arrays;
import java.util.Objects;

/**
 * The bit widths chosen for one weight tensor: one width in 1..8 per output channel (row).
 *
 * @param alpha     the smoothing factor calibration chose for this tensor's input, or null before calibration
 * @param inputClip the static input range as a fraction of the calibrated max |x / f| (calibration searched it with
 *                  α), or null: the full range
 */
public record TensorPlan(String name, int rows, int cols, byte[] bits, Metric metric, Double alpha, Double inputClip) {

    /** A plan without an input clip (the full range). */
    public TensorPlan(String name, int rows, int cols, byte[] bits, Metric metric, Double alpha) {
        this(name, rows, cols, bits, metric, alpha, null);
    }

    public TensorPlan {
        if (name == null || name.isEmpty()) throw new IllegalArgumentException("tensor plan needs a name");
        if (rows <= 0 || cols <= 0) throw new IllegalArgumentException(name + ": shape " + rows + "×" + cols + " is not positive");
        if (metric == null) throw new IllegalArgumentException(name + ": metric is null");
        if (bits.length != rows) throw new IllegalArgumentException(name + ": " + bits.length + " bit widths for " + rows + " rows");
        bits = bits.clone();
        for (int r = 0; r < rows; r++) {
            if (!QuantLimits.isBitWidth(bits[r])) {
                throw new IllegalArgumentException(name + ": row " + r + " has bit width " + bits[r] + ", outside " + QuantLimits.BIT_RANGE);
            }
        }
        if (alpha != null && !(alpha >= 0 && alpha <= 1)) {
            throw new IllegalArgumentException(name + ": alpha " + alpha + " outside [0, 1]");
        }
        if (inputClip != null && !(inputClip > 0 && inputClip <= 1)) {
            throw new IllegalArgumentException(name + ": input clip " + inputClip + " outside (0, 1]");
        }
    }

    @Override
    public byte[] bits() { return bits.clone(); }

    public int bits(int row) { return bits[row]; }

    public TensorPlan withAlpha(Double newAlpha) {
        return new TensorPlan(name, rows, cols, bits, metric, newAlpha, inputClip);
    }

    /** Σ bits over channels: the tensor's weights cost this times cols bits (before scales). */
    public long totalChannelBits() {
        long sum = 0;
        for (byte b : bits) sum += b;
        return sum;
    }

    public long weights() { return (long) rows * cols; }

    /** Average bits per weight (all channels have cols weights, so also the average over channels). */
    public double averageBits() { return (double) totalChannelBits() / rows; }

    /** {@code histogram()[B − 1]} = number of channels at B bits. */
    public int[] histogram() {
        int[] h = new int[QuantLimits.MAX_BITS];
        for (byte b : bits) h[b - 1]++;
        return h;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorPlan p && name.equals(p.name) && rows == p.rows && cols == p.cols
                && Arrays.equals(bits, p.bits) && metric == p.metric && Objects.equals(alpha, p.alpha) && Objects.equals(inputClip, p.inputClip);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, rows, cols, Arrays.hashCode(bits), metric, alpha, inputClip);
    }

    @Override
    public String toString() {
        return "TensorPlan[" + name + " " + rows + "×" + cols + " " + metric + " avg " + averageBits()
                + " bits, histogram " + Arrays.toString(histogram()) + (alpha == null ? "" : ", alpha " + alpha) + (inputClip == null ? "" : ", input clip " + inputClip) + "]";
    }
}
