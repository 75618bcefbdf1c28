package jquant.runtime.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import org.junit.jupiter.api.Test;

/**
 * The vector kernels' exp ({@link FloatExp}) against {@code (float) Math.exp}, bit for bit: SwiGLU's
 * gating and the softmax's exponentials of the vector kernels equal the scalar formulas over a sweep
 * of twenty million float bit patterns spread over the whole range (the finite ones, both infinities,
 * NaNs, zeros, subnormals, and the ends of the range where exp is a normal float), and the sweep
 * reaches lanes that the midpoint guard sends to Math.exp. ({@code ./run-tests} runs it again at 256
 * and 128 bits.)
 */
class FloatExpTest {

    private static final int STRIDE = 211;

    /** Every STRIDE-th float bit pattern from {@code first}, then ±0, ±∞, NaN and the floats around the range's ends. */
    private static float[] sweep(int first) {
        float[] special = {0f, -0f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN, Float.MIN_VALUE, -Float.MIN_VALUE,
            -87.3f, Math.nextDown(-87.3f), Math.nextUp(-87.3f), 88.7f, Math.nextDown(88.7f), Math.nextUp(88.7f), -88.72f, 88.72f, -103.97f};
        int n = (int) ((1L << 32) / STRIDE);
        float[] x = new float[n + special.length];
        for (int i = 0; i < n; i++) x[i] = Float.intBitsToFloat(first + i * STRIDE);
        System.arraycopy(special, 0, x, n, special.length);
        return x;
    }

    @Test
    void siluMulGivesTheScalarKernelsBits() {
        float[] gate = sweep(7), up = new float[gate.length];
        SplittableRandom rnd = new SplittableRandom(3);
        for (int i = 0; i < up.length; i++) up[i] = (float) (rnd.nextDouble() * 4 - 2);
        float[] vector = gate.clone(), scalar = gate.clone();
        new VectorKernels().siluMul(vector, up, 0, gate.length);
        new ScalarKernels().siluMul(scalar, up, 0, gate.length);
        for (int i = 0; i < gate.length; i++) {
            if (Float.floatToRawIntBits(vector[i]) != Float.floatToRawIntBits(scalar[i]) && !(Float.isNaN(vector[i]) && Float.isNaN(scalar[i]))) {
                throw new AssertionError("silu(" + gate[i] + ") · " + up[i] + ": vector " + vector[i] + ", scalar " + scalar[i]);
            }
        }
    }

    @Test
    void theSoftmaxExponentialsAreMathExps() {
        float[] x = sweep(5), got = x.clone();
        float shift = 1.5f;
        VectorKernels.expShifted(got, 0, x.length, shift);
        for (int i = 0; i < x.length; i++) {
            float want = (float) Math.exp(x[i] - shift);
            if (Float.floatToRawIntBits(got[i]) != Float.floatToRawIntBits(want) && !(Float.isNaN(got[i]) && Float.isNaN(want))) {
                throw new AssertionError("exp(" + x[i] + " - " + shift + "): vector " + got[i] + ", Math.exp " + want);
            }
        }
    }

    @Test
    void theSweepReachesLanesTheGuardSendsToMathExp() {
        float[] x = sweep(5);
        int guarded = 0;
        for (int k = 0; k + FloatExp.LANES <= x.length; k += FloatExp.LANES) {
            DoubleVector d = FloatExp.widen(FloatVector.fromArray(FloatExp.H, x, k));
            VectorMask<Double> unsure = FloatExp.uncertain(d, FloatExp.exp(d));
            if (!unsure.anyTrue()) continue;
            for (int i = 0; i < FloatExp.LANES; i++) {
                double v = d.lane(i);
                if (v >= -87.3 && v <= 88.7 && unsure.laneIsSet(i)) guarded++;
            }
        }
        assertThat(guarded).as("in-range lanes near a midpoint").isPositive();
    }
}
