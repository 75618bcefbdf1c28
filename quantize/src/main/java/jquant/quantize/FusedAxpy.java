package jquant.quantize;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@code y[i] = fma(a, x[i], y[i])}: the one inner loop of {@link InverseCholesky} and
 * {@link ErrorCompensatedRounding}. Every element gets one exactly rounded fused multiply-add, so
 * the SIMD kernel and its scalar twin give the same bits, and so do the algorithms built on them:
 * an element's updates always come in the algorithm's order, whatever the lanes or threads.
 */
public interface FusedAxpy {

    void doubles(double a, double[] x, int xOffset, double[] y, int yOffset, int length);

    void floats(float a, float[] x, int xOffset, float[] y, int yOffset, int length);

    /** Plain loops over {@link Math#fma}: the oracle. */
    FusedAxpy SCALAR = new FusedAxpy() {
        @Override
        public void doubles(double a, double[] x, int xOffset, double[] y, int yOffset, int length) {
            for (int i = 0; i < length; i++) y[yOffset + i] = Math.fma(a, x[xOffset + i], y[yOffset + i]);
        }

        @Override
        public void floats(float a, float[] x, int xOffset, float[] y, int yOffset, int length) {
            for (int i = 0; i < length; i++) y[yOffset + i] = Math.fma(a, x[xOffset + i], y[yOffset + i]);
        }
    };

    /** The preferred species' lanes, the scalar twin for the tail. */
    FusedAxpy VECTOR = new FusedAxpy() {
        private static final VectorSpecies<Double> DOUBLES = DoubleVector.SPECIES_PREFERRED;
        private static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_PREFERRED;

        @Override
        public void doubles(double a, double[] x, int xOffset, double[] y, int yOffset, int length) {
            DoubleVector av = DoubleVector.broadcast(DOUBLES, a);
            int bound = DOUBLES.loopBound(length), i = 0;
            for (; i < bound; i += DOUBLES.length()) {
                DoubleVector.fromArray(DOUBLES, x, xOffset + i).fma(av, DoubleVector.fromArray(DOUBLES, y, yOffset + i)).intoArray(y, yOffset + i);
            }
            SCALAR.doubles(a, x, xOffset + i, y, yOffset + i, length - i);
        }

        @Override
        public void floats(float a, float[] x, int xOffset, float[] y, int yOffset, int length) {
            FloatVector av = FloatVector.broadcast(FLOATS, a);
            int bound = FLOATS.loopBound(length), i = 0;
            for (; i < bound; i += FLOATS.length()) {
                FloatVector.fromArray(FLOATS, x, xOffset + i).fma(av, FloatVector.fromArray(FLOATS, y, yOffset + i)).intoArray(y, yOffset + i);
            }
            SCALAR.floats(a, x, xOffset + i, y, yOffset + i, length - i);
        }
    };
}
