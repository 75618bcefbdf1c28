package jquant.runtime.kernels;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Kernels} with the incubating Vector API at {@link VectorWidth} ({@code L} lanes): the
 * element-wise and reduction steps of the forward pass (norms, softmax, attention's dot products and
 * weighted sums, SwiGLU). Sums of lanes run in a fixed order, so results do not depend on the JIT tier.
 */
public final class VectorKernels implements Kernels {
    private static final VectorSpecies<Float> F = VectorWidth.FLOATS;
    private static final int LANES = F.length();

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

    /**
     * Element by element: {@link Math#exp} has no vector form that rounds the same in every JIT tier,
     * and with it scalar, lanes would gain nothing but allocations.
     */
    @Override
    public void siluMul(float[] gate, float[] up, int len) {
        for (int k = 0; k < len; k++) {
            float g = gate[k];
            gate[k] = g / (1f + (float) Math.exp(-g)) * up[k];
        }
    }

}
