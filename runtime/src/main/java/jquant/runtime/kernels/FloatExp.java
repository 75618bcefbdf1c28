package jquant.runtime.kernels;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@code (float) Math.exp(x)} for float {@code x}, a vector of lanes at a time and bit for bit: exp is
 * evaluated in double lanes to about 2^-46 of its value, then rounded to float, which gives Math.exp's
 * float unless the double lies so near a midpoint between two floats that the two doubles could round
 * apart; those lanes (a band of 2^9 of the 2^29 doubles between two floats), and x outside the range
 * where exp is a normal float, take Math.exp itself. With Math.exp per element, SwiGLU's gating alone was a sixteenth of a two-thread
 * decode step on one thread (bench/RESULTS.md).
 *
 * <pre>
 *   n = rint(x · log2 e),  r = x − n · ln 2  (|r| ≤ 0.35; ln 2 in two parts, so n · LN2_HI is exact)
 *   exp(x) = 2^n · Σ_{k ≤ 12} r^k / k!   (truncation below 2^-50 of the sum)
 * </pre>
 */
final class FloatExp {

    /** Double lanes: as many as a half-width float vector holds, so one conversion each way. */
    static final VectorSpecies<Double> D = DoubleVector.SPECIES_PREFERRED.withShape(VectorWidth.FLOATS.vectorShape());
    static final VectorSpecies<Long> L = LongVector.SPECIES_PREFERRED.withShape(VectorWidth.FLOATS.vectorShape());
    static final VectorSpecies<Float> H = VectorSpecies.of(float.class, VectorShape.forBitSize(VectorWidth.FLOATS.vectorBitSize() / 2));
    static final int LANES = D.length();

    /** exp(x) is a normal float, neither overflowing nor below 2^-126, for x in this range. */
    private static final double LOW = -87.3, HIGH = 88.7;
    private static final double LOG2E = 1.4426950408889634;
    /** ln 2 = LN2_HI + LN2_LO, LN2_HI with its low 21 bits zero: n · LN2_HI is exact for |n| < 2^21. */
    private static final double LN2_HI = Double.longBitsToDouble(0x3FE62E42FEE00000L);
    private static final double LN2_LO = Math.log(2) - LN2_HI;
    /** 1.5 · 2^52: x · log2e + SHIFT holds rint(x · log2e) in its low mantissa bits. */
    private static final double SHIFT = 0x1.8p52;
    private static final long SHIFT_BITS = Double.doubleToRawLongBits(SHIFT);
    private static final double[] INVERSE_FACTORIALS = new double[13];

    static {
        double f = 1;
        for (int k = 0; k < INVERSE_FACTORIALS.length; k++) {
            if (k > 0) f *= k;
            INVERSE_FACTORIALS[k] = 1 / f;
        }
    }

    /** Bits a double's mantissa loses in a float; the rounding turns at half of them. */
    private static final long DROPPED = (1L << 29) - 1, HALF = 1L << 28;
    /**
     * Double ulps within which a midpoint makes the lane take Math.exp: above this lane's error (well under
     * 2^6 ulps: the polynomial's truncation and rounding) plus Math.exp's (one ulp).
     */
    private static final long GUARD = 1L << 8;

    private FloatExp() {}

    /** The double lanes of exp(x), to about 2^-46 of each, for x in [LOW, HIGH]. */
    static DoubleVector exp(DoubleVector x) {
        DoubleVector t = x.fma(LOG2E, SHIFT);
        DoubleVector n = t.sub(SHIFT);
        DoubleVector r = n.fma(DoubleVector.broadcast(D, -LN2_HI), x);
        r = n.fma(DoubleVector.broadcast(D, -LN2_LO), r);
        // Horner's steps written out: in a loop, p would reach each step as a loop-carried receiver of a class C2 does
        // not know, and C2 then compiled fma as a virtual call in some runs, the Vector API's plain-Java path.
        DoubleVector p = DoubleVector.broadcast(D, INVERSE_FACTORIALS[12]);
        p = p.fma(r, DoubleVector.broadcast(D, INVERSE_FACTORIALS[11]));
        p = p.fma(r, DoubleVector.broadcast(D, INVERSE_FACTORIALS[10]));
        p = p.fma(r, DoubleVector.broadcast(D, INVERSE_FACTORIALS[9]));
        p = p.fma(r, DoubleVector.broadcast(D, INVERSE_FACTORIALS[8]));
        p = p.fma(r, DoubleVector.broadcast(D, INVERSE_FACTORIALS[7]));
        p = p.fma(r, DoubleVector.broadcast(D, INVERSE_FACTORIALS[6]));
        p = p.fma(r, DoubleVector.broadcast(D, INVERSE_FACTORIALS[5]));
        p = p.fma(r, DoubleVector.broadcast(D, INVERSE_FACTORIALS[4]));
        p = p.fma(r, DoubleVector.broadcast(D, INVERSE_FACTORIALS[3]));
        p = p.fma(r, DoubleVector.broadcast(D, INVERSE_FACTORIALS[2]));
        p = p.fma(r, DoubleVector.broadcast(D, INVERSE_FACTORIALS[1]));
        p = p.fma(r, DoubleVector.broadcast(D, INVERSE_FACTORIALS[0]));
        LongVector scale = t.reinterpretAsLongs().sub(SHIFT_BITS - 1023).lanewise(VectorOperators.LSHL, 52);
        return p.mul(scale.reinterpretAsDoubles());
    }

    /** Lanes whose float is not certain: x outside [LOW, HIGH] (or NaN), or e (exp(x)) within GUARD ulps of a rounding midpoint. */
    static VectorMask<Double> uncertain(DoubleVector x, DoubleVector e) {
        LongVector off = e.reinterpretAsLongs().and(DROPPED).sub(HALF).abs();
        return x.compare(VectorOperators.GE, LOW).and(x.compare(VectorOperators.LE, HIGH)).not()
                .or(off.compare(VectorOperators.LE, GUARD).cast(D));
    }

    /** Lanes of {@code x} as doubles. */
    static DoubleVector widen(FloatVector x) {
        return (DoubleVector) x.convertShape(VectorOperators.F2D, D, 0);
    }

    /** Lanes of {@code e} rounded to float. */
    static FloatVector narrow(DoubleVector e) {
        return (FloatVector) e.convertShape(VectorOperators.D2F, H, 0);
    }
}
