package jquant.quantize;

import jquant.formats.weightlet.WeightletLayout;

/**
 * The quantization constants every stage shares, in one place: a channel gets 1..8 bits (EdgeFlow's
 * per-channel widths, as the weightlet format stores them; a budget is an average in the same range), and
 * the int8 grids are symmetric, −127..127 (−128 is never used, so negation stays on the grid).
 */
public final class QuantLimits {
    public static final int MIN_BITS = WeightletLayout.MIN_BITS;
    public static final int MAX_BITS = WeightletLayout.MAX_BITS;
    /**
     * Largest int8 code of the symmetric grids (weights at 8 bits and the NPU's static activations); at
     * 8 bits also the stored field of value 0.
     */
    public static final int INT8_MAX = WeightletLayout.INT8_MAX;
    /** {@code 1..8}, as error messages say it. */
    public static final String BIT_RANGE = WeightletLayout.BIT_RANGE;

    private QuantLimits() {}

    /** Whether {@code bits} is a channel width jquant stores. */
    public static boolean isBitWidth(int bits) {
        return WeightletLayout.isBitWidth(bits);
    }
}
