package jquant.quantize;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The inner loops of {@link InverseCholesky} and {@link ErrorCompensatedRounding}: fused multiply-adds
 * {@code y = fma(a, x, y)}, one row at a time ({@link #floats}) or a tile of rows at once ({@link #tile}).
 * Every element gets one exactly rounded fused multiply-add per term, terms in the order the caller
 * gives, so the SIMD kernel and its scalar twin give the same bits, and so do the algorithms built on
 * them: an element's updates always come in the algorithm's order, whatever the lanes, tiles or threads.
 */
public interface FusedAxpy {

    /** {@code y[yOffset + i] = fma(a, x[xOffset + i], y[yOffset + i])} for {@code i < length}. */
    void floats(float a, float[] x, int xOffset, float[] y, int yOffset, int length);

    /**
     * A matrix product accumulated in place, term by term: for every row {@code r < rows} and column
     * {@code c ∈ [from, to)}, {@code y[r][c] = fma(a[r][k], x[k][c], y[r][c])} for {@code k = 0 … depth−1}
     * in that order, where {@code a[r][k] = a[aOffset + r·aStride + k]}, {@code x[k][c] = x[xOffset + k·xStride + c]}
     * and {@code y[r][c] = y[yOffset + r·yStride + c]}. Each x row serves several rows of y from registers,
     * which is what makes the blocked algorithms compute-bound rather than memory-bound.
     */
    void tile(float[] a, int aOffset, int aStride, float[] x, int xOffset, int xStride, float[] y, int yOffset, int yStride,
              int rows, int depth, int from, int to);

    /** Plain loops over {@link Math#fma}: the oracle. */
    FusedAxpy SCALAR = new FusedAxpy() {
        @Override
        public void floats(float a, float[] x, int xOffset, float[] y, int yOffset, int length) {
            for (int i = 0; i < length; i++) y[yOffset + i] = Math.fma(a, x[xOffset + i], y[yOffset + i]);
        }

        @Override
        public void tile(float[] a, int aOffset, int aStride, float[] x, int xOffset, int xStride, float[] y, int yOffset, int yStride,
                         int rows, int depth, int from, int to) {
            for (int r = 0; r < rows; r++) {
                for (int c = from; c < to; c++) {
                    float acc = y[yOffset + r * yStride + c];
                    for (int k = 0; k < depth; k++) acc = Math.fma(a[aOffset + r * aStride + k], x[xOffset + k * xStride + c], acc);
                    y[yOffset + r * yStride + c] = acc;
                }
            }
        }
    };

    /** The preferred species' lanes, the scalar twin for the tails. */
    FusedAxpy VECTOR = new FusedAxpy() {
        private static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_PREFERRED;
        private static final int LANES = FLOATS.length();

        @Override
        public void floats(float a, float[] x, int xOffset, float[] y, int yOffset, int length) {
            FloatVector av = FloatVector.broadcast(FLOATS, a);
            int bound = FLOATS.loopBound(length), i = 0;
            for (; i < bound; i += LANES) {
                FloatVector.fromArray(FLOATS, x, xOffset + i).fma(av, FloatVector.fromArray(FLOATS, y, yOffset + i)).intoArray(y, yOffset + i);
            }
            SCALAR.floats(a, x, xOffset + i, y, yOffset + i, length - i);
        }

        /**
         * Four rows by four vectors of columns in registers (sixteen accumulators, four loads of x and four
         * broadcasts per sixteen multiply-adds), then four rows by two vectors, then one row at a time for
         * the rows left over.
         */
        @Override
        public void tile(float[] a, int aOffset, int aStride, float[] x, int xOffset, int xStride, float[] y, int yOffset, int yStride,
                         int rows, int depth, int from, int to) {
            int wideEnd = from + (to - from) / (4 * LANES) * (4 * LANES);
            int columnsEnd = from + (to - from) / (2 * LANES) * (2 * LANES);
            int r = 0;
            for (; r + 4 <= rows; r += 4) {
                int a0 = aOffset + r * aStride, y0 = yOffset + r * yStride, y1 = y0 + yStride, y2 = y1 + yStride, y3 = y2 + yStride;
                for (int c = from; c < wideEnd; c += 4 * LANES) {
                    FloatVector p00 = FloatVector.fromArray(FLOATS, y, y0 + c), p01 = FloatVector.fromArray(FLOATS, y, y0 + c + LANES);
                    FloatVector p02 = FloatVector.fromArray(FLOATS, y, y0 + c + 2 * LANES), p03 = FloatVector.fromArray(FLOATS, y, y0 + c + 3 * LANES);
                    FloatVector p10 = FloatVector.fromArray(FLOATS, y, y1 + c), p11 = FloatVector.fromArray(FLOATS, y, y1 + c + LANES);
                    FloatVector p12 = FloatVector.fromArray(FLOATS, y, y1 + c + 2 * LANES), p13 = FloatVector.fromArray(FLOATS, y, y1 + c + 3 * LANES);
                    FloatVector p20 = FloatVector.fromArray(FLOATS, y, y2 + c), p21 = FloatVector.fromArray(FLOATS, y, y2 + c + LANES);
                    FloatVector p22 = FloatVector.fromArray(FLOATS, y, y2 + c + 2 * LANES), p23 = FloatVector.fromArray(FLOATS, y, y2 + c + 3 * LANES);
                    FloatVector p30 = FloatVector.fromArray(FLOATS, y, y3 + c), p31 = FloatVector.fromArray(FLOATS, y, y3 + c + LANES);
                    FloatVector p32 = FloatVector.fromArray(FLOATS, y, y3 + c + 2 * LANES), p33 = FloatVector.fromArray(FLOATS, y, y3 + c + 3 * LANES);
                    for (int k = 0; k < depth; k++) {
                        int xk = xOffset + k * xStride + c;
                        FloatVector u0 = FloatVector.fromArray(FLOATS, x, xk), u1 = FloatVector.fromArray(FLOATS, x, xk + LANES);
                        FloatVector u2 = FloatVector.fromArray(FLOATS, x, xk + 2 * LANES), u3 = FloatVector.fromArray(FLOATS, x, xk + 3 * LANES);
                        FloatVector b = FloatVector.broadcast(FLOATS, a[a0 + k]);
                        p00 = u0.fma(b, p00);
                        p01 = u1.fma(b, p01);
                        p02 = u2.fma(b, p02);
                        p03 = u3.fma(b, p03);
                        b = FloatVector.broadcast(FLOATS, a[a0 + aStride + k]);
                        p10 = u0.fma(b, p10);
                        p11 = u1.fma(b, p11);
                        p12 = u2.fma(b, p12);
                        p13 = u3.fma(b, p13);
                        b = FloatVector.broadcast(FLOATS, a[a0 + 2 * aStride + k]);
                        p20 = u0.fma(b, p20);
                        p21 = u1.fma(b, p21);
                        p22 = u2.fma(b, p22);
                        p23 = u3.fma(b, p23);
                        b = FloatVector.broadcast(FLOATS, a[a0 + 3 * aStride + k]);
                        p30 = u0.fma(b, p30);
                        p31 = u1.fma(b, p31);
                        p32 = u2.fma(b, p32);
                        p33 = u3.fma(b, p33);
                    }
                    p00.intoArray(y, y0 + c);
                    p01.intoArray(y, y0 + c + LANES);
                    p02.intoArray(y, y0 + c + 2 * LANES);
                    p03.intoArray(y, y0 + c + 3 * LANES);
                    p10.intoArray(y, y1 + c);
                    p11.intoArray(y, y1 + c + LANES);
                    p12.intoArray(y, y1 + c + 2 * LANES);
                    p13.intoArray(y, y1 + c + 3 * LANES);
                    p20.intoArray(y, y2 + c);
                    p21.intoArray(y, y2 + c + LANES);
                    p22.intoArray(y, y2 + c + 2 * LANES);
                    p23.intoArray(y, y2 + c + 3 * LANES);
                    p30.intoArray(y, y3 + c);
                    p31.intoArray(y, y3 + c + LANES);
                    p32.intoArray(y, y3 + c + 2 * LANES);
                    p33.intoArray(y, y3 + c + 3 * LANES);
                }
                for (int c = wideEnd; c < columnsEnd; c += 2 * LANES) {
                    FloatVector p0 = FloatVector.fromArray(FLOATS, y, y0 + c), q0 = FloatVector.fromArray(FLOATS, y, y0 + c + LANES);
                    FloatVector p1 = FloatVector.fromArray(FLOATS, y, y1 + c), q1 = FloatVector.fromArray(FLOATS, y, y1 + c + LANES);
                    FloatVector p2 = FloatVector.fromArray(FLOATS, y, y2 + c), q2 = FloatVector.fromArray(FLOATS, y, y2 + c + LANES);
                    FloatVector p3 = FloatVector.fromArray(FLOATS, y, y3 + c), q3 = FloatVector.fromArray(FLOATS, y, y3 + c + LANES);
                    for (int k = 0; k < depth; k++) {
                        int xk = xOffset + k * xStride + c;
                        FloatVector u = FloatVector.fromArray(FLOATS, x, xk), v = FloatVector.fromArray(FLOATS, x, xk + LANES);
                        FloatVector b0 = FloatVector.broadcast(FLOATS, a[a0 + k]);
                        p0 = u.fma(b0, p0);
                        q0 = v.fma(b0, q0);
                        FloatVector b1 = FloatVector.broadcast(FLOATS, a[a0 + aStride + k]);
                        p1 = u.fma(b1, p1);
                        q1 = v.fma(b1, q1);
                        FloatVector b2 = FloatVector.broadcast(FLOATS, a[a0 + 2 * aStride + k]);
                        p2 = u.fma(b2, p2);
                        q2 = v.fma(b2, q2);
                        FloatVector b3 = FloatVector.broadcast(FLOATS, a[a0 + 3 * aStride + k]);
                        p3 = u.fma(b3, p3);
                        q3 = v.fma(b3, q3);
                    }
                    p0.intoArray(y, y0 + c);
                    q0.intoArray(y, y0 + c + LANES);
                    p1.intoArray(y, y1 + c);
                    q1.intoArray(y, y1 + c + LANES);
                    p2.intoArray(y, y2 + c);
                    q2.intoArray(y, y2 + c + LANES);
                    p3.intoArray(y, y3 + c);
                    q3.intoArray(y, y3 + c + LANES);
                }
            }
            for (; r < rows; r++) {
                int a0 = aOffset + r * aStride, y0 = yOffset + r * yStride;
                for (int c = from; c < columnsEnd; c += 2 * LANES) {
                    FloatVector p = FloatVector.fromArray(FLOATS, y, y0 + c), q = FloatVector.fromArray(FLOATS, y, y0 + c + LANES);
                    for (int k = 0; k < depth; k++) {
                        int xk = xOffset + k * xStride + c;
                        FloatVector b = FloatVector.broadcast(FLOATS, a[a0 + k]);
                        p = FloatVector.fromArray(FLOATS, x, xk).fma(b, p);
                        q = FloatVector.fromArray(FLOATS, x, xk + LANES).fma(b, q);
                    }
                    p.intoArray(y, y0 + c);
                    q.intoArray(y, y0 + c + LANES);
                }
            }
            if (columnsEnd < to) SCALAR.tile(a, aOffset, aStride, x, xOffset, xStride, y, yOffset, yStride, rows, depth, columnsEnd, to);
        }
    };
}
