package jquant.runtime.kernels;

/**
 * The NPU's inner product: int8 × int8 with int32 accumulation. {@link VectorInt8Dot} is the fast
 * implementation, {@link ScalarInt8Dot} the plain-loop oracle; integer sums do not depend on their
 * order, so the two agree exactly.
 *
 * <p>Accumulation is exact while {@code len · 127² < 2^31}, i.e. {@code len ≤ }{@link #MAX_LENGTH}
 * (activations and weights are symmetric int8, never −128).
 */
public interface Int8Dot {
    /** Longest vector whose ±127 × ±127 products cannot overflow an int32 sum. */
    int MAX_LENGTH = Integer.MAX_VALUE / (127 * 127);

    /** {@code Σ_k a[aOff + k] · b[bOff + k]} for {@code k < len}, in int32. */
    int dot(byte[] a, int aOff, byte[] b, int bOff, int len);
}
