package jquant.runtime.kernels;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Kernels} with the incubating Vector API at {@link VectorWidth} ({@code L} lanes): the
 * element-wise and reduction steps of the forward pass (norms, softmax, attention's dot products and
 * weighted sums, SwiGLU). Sums of lanes run in a fixed order, so results do not depend on the JIT tier.
 */
public sealed class VectorKernels implements Kernels permits NativeAttentionKernels {
    private static final VectorSpecies<Float> F = VectorWidth.FLOATS;
    private static final int LANES = F.length();
    /**
     * Attention rows shorter than this take the definitions ({@link #axpy}, {@link #dot}), whose small
     * methods C2 compiles within the first token; the blocked kernels are larger to compile, and warmed
     * up front they delayed a short prompt's first token.
     */
    private static final int BLOCKED_FROM = 4 * LANES;
    /** Gather indices {@code 0, L, 2L, …}: lane i of each of L consecutive spilled vectors. */
    private static final int[] LANE_STRIDES = new int[LANES];
    private static final ThreadLocal<float[]> SPILL = ThreadLocal.withInitial(() -> new float[0]);

    static {
        for (int i = 0; i < LANES; i++) LANE_STRIDES[i] = i * LANES;
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
     * differently before and after compilation; a fixed order keeps every result reproducible. The
     * lanes are read one by one ({@code LANES} is a constant, so C2 unrolls the loop into lane
     * extractions): attention calls this once per query and key, and spilling the vector to a
     * per-thread array cost a thread-local lookup each time (a tenth of a T2P prefill's profile).
     */
    private static float laneSum(FloatVector v) {
        float sum = 0f;
        for (int i = 0; i < LANES; i++) sum += v.lane(i);
        return sum;
    }

    /**
     * {@code x[k] = (float) Math.exp(x[k] - shift)}, Math.exp's bits, which HotSpot gives identically in
     * every tier, from {@link FloatExp}'s double lanes; the Vector API's lanewise EXP rounds otherwise
     * (a Java fallback before C2, a library call after).
     */
    static void expShifted(float[] x, int off, int len, float shift) {
        int k = off, end = off + len, bound = off + FloatExp.H.loopBound(len);
        for (; k < bound; k += FloatExp.LANES) {
            FloatVector v = FloatVector.fromArray(FloatExp.H, x, k).sub(shift);
            DoubleVector d = FloatExp.widen(v), e = FloatExp.exp(d);
            FloatExp.narrow(e).intoArray(x, k);
            VectorMask<Double> unsure = FloatExp.uncertain(d, e);
            if (unsure.anyTrue()) {
                for (int i = 0; i < FloatExp.LANES; i++) if (unsure.laneIsSet(i)) x[k + i] = (float) Math.exp(v.lane(i));
            }
        }
        for (; k < end; k++) x[k] = (float) Math.exp(x[k] - shift);
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

    /**
     * Four query rows at a time: each vector of positions accumulates in a register over the
     * dimensions, one load of keys serving all four rows, where {@link #axpy} per dimension would load
     * and store the scores for every multiply-add. Each element is the same fused multiply-add chain
     * over ascending d, and the tail positions the same multiply-then-add, as the default's.
     */
    @Override
    public void scores(float[] q, int qOff, int qStride, int rows, int dims, float scale,
                       float[] k, int kOff, int kStride, int len, float[] s, int sOff, int sStride) {
        if (len < BLOCKED_FROM) {
            Kernels.super.scores(q, qOff, qStride, rows, dims, scale, k, kOff, kStride, len, s, sOff, sStride);
            return;
        }
        int bound = F.loopBound(len);
        int r = 0;
        for (; r + 4 <= rows; r += 4) {
            int q0 = qOff + r * qStride, q1 = q0 + qStride, q2 = q1 + qStride, q3 = q2 + qStride;
            int s0 = sOff + r * sStride;
            for (int p = 0; p < bound; p += LANES) {
                FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
                for (int d = 0, at = kOff + p; d < dims; d++, at += kStride) {
                    FloatVector kv = FloatVector.fromArray(F, k, at);
                    a0 = kv.fma(FloatVector.broadcast(F, q[q0 + d] * scale), a0);
                    a1 = kv.fma(FloatVector.broadcast(F, q[q1 + d] * scale), a1);
                    a2 = kv.fma(FloatVector.broadcast(F, q[q2 + d] * scale), a2);
                    a3 = kv.fma(FloatVector.broadcast(F, q[q3 + d] * scale), a3);
                }
                a0.intoArray(s, s0 + p);
                a1.intoArray(s, s0 + sStride + p);
                a2.intoArray(s, s0 + 2 * sStride + p);
                a3.intoArray(s, s0 + 3 * sStride + p);
            }
        }
        for (; r < rows; r++) {
            int qr = qOff + r * qStride, sr = sOff + r * sStride;
            for (int p = 0; p < bound; p += LANES) {
                FloatVector a = FloatVector.zero(F);
                for (int d = 0, at = kOff + p; d < dims; d++, at += kStride) {
                    a = FloatVector.fromArray(F, k, at).fma(FloatVector.broadcast(F, q[qr + d] * scale), a);
                }
                a.intoArray(s, sr + p);
            }
        }
        if (bound == len) return;
        VectorMask<Float> tail = F.indexInRange(bound, len);
        for (r = 0; r < rows; r++) {
            int qr = qOff + r * qStride;
            FloatVector a = FloatVector.zero(F);
            for (int d = 0, at = kOff + bound; d < dims; d++, at += kStride) {
                a = a.add(FloatVector.fromArray(F, k, at, tail).mul(q[qr + d] * scale));   // axpy's tail: multiply, then add
            }
            a.intoArray(s, sOff + r * sStride + bound, tail);
        }
    }

    /**
     * Four rows and two value rows at a time, each load serving two or four products; each sum as
     * {@link #dot} chains it.
     * The lane sums, in lane order, run {@code L} dimensions at once: the accumulators are spilled
     * to a per-thread array and added up by strided gathers (lane j of gather i is lane i of
     * dimension j's accumulator), which costs a fraction of reading lanes one by one.
     */
    @Override
    public void weightedSums(float[] s, int sOff, int sStride, int rows, float[] v, int vOff, int vStride, int dims, int len,
                             float[] out, int outOff, int outStride) {
        int bound = F.loopBound(len);
        int r = 0;
        if (dims % LANES == 0 && len >= BLOCKED_FROM) {
            float[] spill = SPILL.get();
            if (spill.length < 4 * dims * (LANES + 1)) SPILL.set(spill = new float[4 * dims * (LANES + 1)]);
            int rowSpill = dims * LANES, tails = 4 * rowSpill;
            for (; r + 4 <= rows; r += 4) {
                int s0 = sOff + r * sStride, s1 = s0 + sStride, s2 = s1 + sStride, s3 = s2 + sStride;
                for (int d = 0; d < dims; d += 2) {
                    int vd = vOff + d * vStride, ve = vd + vStride;
                    FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
                    for (int p = 0; p < bound; p += LANES) {
                        FloatVector vv = FloatVector.fromArray(F, v, vd + p), vw = FloatVector.fromArray(F, v, ve + p);
                        FloatVector x0 = FloatVector.fromArray(F, s, s0 + p), x1 = FloatVector.fromArray(F, s, s1 + p);
                        FloatVector x2 = FloatVector.fromArray(F, s, s2 + p), x3 = FloatVector.fromArray(F, s, s3 + p);
                        a0 = x0.fma(vv, a0);
                        a1 = x1.fma(vv, a1);
                        a2 = x2.fma(vv, a2);
                        a3 = x3.fma(vv, a3);
                        b0 = x0.fma(vw, b0);
                        b1 = x1.fma(vw, b1);
                        b2 = x2.fma(vw, b2);
                        b3 = x3.fma(vw, b3);
                    }
                    a0.intoArray(spill, d * LANES);
                    a1.intoArray(spill, rowSpill + d * LANES);
                    a2.intoArray(spill, 2 * rowSpill + d * LANES);
                    a3.intoArray(spill, 3 * rowSpill + d * LANES);
                    b0.intoArray(spill, (d + 1) * LANES);
                    b1.intoArray(spill, rowSpill + (d + 1) * LANES);
                    b2.intoArray(spill, 2 * rowSpill + (d + 1) * LANES);
                    b3.intoArray(spill, 3 * rowSpill + (d + 1) * LANES);
                    for (int e = d; e < d + 2; e++) {
                        int ve0 = vOff + e * vStride;
                        float t0 = 0f, t1 = 0f, t2 = 0f, t3 = 0f;
                        for (int p = bound; p < len; p++) {
                            float x = v[ve0 + p];
                            t0 += s[s0 + p] * x;
                            t1 += s[s1 + p] * x;
                            t2 += s[s2 + p] * x;
                            t3 += s[s3 + p] * x;
                        }
                        spill[tails + e] = t0;
                        spill[tails + dims + e] = t1;
                        spill[tails + 2 * dims + e] = t2;
                        spill[tails + 3 * dims + e] = t3;
                    }
                }
                for (int j = 0; j < 4; j++) {
                    for (int d0 = 0; d0 < dims; d0 += LANES) {
                        FloatVector sum = FloatVector.zero(F);
                        for (int i = 0, at = j * rowSpill + d0 * LANES; i < LANES; i++) sum = sum.add(FloatVector.fromArray(F, spill, at + i, LANE_STRIDES, 0));
                        sum.add(FloatVector.fromArray(F, spill, tails + j * dims + d0)).intoArray(out, outOff + (r + j) * outStride + d0);
                    }
                }
            }
        }
        for (; r < rows; r++) {
            for (int d = 0; d < dims; d++) out[outOff + r * outStride + d] = dot(s, sOff + r * sStride, v, vOff + d * vStride, len);
        }
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
        // Plain loops: in decode's profile C2 left this method's lanewise MAX, ADD and MUL on the Vector
        // API's slow path (allocating per call). The sum keeps the vector kernels' order: LANES chains
        // over k ≡ c, added first to last, then the tail.
        float max = Float.NEGATIVE_INFINITY;
        for (int k = off; k < off + len; k++) max = Math.max(max, x[k]);
        expShifted(x, off, len, max);
        normalize(x, off, len);
    }

    /** Softmax's last step on its exponentials: each times 1 / their sum, the sum in the vector kernels' order. */
    static void normalize(float[] x, int off, int len) {
        int bound = F.loopBound(len);
        float sum = 0f;
        for (int c = 0; c < LANES; c++) {
            float chain = 0f;
            for (int k = c; k < bound; k += LANES) chain += x[off + k];
            sum += chain;
        }
        for (int k = bound; k < len; k++) sum += x[off + k];
        float inv = 1f / sum;
        for (int k = off; k < off + len; k++) x[k] *= inv;
    }

    /** Math.exp's bits from {@link FloatExp}'s double lanes; the division and product lane by lane as the scalar kernel's. */
    @Override
    public void siluMul(float[] gate, float[] up, int off, int len) {
        int k = off, end = off + len, bound = off + FloatExp.H.loopBound(len);
        for (; k < bound; k += FloatExp.LANES) {
            FloatVector g = FloatVector.fromArray(FloatExp.H, gate, k);
            DoubleVector d = FloatExp.widen(g.neg()), e = FloatExp.exp(d);
            g.div(FloatExp.narrow(e).add(1f)).mul(FloatVector.fromArray(FloatExp.H, up, k)).intoArray(gate, k);
            VectorMask<Double> unsure = FloatExp.uncertain(d, e);
            if (unsure.anyTrue()) {
                for (int i = 0; i < FloatExp.LANES; i++) if (unsure.laneIsSet(i)) gate[k + i] = ScalarKernels.silu(g.lane(i), up[k + i]);
            }
        }
        for (; k < end; k++) gate[k] = ScalarKernels.silu(gate[k], up[k]);
    }
}
