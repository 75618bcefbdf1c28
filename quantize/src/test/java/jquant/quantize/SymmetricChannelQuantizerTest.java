package jquant.quantize;

import jquant.formats.weightlet.WeightletLayout;
import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class SymmetricChannelQuantizerTest {

    static float[] gaussianRow(SplittableRandom random, int length, double sigma) {
        float[] row = new float[length];
        for (int j = 0; j < length; j++) row[j] = (float) (random.nextGaussian() * sigma);
        return row;
    }

    /** Gaussian body plus a few large outliers, like real LLM weight rows. */
    static float[] outlierRow(SplittableRandom random, int length) {
        float[] row = gaussianRow(random, length, 0.02);
        for (int k = 0; k < 3; k++) row[random.nextInt(length)] = (float) ((random.nextBoolean() ? 1 : -1) * (0.2 + random.nextDouble()));
        return row;
    }

    @Test
    void theGridsTopLevelIsTheFormatsLargestField() {
        for (int bits = 1; bits <= 8; bits++) {
            assertThat(WeightletLayout.toInt8(WeightletLayout.maxField(bits), bits)).isEqualTo((byte) SymmetricChannelQuantizer.maxLevel(bits));
            assertThat(WeightletLayout.toInt8(0, bits)).isEqualTo((byte) -SymmetricChannelQuantizer.maxLevel(bits));
        }
    }

    @Test
    void rejectsWidthsOutsideOneToEight() {
        assertThatThrownBy(() -> SymmetricChannelQuantizer.quantizeRow(new float[4], 0)).hasMessageContaining("outside 1..8");
        assertThatThrownBy(() -> SymmetricChannelQuantizer.quantizeRow(new float[4], 9)).hasMessageContaining("outside 1..8");
    }

    @Test
    void everyWeightInsideTheClipIsWithinHalfASpacingOfItsLevel() {
        SplittableRandom random = new SplittableRandom(11);
        for (int trial = 0; trial < 60; trial++) {
            float[] row = trial % 2 == 0 ? gaussianRow(random, 17 + random.nextInt(300), 0.05) : outlierRow(random, 64 + random.nextInt(600));
            for (int bits = 2; bits <= 8; bits++) {
                SymmetricChannelQuantizer.QuantizedRow q = SymmetricChannelQuantizer.quantizeRow(row, bits);
                float maxAbs = SymmetricChannelQuantizer.maxAbs(row, 0, row.length, 0);
                double clip = SymmetricChannelQuantizer.chooseGrid(row, 0, row.length, bits, maxAbs, SymmetricChannelQuantizer.energy(row, 0, row.length)).clip();
                double spacing = SymmetricChannelQuantizer.levelSpacing(bits, clip);
                // Level of int8 value v: v·spacing/2 on the odd mid-rise grid, v·spacing on the int8 grid.
                double unit = bits == 8 ? spacing : spacing / 2;
                for (int j = 0; j < row.length; j++) {
                    int v = q.value(j);
                    if (Math.abs(row[j]) <= clip) {
                        // Float rounding of w/spacing + offset (≤ 255) may move a midpoint by ~1e-5 spacing.
                        assertThat(Math.abs(row[j] - v * unit)).isLessThanOrEqualTo(spacing * (0.5 + 1e-4));
                    } else {
                        assertThat(v).isEqualTo((int) Math.signum(row[j]) * SymmetricChannelQuantizer.maxLevel(bits));
                    }
                }
            }
        }
    }

    @Test
    void clipSearchAndLeastSquaresScaleNeverLoseToThePlainMaxAbsGrid() {
        SplittableRandom random = new SplittableRandom(12);
        for (int trial = 0; trial < 40; trial++) {
            float[] row = trial % 2 == 0 ? gaussianRow(random, 2048, 0.03) : outlierRow(random, 2048);
            float maxAbs = SymmetricChannelQuantizer.maxAbs(row, 0, row.length, 0);
            for (int bits = 1; bits <= 8; bits++) {
                double maxAbsSpacing = SymmetricChannelQuantizer.levelSpacing(bits, maxAbs);
                double unit = bits == 8 ? maxAbsSpacing : maxAbsSpacing / 2;
                double plainError = 0;
                for (float w : row) {
                    int v = GridKernel.code(GridKernel.Shape.of(bits), w, (float) (1 / maxAbsSpacing));
                    plainError += (w - v * unit) * (w - v * unit);
                }
                assertThat(squaredError(row, SymmetricChannelQuantizer.quantizeRow(row, bits)))
                        .isLessThanOrEqualTo(plainError * (1 + 1e-6));
            }
        }
        float[] gaussian = gaussianRow(new SplittableRandom(13), 14336, 1);
        float maxAbs = SymmetricChannelQuantizer.maxAbs(gaussian, 0, gaussian.length, 0);
        double searched = SymmetricChannelQuantizer.chooseGrid(gaussian, 0, gaussian.length, 2, maxAbs, SymmetricChannelQuantizer.energy(gaussian, 0, gaussian.length)).cosineDistance();
        double plain = RelativeErrorTest.cosineDistance(gaussian, maxAbsGridValues(gaussian, 2));
        assertThat(searched).as("2-bit cosine distance, searched clip vs max-abs").isLessThan(plain / 2);
    }

    @Test
    void scaleIsTheLeastSquaresFitOfTheCodes() {
        SplittableRandom random = new SplittableRandom(14);
        for (int bits = 1; bits <= 8; bits++) {
            float[] row = outlierRow(random, 500);
            SymmetricChannelQuantizer.QuantizedRow q = SymmetricChannelQuantizer.quantizeRow(row, bits);
            double fitted = squaredError(row, q);
            for (double factor : new double[] {0.99, 1.01}) {
                SymmetricChannelQuantizer.QuantizedRow other = new SymmetricChannelQuantizer.QuantizedRow(bits, q.values(), (float) (q.scale() * factor));
                assertThat(squaredError(row, other)).isGreaterThan(fitted);
            }
        }
    }

    @Test
    void oneBitIsTheSignWithMeanAbsoluteScale() {
        float[] row = gaussianRow(new SplittableRandom(15), 1000, 0.1);
        row[7] = 0f;
        SymmetricChannelQuantizer.QuantizedRow q = SymmetricChannelQuantizer.quantizeRow(row, 1);
        double meanAbs = 0;
        for (int j = 0; j < row.length; j++) {
            assertThat(q.value(j)).isEqualTo((byte) (row[j] >= 0 ? 1 : -1));
            assertThat(q.field(j)).isEqualTo(row[j] >= 0 ? 1 : 0);
            meanAbs += Math.abs(row[j]) / row.length;
        }
        assertThat((double) q.scale()).isCloseTo(meanAbs, within(meanAbs * 1e-6));
    }

    @Test
    void negligibleChannelsAreQuantizedAsZero() {
        float[] tiny = {0x1p-101f, -0x1p-102f, Float.MIN_VALUE, 0};
        for (int bits = 1; bits <= 8; bits++) {
            SymmetricChannelQuantizer.QuantizedRow q = SymmetricChannelQuantizer.quantizeRow(tiny, bits);
            assertThat(q.scale()).isZero();
            assertThat(q.dequantize()).containsOnly(0f);
        }
        float[] small = {0x1p-99f, -0x1p-100f, 0x1p-120f, 0};
        for (int bits = 1; bits <= 8; bits++) {
            SymmetricChannelQuantizer.QuantizedRow q = SymmetricChannelQuantizer.quantizeRow(small, bits);
            assertThat(q.scale()).isPositive();
            assertThat(q.dequantize()[0]).isPositive();
        }
    }

    @Test
    void allZeroChannelHasScaleZeroAndTheCodeOfZero() {
        for (int bits = 1; bits <= 8; bits++) {
            SymmetricChannelQuantizer.QuantizedRow q = SymmetricChannelQuantizer.quantizeRow(new float[33], bits);
            assertThat(q.scale()).isZero();
            assertThat(q.dequantize()).containsOnly(0f);
            for (int j = 0; j < 33; j++) assertThat(q.value(j)).isEqualTo((byte) (bits == 8 ? 0 : 1));
        }
    }

    @Test
    void nonFiniteWeightsAreRejectedWithRowAndColumn() {
        float[] matrix = new float[4 * 6];
        matrix[3 * 6 + 5] = Float.NaN;
        assertThatThrownBy(() -> SymmetricChannelQuantizer.quantize(matrix, 4, 6, new byte[] {4, 4, 4, 4}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("row 3, column 5").hasMessageContaining("NaN");
        matrix[3 * 6 + 5] = 0;
        matrix[6 + 2] = Float.NEGATIVE_INFINITY;
        assertThatThrownBy(() -> SymmetricChannelQuantizer.quantize(matrix, 4, 6, new byte[] {4, 4, 4, 4}))
                .hasMessageContaining("row 1, column 2").hasMessageContaining("Infinity");
        assertThatThrownBy(() -> SymmetricChannelQuantizer.quantize(new float[10], 4, 6, new byte[4])).hasMessageContaining("4×6");
    }

    @Test
    void matrixQuantizationIsRowByRowWithEachRowsWidth() {
        SplittableRandom random = new SplittableRandom(16);
        int rows = 9, cols = 40;
        float[] matrix = gaussianRow(random, rows * cols, 0.05);
        byte[] bits = new byte[rows];
        for (int r = 0; r < rows; r++) bits[r] = (byte) (r % 8 + 1);
        SymmetricChannelQuantizer.QuantizedMatrix q = SymmetricChannelQuantizer.quantize(matrix, rows, cols, bits);
        float[] dequantized = q.dequantize();
        for (int r = 0; r < rows; r++) {
            float[] row = java.util.Arrays.copyOfRange(matrix, r * cols, (r + 1) * cols);
            SymmetricChannelQuantizer.QuantizedRow expected = SymmetricChannelQuantizer.quantizeRow(row, bits[r]);
            assertThat(q.scales()[r]).isEqualTo(expected.scale());
            assertThat(java.util.Arrays.copyOfRange(q.values(), r * cols, (r + 1) * cols)).isEqualTo(expected.values());
            assertThat(java.util.Arrays.copyOfRange(dequantized, r * cols, (r + 1) * cols)).isEqualTo(expected.dequantize());
        }
    }

    /** Codes on the grid whose top level is max|w| (no clip search). */
    static int[] maxAbsGridValues(float[] row, int bits) {
        float inverseSpacing = (float) (1 / SymmetricChannelQuantizer.levelSpacing(bits, SymmetricChannelQuantizer.maxAbs(row, 0, row.length, 0)));
        int[] v = new int[row.length];
        for (int j = 0; j < row.length; j++) v[j] = GridKernel.code(GridKernel.Shape.of(bits), row[j], inverseSpacing);
        return v;
    }

    static double squaredError(float[] row, SymmetricChannelQuantizer.QuantizedRow q) {
        float[] d = q.dequantize();
        double sum = 0;
        for (int j = 0; j < row.length; j++) sum += (row[j] - (double) d[j]) * (row[j] - (double) d[j]);
        return sum;
    }
}
