package jquant.quantize;

/** How {@link RelativeError} estimates RE(W_i, B), the cosine distance a channel suffers at B bits. */
public enum Metric {
    /**
     * The paper's closed form {@code max|W_i|² / (6 · 4^B · E[W_i²])}: one pass of statistics per
     * channel, any B. Always strictly decreasing and convex in B, so the greedy allocator is exactly
     * optimal for it.
     */
    APPROX,
    /**
     * {@code 1 − cos(W_i, Q_B(W_i))} on the real {@link SymmetricChannelQuantizer} grid: one
     * rounding pass per bit width. Measures what the quantizer really does, including channels
     * whose error the uniform-rounding model misjudges.
     */
    EXACT
}
