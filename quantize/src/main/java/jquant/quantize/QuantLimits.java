package jquant.quantize;

/**
 * The quantization constants every stage shares, in one place: a channel gets 1..8 bits (EdgeFlow's
 * per-channel widths; a budget is an average in the same range), and the int8 grids are symmetric,
 * −127..127 (−128 is never used, so negation stays on the grid).
 */
public final class QuantLimits {
    public static final int MIN_BITS = 1;
    public static final int MAX_BITS = 8;
    /**
     * Largest int8 code of the symmetric grids (weights at 8 bits and the NPU's static activations); at
     * 8 bits also the stored field of value 0.
     */
    public static final int INT8_MAX = 127;
    /** {@code 1..8}, as error messages say it. */
    public static final String BIT_RANGE = MIN_BITS + ".." + MAX_BITS;
    /** {@code [1, 8]}, the range of an average bit budget, as error messages say it. */
    public static final String BUDGET_RANGE = "[" + MIN_BITS + ", " + MAX_BITS + "]";

    private QuantLimits() {}

    /** Whether {@code bits} is a channel width jquant stores. */
    public static boolean isBitWidth(int bits) {
        return bits >= MIN_BITS && bits <= MAX_BITS;
    }

    /** Whether {@code bits} is an average budget the allocator can meet (false for NaN). */
    public static boolean isBudget(double bits) {
        return bits >= MIN_BITS && bits <= MAX_BITS;
    }
}
