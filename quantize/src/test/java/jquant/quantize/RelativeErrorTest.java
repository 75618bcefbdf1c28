package jquant.quantize;

import jquant.testsupport.Stories260K;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Arrays;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class RelativeErrorTest {

    /** 1 − cos(w, v), computed here independently of RelativeError. */
    static double cosineDistance(float[] w, int[] v) {
        double wv = 0, ww = 0, vv = 0;
        for (int j = 0; j < w.length; j++) {
            wv += (double) w[j] * v[j];
            ww += (double) w[j] * w[j];
            vv += (double) v[j] * v[j];
        }
        return 1 - wv / Math.sqrt(ww * vv);
    }

    static int[] toInts(byte[] values) {
        int[] out = new int[values.length];
        for (int j = 0; j < out.length; j++) out[j] = values[j];
        return out;
    }

    @Test
    void exactIsTheCosineDistanceOfWhatTheQuantizerProducesAndMatchesItsSquaredError() {
        SplittableRandom random = new SplittableRandom(21);
        for (int trial = 0; trial < 30; trial++) {
            float[] row = trial % 2 == 0 ? SymmetricChannelQuantizerTest.gaussianRow(random, 50 + random.nextInt(500), 0.02)
                    : SymmetricChannelQuantizerTest.outlierRow(random, 50 + random.nextInt(500));
            double energy = 0;
            for (float w : row) energy += (double) w * w;
            for (int bits = 1; bits <= 8; bits++) {
                SymmetricChannelQuantizer.QuantizedRow q = SymmetricChannelQuantizer.quantizeRow(row, bits);
                double re = RelativeError.of(Metric.EXACT, row, bits, null);
                assertThat(re).isCloseTo(cosineDistance(row, toInts(q.values())), within(1e-5 * re + 1e-12));
                // Least-squares scale: relative squared error = 1 − cos² = RE·(2 − RE).
                assertThat(SymmetricChannelQuantizerTest.squaredError(row, q) / energy)
                        .isCloseTo(re * (2 - re), within(1e-5 * re + 1e-9));
            }
        }
    }

    @Test
    void approxIsThePapersClosedFormAndFallsFourfoldPerBit() {
        float[] row = SymmetricChannelQuantizerTest.outlierRow(new SplittableRandom(22), 300);
        double max = 0, meanSquare = 0;
        for (float w : row) {
            max = Math.max(max, Math.abs(w));
            meanSquare += (double) w * w / row.length;
        }
        for (int bits = 1; bits <= 8; bits++) {
            double expected = max * max / (6 * Math.pow(4, bits) * meanSquare);
            assertThat(RelativeError.of(Metric.APPROX, row, bits, null)).isCloseTo(expected, within(expected * 1e-12));
        }
    }

    @Test
    void bothMetricsFallStrictlyWithEveryBitOnRealAndRandomChannels() throws IOException {
        Stories260K model = Stories260K.load();
        SplittableRandom random = new SplittableRandom(23);
        for (Stories260K.Matrix m : Stories260K.Matrix.values()) {
            for (int layer = 0; layer < Stories260K.LAYERS; layer++) {
                assertStrictlyDecreasing(RelativeError.table(Stories260K.name(m, layer), model.matrix(m, layer), m.rows, m.cols, Metric.EXACT, null));
                assertStrictlyDecreasing(RelativeError.table(Stories260K.name(m, layer), model.matrix(m, layer), m.rows, m.cols, Metric.APPROX, null));
            }
        }
        for (int cols : new int[] {32, 256, 4096}) {
            float[] matrix = SymmetricChannelQuantizerTest.gaussianRow(random, 16 * cols, 1);
            assertStrictlyDecreasing(RelativeError.table("gaussian", matrix, 16, cols, Metric.EXACT, null));
        }
    }

    @Test
    void approxAndExactAgreeWhereTheUniformRoundingModelHolds() throws IOException {
        // From 6 bits up the rounding error is small and nearly uniform: the model's assumptions.
        Stories260K model = Stories260K.load();
        for (Stories260K.Matrix m : Stories260K.Matrix.values()) {
            float[] matrix = model.matrix(m, 2);
            ErrorTable exact = RelativeError.table("t", matrix, m.rows, m.cols, Metric.EXACT, null);
            ErrorTable approx = RelativeError.table("t", matrix, m.rows, m.cols, Metric.APPROX, null);
            for (int r = 0; r < m.rows; r++) {
                for (int bits = 6; bits <= 8; bits++) {
                    assertThat(exact.error(r, bits) / approx.error(r, bits)).as("%s row %d at %d bits", m, r, bits).isBetween(0.4, 2.5);
                }
            }
        }
    }

    @Test
    void importanceWeightsEnterTheDotProducts() {
        SplittableRandom random = new SplittableRandom(24);
        float[] row = SymmetricChannelQuantizerTest.outlierRow(random, 128);
        float[] ones = new float[128], scaled = new float[128], single = new float[128], importance = new float[128];
        Arrays.fill(ones, 1f);
        Arrays.fill(scaled, 7.5f);
        single[5] = 3f;
        for (int j = 0; j < 128; j++) importance[j] = (float) random.nextDouble(0, 4);
        for (Metric metric : Metric.values()) {
            for (int bits = 1; bits <= 8; bits++) {
                // Unweighted EXACT comes from float-accumulated sums, weighted from double dot products.
                double plain = RelativeError.of(metric, row, bits, null);
                double tolerance = plain * (metric == Metric.EXACT ? 1e-5 : 1e-12);
                assertThat(RelativeError.of(metric, row, bits, ones)).isCloseTo(plain, within(tolerance));
                assertThat(RelativeError.of(metric, row, bits, scaled)).isCloseTo(plain, within(tolerance));
            }
        }
        for (int bits = 1; bits <= 8; bits++) {
            // Only column 5 matters: one weight and its code are always parallel.
            assertThat(RelativeError.of(Metric.EXACT, row, bits, single)).isCloseTo(0, within(1e-12));
            int[] v = toInts(SymmetricChannelQuantizer.quantizeRow(row, bits).values());
            double wv = 0, ww = 0, vv = 0;
            for (int j = 0; j < 128; j++) {
                wv += importance[j] * (double) row[j] * v[j];
                ww += importance[j] * (double) row[j] * row[j];
                vv += importance[j] * (double) v[j] * v[j];
            }
            assertThat(RelativeError.of(Metric.EXACT, row, bits, importance)).isCloseTo(1 - wv / Math.sqrt(ww * vv), within(1e-12));
        }
        double max = 0, weightedSquares = 0, weightSum = 0;
        for (int j = 0; j < 128; j++) {
            max = Math.max(max, Math.abs(row[j]));
            weightedSquares += importance[j] * (double) row[j] * row[j];
            weightSum += importance[j];
        }
        double expected = max * max * weightSum / (6 * Math.pow(4, 3) * weightedSquares);
        assertThat(RelativeError.of(Metric.APPROX, row, 3, importance)).isCloseTo(expected, within(expected * 1e-12));
    }

    @Test
    void zeroChannelsCostNothingAndBadInputIsNamed() {
        float[] matrix = new float[3 * 10];
        matrix[25] = 0.5f;
        for (Metric metric : Metric.values()) {
            ErrorTable table = RelativeError.table("w", matrix, 3, 10, metric, null);
            for (int bits = 1; bits <= 8; bits++) {
                assertThat(table.error(0, bits)).isZero();
                assertThat(table.error(1, bits)).isZero();
            }
        }
        matrix[12] = Float.POSITIVE_INFINITY;
        assertThatThrownBy(() -> RelativeError.table("blk.3.ffn_up", matrix, 3, 10, Metric.APPROX, null))
                .hasMessageContaining("blk.3.ffn_up").hasMessageContaining("row 1, column 2");
        assertThatThrownBy(() -> RelativeError.table("w", new float[30], 3, 10, Metric.EXACT, new float[9]))
                .hasMessageContaining("9 importance weights for 10 columns");
        float[] negative = new float[10];
        negative[4] = -1;
        assertThatThrownBy(() -> RelativeError.table("w", new float[30], 3, 10, Metric.EXACT, negative)).hasMessageContaining("column 4");
        assertThatThrownBy(() -> RelativeError.table("w", new float[30], 4, 10, Metric.EXACT, null)).hasMessageContaining("4×10");
    }

    private static void assertStrictlyDecreasing(ErrorTable table) {
        for (int r = 0; r < table.rows(); r++) {
            for (int bits = 1; bits < 8; bits++) {
                assertThat(table.error(r, bits + 1)).as("%s %s row %d, %d → %d bits", table.name(), table.metric(), r, bits, bits + 1)
                        .isLessThan(table.error(r, bits));
            }
        }
    }
}
