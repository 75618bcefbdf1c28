package jquant.runtime.kernels;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Kernels} with the incubating Vector API at the platform's preferred width.
 *
 * <p>The matrix product works on tiles of 4 tokens × 4 weight rows: per step it loads 4 activation
 * and 4 weight vectors and issues 16 fused multiply-adds, so each weight vector fetched from memory
 * serves 4 tokens, and a block of 4 weight rows stays in cache while every token of the batch passes
 * over it (the weights are streamed once per batch). Every output element, whatever tile computed
 * it, is summed in the same order (lane-wise over full vectors, then {@code reduceLanes}, then the
 * scalar tail), so a batch of tokens matches the same tokens one at a time to the last bit or two
 * (not always exactly: interpreted and JIT-compiled Vector API code round {@code reduceLanes} and
 * {@code EXP} differently).
 */
public final class VectorKernels implements Kernels {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final int LANES = F.length();
    /** Weight rows and tokens per tile. */
    private static final int TILE = 4;

    @Override
    public void matmulRows(float[] x, int n, int in, float[] w, int rowStart, int rowEnd, float[] y, int out) {
        int r = rowStart;
        for (; r + TILE <= rowEnd; r += TILE) {
            int i = 0;
            for (; i + TILE <= n; i += TILE) tile4x4(x, i, in, w, r, y, out);
            for (; i < n; i++) tile1x4(x, i, in, w, r, y, out);
        }
        for (; r < rowEnd; r++) {
            for (int i = 0; i < n; i++) y[i * out + r] = dot(x, i * in, w, r * in, in);
        }
    }

    private static void tile4x4(float[] x, int i, int in, float[] w, int r, float[] y, int out) {
        int x0 = i * in, x1 = x0 + in, x2 = x1 + in, x3 = x2 + in;
        int w0 = r * in, w1 = w0 + in, w2 = w1 + in, w3 = w2 + in;
        FloatVector a00 = FloatVector.zero(F), a01 = a00, a02 = a00, a03 = a00;
        FloatVector a10 = a00, a11 = a00, a12 = a00, a13 = a00;
        FloatVector a20 = a00, a21 = a00, a22 = a00, a23 = a00;
        FloatVector a30 = a00, a31 = a00, a32 = a00, a33 = a00;
        int bound = F.loopBound(in);
        for (int k = 0; k < bound; k += LANES) {
            FloatVector v0 = FloatVector.fromArray(F, w, w0 + k);
            FloatVector v1 = FloatVector.fromArray(F, w, w1 + k);
            FloatVector v2 = FloatVector.fromArray(F, w, w2 + k);
            FloatVector v3 = FloatVector.fromArray(F, w, w3 + k);
            FloatVector u = FloatVector.fromArray(F, x, x0 + k);
            a00 = u.fma(v0, a00); a01 = u.fma(v1, a01); a02 = u.fma(v2, a02); a03 = u.fma(v3, a03);
            u = FloatVector.fromArray(F, x, x1 + k);
            a10 = u.fma(v0, a10); a11 = u.fma(v1, a11); a12 = u.fma(v2, a12); a13 = u.fma(v3, a13);
            u = FloatVector.fromArray(F, x, x2 + k);
            a20 = u.fma(v0, a20); a21 = u.fma(v1, a21); a22 = u.fma(v2, a22); a23 = u.fma(v3, a23);
            u = FloatVector.fromArray(F, x, x3 + k);
            a30 = u.fma(v0, a30); a31 = u.fma(v1, a31); a32 = u.fma(v2, a32); a33 = u.fma(v3, a33);
        }
        int y0 = i * out + r, y1 = y0 + out, y2 = y1 + out, y3 = y2 + out;
        y[y0] = finish(a00, x, x0, w, w0, bound, in); y[y0 + 1] = finish(a01, x, x0, w, w1, bound, in);
        y[y0 + 2] = finish(a02, x, x0, w, w2, bound, in); y[y0 + 3] = finish(a03, x, x0, w, w3, bound, in);
        y[y1] = finish(a10, x, x1, w, w0, bound, in); y[y1 + 1] = finish(a11, x, x1, w, w1, bound, in);
        y[y1 + 2] = finish(a12, x, x1, w, w2, bound, in); y[y1 + 3] = finish(a13, x, x1, w, w3, bound, in);
        y[y2] = finish(a20, x, x2, w, w0, bound, in); y[y2 + 1] = finish(a21, x, x2, w, w1, bound, in);
        y[y2 + 2] = finish(a22, x, x2, w, w2, bound, in); y[y2 + 3] = finish(a23, x, x2, w, w3, bound, in);
        y[y3] = finish(a30, x, x3, w, w0, bound, in); y[y3 + 1] = finish(a31, x, x3, w, w1, bound, in);
        y[y3 + 2] = finish(a32, x, x3, w, w2, bound, in); y[y3 + 3] = finish(a33, x, x3, w, w3, bound, in);
    }

    /** One token against 4 weight rows: the matrix-vector case, memory-bound on the weights. */
    private static void tile1x4(float[] x, int i, int in, float[] w, int r, float[] y, int out) {
        int x0 = i * in;
        int w0 = r * in, w1 = w0 + in, w2 = w1 + in, w3 = w2 + in;
        FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
        int bound = F.loopBound(in);
        for (int k = 0; k < bound; k += LANES) {
            FloatVector u = FloatVector.fromArray(F, x, x0 + k);
            a0 = u.fma(FloatVector.fromArray(F, w, w0 + k), a0);
            a1 = u.fma(FloatVector.fromArray(F, w, w1 + k), a1);
            a2 = u.fma(FloatVector.fromArray(F, w, w2 + k), a2);
            a3 = u.fma(FloatVector.fromArray(F, w, w3 + k), a3);
        }
        int y0 = i * out + r;
        y[y0] = finish(a0, x, x0, w, w0, bound, in);
        y[y0 + 1] = finish(a1, x, x0, w, w1, bound, in);
        y[y0 + 2] = finish(a2, x, x0, w, w2, bound, in);
        y[y0 + 3] = finish(a3, x, x0, w, w3, bound, in);
    }

    /** Lane sum of a dot product's accumulator plus its scalar tail {@code [bound, len)}. */
    private static float finish(FloatVector acc, float[] a, int aOff, float[] b, int bOff, int bound, int len) {
        float tail = 0f;
        for (int k = bound; k < len; k++) tail += a[aOff + k] * b[bOff + k];
        return acc.reduceLanes(VectorOperators.ADD) + tail;
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
        float ss = acc.reduceLanes(VectorOperators.ADD);
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
        FloatVector vsum = FloatVector.zero(F);
        for (k = 0; k < bound; k += LANES) {
            FloatVector e = FloatVector.fromArray(F, x, off + k).sub(max).lanewise(VectorOperators.EXP);
            e.intoArray(x, off + k);
            vsum = vsum.add(e);
        }
        float sum = vsum.reduceLanes(VectorOperators.ADD);
        for (; k < len; k++) {
            float e = (float) Math.exp(x[off + k] - max);
            x[off + k] = e;
            sum += e;
        }
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
            FloatVector sig = g.neg().lanewise(VectorOperators.EXP).add(1f);
            g.div(sig).mul(FloatVector.fromArray(F, up, k)).intoArray(gate, k);
        }
        for (; k < len; k++) {
            float g = gate[k];
            gate[k] = g / (1f + (float) Math.exp(-g)) * up[k];
        }
    }
}
