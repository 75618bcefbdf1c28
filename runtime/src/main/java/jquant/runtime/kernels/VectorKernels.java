package jquant.runtime.kernels;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Kernels} with the incubating Vector API at the platform's preferred width ({@code L} lanes).
 *
 * <p>The matrix product runs on weights repacked into panels of {@code L} output rows, stored
 * column by column, so one vector load brings one input element's weights for {@code L} outputs:
 *
 * <pre>
 * W [out][in] row-major             packed: panel p = rows pL .. pL+L-1 (zero rows past out)
 *   row r: w[r][0] w[r][1] …          k = 0: w[pL][0]  w[pL+1][0] … w[pL+L-1][0]
 *                                     k = 1: w[pL][1]  w[pL+1][1] … w[pL+L-1][1]   …
 * </pre>
 *
 * A tile of 8 tokens × 2 panels keeps 16 accumulators in registers; per input element it loads two
 * weight vectors, broadcasts 8 activations and issues 16 fused multiply-adds, with no horizontal
 * reduction at the end. Panels are the outer loop, so a panel pair stays in cache while every token
 * of the batch passes over it: the weights are streamed once per batch. Fewer than 8 tokens (the
 * matrix-vector case) run four panels at once, four streams from memory.
 *
 * <p>Every output is one lane's fused multiply-add chain over {@code k = 0, 1, …, in-1}, whatever tile
 * computed it, so a batch gives bit-identical products to the same tokens one at a time.
 */
public final class VectorKernels implements Kernels {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final int LANES = F.length();
    /** Tokens per batched tile. */
    private static final int TOKENS = 8;

    @Override
    public int rowAlignment() {
        return 2 * LANES;
    }

    @Override
    public float[] packWeights(float[] w, int out, int in) {
        int panels = (out + LANES - 1) / LANES;
        float[] packed = new float[Math.multiplyExact(panels * LANES, in)];
        for (int r = 0; r < out; r++) {
            int base = (r / LANES) * LANES * in + r % LANES;
            for (int k = 0; k < in; k++) packed[base + k * LANES] = w[r * in + k];
        }
        return packed;
    }

    @Override
    public void matmulRows(float[] x, int n, int in, float[] packed, int rowStart, int rowEnd, float[] y, int out) {
        if (rowStart % LANES != 0) throw new IllegalArgumentException("row range must start on a panel of " + LANES + " rows, got " + rowStart);
        int panelEnd = (rowEnd + LANES - 1) / LANES;
        int p = rowStart / LANES;
        if (n < TOKENS) {
            for (; p + 4 <= panelEnd; p += 4) {
                for (int i = 0; i < n; i++) tile1x4(x, i, in, packed, p, y, out);
            }
        }
        for (; p + 2 <= panelEnd; p += 2) {
            int i = 0;
            for (; i + TOKENS <= n; i += TOKENS) tile8x2(x, i, in, packed, p, y, out);
            for (; i < n; i++) tile1x2(x, i, in, packed, p, y, out);
        }
        if (p < panelEnd) {
            for (int i = 0; i < n; i++) tile1x1(x, i, in, packed, p, y, out);
        }
    }

    private static void tile8x2(float[] x, int i, int in, float[] packed, int p, float[] y, int out) {
        int w0 = p * LANES * in, w1 = w0 + LANES * in;
        int x0 = i * in, x1 = x0 + in, x2 = x1 + in, x3 = x2 + in, x4 = x3 + in, x5 = x4 + in, x6 = x5 + in, x7 = x6 + in;
        FloatVector a00 = FloatVector.zero(F), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00;
        FloatVector a40 = a00, a41 = a00, a50 = a00, a51 = a00, a60 = a00, a61 = a00, a70 = a00, a71 = a00;
        for (int k = 0; k < in; k++) {
            FloatVector v0 = FloatVector.fromArray(F, packed, w0 + k * LANES);
            FloatVector v1 = FloatVector.fromArray(F, packed, w1 + k * LANES);
            FloatVector u = FloatVector.broadcast(F, x[x0 + k]);
            a00 = u.fma(v0, a00); a01 = u.fma(v1, a01);
            u = FloatVector.broadcast(F, x[x1 + k]);
            a10 = u.fma(v0, a10); a11 = u.fma(v1, a11);
            u = FloatVector.broadcast(F, x[x2 + k]);
            a20 = u.fma(v0, a20); a21 = u.fma(v1, a21);
            u = FloatVector.broadcast(F, x[x3 + k]);
            a30 = u.fma(v0, a30); a31 = u.fma(v1, a31);
            u = FloatVector.broadcast(F, x[x4 + k]);
            a40 = u.fma(v0, a40); a41 = u.fma(v1, a41);
            u = FloatVector.broadcast(F, x[x5 + k]);
            a50 = u.fma(v0, a50); a51 = u.fma(v1, a51);
            u = FloatVector.broadcast(F, x[x6 + k]);
            a60 = u.fma(v0, a60); a61 = u.fma(v1, a61);
            u = FloatVector.broadcast(F, x[x7 + k]);
            a70 = u.fma(v0, a70); a71 = u.fma(v1, a71);
        }
        int r0 = p * LANES, r1 = r0 + LANES;
        store(a00, y, i * out, r0, out); store(a01, y, i * out, r1, out);
        store(a10, y, (i + 1) * out, r0, out); store(a11, y, (i + 1) * out, r1, out);
        store(a20, y, (i + 2) * out, r0, out); store(a21, y, (i + 2) * out, r1, out);
        store(a30, y, (i + 3) * out, r0, out); store(a31, y, (i + 3) * out, r1, out);
        store(a40, y, (i + 4) * out, r0, out); store(a41, y, (i + 4) * out, r1, out);
        store(a50, y, (i + 5) * out, r0, out); store(a51, y, (i + 5) * out, r1, out);
        store(a60, y, (i + 6) * out, r0, out); store(a61, y, (i + 6) * out, r1, out);
        store(a70, y, (i + 7) * out, r0, out); store(a71, y, (i + 7) * out, r1, out);
    }

    /**
     * One token against four panels: the matrix-vector case, memory-bound on the weights, which it
     * reads as four streams at once (one stream per thread leaves bandwidth unused).
     */
    private static void tile1x4(float[] x, int i, int in, float[] packed, int p, float[] y, int out) {
        int w0 = p * LANES * in, w1 = w0 + LANES * in, w2 = w1 + LANES * in, w3 = w2 + LANES * in;
        int x0 = i * in;
        FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
        for (int k = 0; k < in; k++) {
            FloatVector u = FloatVector.broadcast(F, x[x0 + k]);
            a0 = u.fma(FloatVector.fromArray(F, packed, w0 + k * LANES), a0);
            a1 = u.fma(FloatVector.fromArray(F, packed, w1 + k * LANES), a1);
            a2 = u.fma(FloatVector.fromArray(F, packed, w2 + k * LANES), a2);
            a3 = u.fma(FloatVector.fromArray(F, packed, w3 + k * LANES), a3);
        }
        store(a0, y, i * out, p * LANES, out);
        store(a1, y, i * out, (p + 1) * LANES, out);
        store(a2, y, i * out, (p + 2) * LANES, out);
        store(a3, y, i * out, (p + 3) * LANES, out);
    }

    /** One token against two panels. */
    private static void tile1x2(float[] x, int i, int in, float[] packed, int p, float[] y, int out) {
        int w0 = p * LANES * in, w1 = w0 + LANES * in;
        int x0 = i * in;
        FloatVector a0 = FloatVector.zero(F), a1 = a0;
        for (int k = 0; k < in; k++) {
            FloatVector u = FloatVector.broadcast(F, x[x0 + k]);
            a0 = u.fma(FloatVector.fromArray(F, packed, w0 + k * LANES), a0);
            a1 = u.fma(FloatVector.fromArray(F, packed, w1 + k * LANES), a1);
        }
        store(a0, y, i * out, p * LANES, out);
        store(a1, y, i * out, (p + 1) * LANES, out);
    }

    private static void tile1x1(float[] x, int i, int in, float[] packed, int p, float[] y, int out) {
        int w0 = p * LANES * in;
        int x0 = i * in;
        FloatVector a0 = FloatVector.zero(F);
        for (int k = 0; k < in; k++) {
            a0 = FloatVector.broadcast(F, x[x0 + k]).fma(FloatVector.fromArray(F, packed, w0 + k * LANES), a0);
        }
        store(a0, y, i * out, p * LANES, out);
    }

    /** Writes the outputs of rows {@code r .. r+L-1} of one token, dropping the padding rows past {@code out}. */
    private static void store(FloatVector acc, float[] y, int rowOffset, int r, int out) {
        if (r + LANES <= out) acc.intoArray(y, rowOffset + r);
        else acc.intoArray(y, rowOffset + r, F.indexInRange(r, out));
    }

    /** Lane sum of a dot product's accumulator plus its scalar tail {@code [bound, len)}. */
    private static float finish(FloatVector acc, float[] a, int aOff, float[] b, int bOff, int bound, int len) {
        float tail = 0f;
        for (int k = bound; k < len; k++) tail += a[aOff + k] * b[bOff + k];
        return laneSum(acc) + tail;
    }

    /**
     * Sum of the lanes, first to last. {@code reduceLanes(ADD)} leaves the order of a float sum
     * unspecified, and the interpreter and C2 do pick different orders, so the same input could round
     * differently before and after compilation; a fixed order keeps every result reproducible.
     */
    private static float laneSum(FloatVector v) {
        float[] lanes = v.toArray();
        float sum = 0f;
        for (float lane : lanes) sum += lane;
        return sum;
    }

    /**
     * {@code x[k] = exp(x[k] - shift)} with {@link Math#exp}, which HotSpot computes identically in
     * every tier; the Vector API's lanewise EXP does not (a Java fallback before C2, a library call after).
     */
    private static void expShifted(float[] x, int off, int len, float shift) {
        for (int k = 0; k < len; k++) x[off + k] = (float) Math.exp(x[off + k] - shift);
    }

    @Override
    public float dot(float[] a, int aOff, float[] b, int bOff, int len) {
        FloatVector acc = FloatVector.zero(F);
        int bound = F.loopBound(len);
        for (int k = 0; k < bound; k += LANES) {
            acc = FloatVector.fromArray(F, a, aOff + k).fma(FloatVector.fromArray(F, b, bOff + k), acc);
        }
        return finish(acc, a, aOff, b, bOff, bound, len);
    }

    @Override
    public void axpy(float a, float[] x, int xOff, float[] y, int yOff, int len) {
        FloatVector va = FloatVector.broadcast(F, a);
        int bound = F.loopBound(len);
        int k = 0;
        for (; k < bound; k += LANES) {
            FloatVector.fromArray(F, x, xOff + k)
                    .fma(va, FloatVector.fromArray(F, y, yOff + k))
                    .intoArray(y, yOff + k);
        }
        for (; k < len; k++) y[yOff + k] += a * x[xOff + k];
    }

    @Override
    public void rmsnorm(float[] x, int xOff, float[] weight, float eps, float[] out, int outOff, int size) {
        FloatVector acc = FloatVector.zero(F);
        int bound = F.loopBound(size);
        int k = 0;
        for (; k < bound; k += LANES) {
            FloatVector v = FloatVector.fromArray(F, x, xOff + k);
            acc = v.fma(v, acc);
        }
        float ss = laneSum(acc);
        for (; k < size; k++) ss += x[xOff + k] * x[xOff + k];
        float scale = (float) (1.0 / Math.sqrt(ss / size + eps));
        for (k = 0; k < bound; k += LANES) {
            FloatVector.fromArray(F, x, xOff + k).mul(scale)
                    .mul(FloatVector.fromArray(F, weight, k))
                    .intoArray(out, outOff + k);
        }
        for (; k < size; k++) out[outOff + k] = weight[k] * (scale * x[xOff + k]);
    }

    @Override
    public void softmax(float[] x, int off, int len) {
        int bound = F.loopBound(len);
        FloatVector vmax = FloatVector.broadcast(F, Float.NEGATIVE_INFINITY);
        int k = 0;
        for (; k < bound; k += LANES) vmax = vmax.max(FloatVector.fromArray(F, x, off + k));
        float max = vmax.reduceLanes(VectorOperators.MAX);
        for (; k < len; k++) max = Math.max(max, x[off + k]);
        expShifted(x, off, len, max);
        FloatVector vsum = FloatVector.zero(F);
        for (k = 0; k < bound; k += LANES) vsum = vsum.add(FloatVector.fromArray(F, x, off + k));
        float sum = laneSum(vsum);
        for (; k < len; k++) sum += x[off + k];
        float inv = 1f / sum;
        for (k = 0; k < bound; k += LANES) FloatVector.fromArray(F, x, off + k).mul(inv).intoArray(x, off + k);
        for (; k < len; k++) x[off + k] *= inv;
    }

    @Override
    public void siluMul(float[] gate, float[] up, int len) {
        int bound = F.loopBound(len);
        int k = 0;
        for (; k < bound; k += LANES) {
            FloatVector g = FloatVector.fromArray(F, gate, k);
            float[] e = g.neg().toArray();
            for (int j = 0; j < LANES; j++) e[j] = (float) Math.exp(e[j]);
            FloatVector sig = FloatVector.fromArray(F, e, 0).add(1f);
            g.div(sig).mul(FloatVector.fromArray(F, up, k)).intoArray(gate, k);
        }
        for (; k < len; k++) {
            float g = gate[k];
            gate[k] = g / (1f + (float) Math.exp(-g)) * up[k];
        }
    }
}
