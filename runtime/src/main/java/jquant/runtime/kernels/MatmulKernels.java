package jquant.runtime.kernels;

import java.lang.foreign.MemorySegment;

/**
 * The inner loops of a matrix product on weights as they are stored: row-major {@code w[out][in]},
 * read in place (float32, float16 or bfloat16 from a mapped file; int8 codes or float32 rows from a
 * small scratch buffer). {@link VectorMatmulKernels} is the fast implementation and
 * {@link ScalarMatmulKernels} its plain-loop twin; the two agree bit for bit.
 *
 * <h2>The one summation order</h2>
 * With {@code L = }{@link #lanes()}, the product of a weight row w and an activation row x is defined
 * as {@code L} fused multiply-add chains, chain {@code c} taking the elements {@code k ≡ c (mod L)} in
 * ascending k, whose results are then added in lane order 0, 1, …, L−1 ({@link #laneSum}):
 * <pre>
 *   acc[c] = fma(w[k], x[k], acc[c])   for k = c, c+L, c+2L, …  (acc[c] starts at 0)
 *   w·x    = ((acc[0] + acc[1]) + acc[2]) + … + acc[L−1]
 * </pre>
 * Every kernel below computes exactly these chains, whatever tile or thread computed them, so a token
 * gives the same product alone (decode) as in a batch (prefill), and in every JIT tier. The kernels
 * keep the chains in {@code acc} between calls ({@code acc} is read at the start and written at the
 * end), so a caller can run a row in chunks of {@code [k0, k1)} ({@code k0} a multiple of L) — the
 * int8 mode uses that to move exact integer partial sums out of float lanes before they could round.
 *
 * <p>Row kernels take four rows at once (four streams from memory, one activation load for all four):
 * {@code acc[j·L + c]} is chain c of row j, row j's element k at {@code at_j + k} (arrays) or byte
 * {@code at_j + k·size} (segments). Rows may repeat (a caller pads a last partial group of rows so).
 */
public interface MatmulKernels {

    /** What {@link #rowsF16} expects its activations multiplied by: 2^112, undoing the weights' 2^-112. */
    float F16_INPUT_SCALE = 0x1p112f;
    /** Activations at or above this magnitude cannot be scaled for {@link #rowsF16} (they would overflow). */
    float F16_INPUT_LIMIT = 0x1p16f;

    /** Chains per row product (the float lanes of one vector). */
    int lanes();

    /** Float32 rows, little-endian, in a segment. */
    void rowsF32(MemorySegment w, long at0, long at1, long at2, long at3, float[] x, int xOff, int k0, int k1, float[] acc);

    /**
     * IEEE float16 rows, little-endian, in a segment, converted in registers, with the activations
     * already multiplied by {@link #F16_INPUT_SCALE} (so |x| must be below 2^16): each weight is taken as
     * its value × 2^-112, which a shift and a mask give exactly from its bits, and the product with the
     * scaled activation is the same real number as w·x, so the chains are the definition's, bit for bit,
     * at four vector operations per float16 vector. The weights must be finite: the shift turns ±inf
     * and NaN into numbers, so the caller checks a matrix once ({@link NonFiniteWeightException#requireFiniteF16}).
     */
    void rowsF16(MemorySegment w, long at0, long at1, long at2, long at3, float[] x, int xOff, int k0, int k1, float[] acc);

    /** bfloat16 rows, little-endian, in a segment (the top half of a float32). */
    void rowsBF16(MemorySegment w, long at0, long at1, long at2, long at3, float[] x, int xOff, int k0, int k1, float[] acc);

    /** int8 rows in an array (unpacked weightlet codes), each code taken as the float of its value. */
    void rowsI8(byte[] w, int at0, int at1, int at2, int at3, float[] x, int xOff, int k0, int k1, float[] acc);

    /** Float32 rows in an array (rows decoded into a scratch buffer). */
    void rowsF32(float[] w, int at0, int at1, int at2, int at3, float[] x, int xOff, int k0, int k1, float[] acc);

    /**
     * Four float32 weight rows × four activation rows (prefill): {@code acc[accAt + (4t + j)·L + c]} is
     * chain c of row j with token t, whose activations start at {@code x_t}.
     */
    void tile(float[] w, int at0, int at1, int at2, int at3, float[] x, int x0, int x1, int x2, int x3,
              int k0, int k1, float[] acc, int accAt);

    /**
     * {@code dst[off + i]} = float16 {@code i} of {@code w} from byte {@code at}, {@code i < len}: rows
     * decoded once for a prefill batch. The weights must be finite, as for {@link #rowsF16}.
     */
    void f16ToFloats(MemorySegment w, long at, float[] dst, int off, int len);

    /** As {@link #f16ToFloats} for bfloat16 (whose infinities and NaNs are passed on as they are). */
    void bf16ToFloats(MemorySegment w, long at, float[] dst, int off, int len);

    /** The chains of one product added in lane order: {@code acc[at] + acc[at+1] + … + acc[at+L−1]}. */
    static float laneSum(float[] acc, int at, int lanes) {
        float sum = 0f;
        for (int c = 0; c < lanes; c++) sum += acc[at + c];
        return sum;
    }
}
