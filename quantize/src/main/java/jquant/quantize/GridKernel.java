package jquant.quantize;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The inner loop of the clip search: round one channel onto one grid and measure the error,
 * without writing the codes. SIMD ({@link #stats}) and its scalar twin ({@link #statsScalar})
 * produce identical codes (the same float operations: multiply, add, clamp, truncate) and sums
 * that differ only in summation order.
 *
 * <p>Grid, as {@link SymmetricChannelQuantizer} defines it: field
 * {@code f = trunc(clamp(w · inverseSpacing + offset, 0, maxField))}, int8 value
 * {@code v = valueStep · f − maxLevel}, level {@code unit · v}. The statistics are of the residual
 * {@code d = w − unit · v} against the grid's own level (small, so float sums stay accurate):
 * {@code out = [Σ d², Σ d·v, Σ v²]}. Then, with the least-squares scale,
 * {@code 1 − cos²(w, v) = (Σd² − (Σd·v)²/Σv²) / Σw²}, a difference of small quantities rather
 * than of two numbers near ‖w‖²·‖v‖².
 *
 * <p>Float partial sums are flushed to double every {@link #BLOCK} weights; Σv² is summed exactly
 * in int lanes.
 */
final class GridKernel {

    static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_PREFERRED;
    static final VectorSpecies<Integer> INTS = IntVector.SPECIES_PREFERRED;
    /** Weights per float partial sum; with |v| ≤ 127 an int lane's Σv² stays far below 2^31. */
    static final int BLOCK = 1024;

    private GridKernel() {}

    /** One bit width's grid constants: everything the inner loop needs besides 1/spacing. */
    record Shape(float offset, int maxField, int valueStep, int maxLevel) {
        static Shape of(int bits) {
            return bits == QuantLimits.MAX_BITS
                    ? new Shape(QuantLimits.INT8_MAX + 0.5f, 2 * QuantLimits.INT8_MAX, 1, QuantLimits.INT8_MAX)
                    : new Shape(1 << (bits - 1), (1 << bits) - 1, 2, (1 << bits) - 1);
        }

        /** Level of int8 value 1 in units of the level spacing: ½ on the odd mid-rise grid, 1 on the int8 grid. */
        float unitPerSpacing() { return 1f / valueStep; }
    }

    /** The int8 value of one weight. */
    static int code(Shape shape, float w, float inverseSpacing) {
        float x = Math.min(Math.max(w * inverseSpacing + shape.offset, 0f), shape.maxField);
        return shape.valueStep * (int) x - shape.maxLevel;
    }

    static void statsScalar(float[] data, int offset, int length, Shape shape, float inverseSpacing, float unit, double[] out) {
        double sumDD = 0, sumDV = 0;
        long sumVV = 0;
        for (int start = 0; start < length; start += BLOCK) {
            int end = Math.min(length, start + BLOCK);
            float dd = 0, dv = 0;
            for (int j = start; j < end; j++) {
                float w = data[offset + j];
                int v = code(shape, w, inverseSpacing);
                float d = w - unit * v;
                dd += d * d;
                dv += d * v;
                sumVV += v * v;
            }
            sumDD += dd;
            sumDV += dv;
        }
        out[0] = sumDD;
        out[1] = sumDV;
        out[2] = sumVV;
    }

    static void stats(float[] data, int offset, int length, Shape shape, float inverseSpacing, float unit, double[] out) {
        int lanes = FLOATS.length();
        if (INTS.length() != lanes || length < lanes) {
            statsScalar(data, offset, length, shape, inverseSpacing, unit, out);
            return;
        }
        FloatVector inverse = FloatVector.broadcast(FLOATS, inverseSpacing);
        FloatVector shift = FloatVector.broadcast(FLOATS, shape.offset);
        FloatVector top = FloatVector.broadcast(FLOATS, shape.maxField);
        FloatVector zero = FloatVector.zero(FLOATS);
        FloatVector unitV = FloatVector.broadcast(FLOATS, unit);
        IntVector step = IntVector.broadcast(INTS, shape.valueStep);
        IntVector bias = IntVector.broadcast(INTS, shape.maxLevel);
        double sumDD = 0, sumDV = 0;
        long sumVV = 0;
        int vectorEnd = FLOATS.loopBound(length);
        for (int start = 0; start < vectorEnd; start += BLOCK) {
            int end = Math.min(vectorEnd, start + BLOCK);
            FloatVector dd = zero, dv = zero;
            IntVector vv = IntVector.zero(INTS);
            for (int j = start; j < end; j += lanes) {
                FloatVector w = FloatVector.fromArray(FLOATS, data, offset + j);
                FloatVector x = w.mul(inverse).add(shift).max(zero).min(top);
                IntVector v = ((IntVector) x.convert(VectorOperators.F2I, 0)).mul(step).sub(bias);
                FloatVector vf = (FloatVector) v.convert(VectorOperators.I2F, 0);
                FloatVector d = w.sub(unitV.mul(vf));
                dd = d.fma(d, dd);
                dv = d.fma(vf, dv);
                vv = v.mul(v).add(vv);
            }
            sumDD += laneSum(dd);
            sumDV += laneSum(dv);
            sumVV += vv.reduceLanesToLong(VectorOperators.ADD);
        }
        double[] tail = new double[3];
        statsScalar(data, offset + vectorEnd, length - vectorEnd, shape, inverseSpacing, unit, tail);
        out[0] = sumDD + tail[0];
        out[1] = sumDV + tail[1];
        out[2] = sumVV + tail[2];
    }

    /**
     * Lanes summed first to last: {@code reduceLanes(ADD)} leaves a float sum's order open and the
     * interpreter and C2 differ, which could flip a near-tied clip choice between runs.
     */
    private static double laneSum(FloatVector v) {
        double sum = 0;
        for (float lane : v.toArray()) sum += lane;
        return sum;
    }
}
