package jquant.quantize;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class GridKernelTest {

    @Test
    void simdAgreesWithTheScalarTwinOnRandomAndAdversarialRows() {
        SplittableRandom random = new SplittableRandom(51);
        double[] simd = new double[3], scalar = new double[3];
        for (int trial = 0; trial < 400; trial++) {
            int length = random.nextInt(3 * GridKernel.BLOCK + 40);
            int offset = random.nextInt(20);
            float[] data = new float[offset + length + random.nextInt(20)];
            for (int j = 0; j < data.length; j++) data[j] = (float) (random.nextGaussian() * 0.05);
            int bits = 1 + random.nextInt(8);
            GridKernel.Shape shape = GridKernel.Shape.of(bits);
            double clip = random.nextDouble(0.01, 0.3);
            double spacing = SymmetricChannelQuantizer.levelSpacing(bits, clip);
            if (trial % 4 == 0) {
                // Adversarial: weights exactly on level midpoints and beyond the clip.
                for (int j = offset; j < offset + length; j++) {
                    data[j] = (float) ((random.nextInt(2 * shape.maxField() + 4) - shape.maxField() - 2) * spacing / 2);
                }
            }
            float inverse = (float) (1 / spacing), unit = (float) (spacing * shape.unitPerSpacing());
            GridKernel.stats(data, offset, length, shape, inverse, unit, simd);
            GridKernel.statsScalar(data, offset, length, shape, inverse, unit, scalar);
            double magnitude = 0;
            for (int j = offset; j < offset + length; j++) {
                int v = GridKernel.code(shape, data[j], inverse);
                magnitude += Math.abs((data[j] - unit * v) * (double) v);
            }
            assertThat(simd[2]).as("Σv², exact in both").isEqualTo(scalar[2]);
            assertThat(simd[0]).isCloseTo(scalar[0], within(1e-5 * scalar[0] + 1e-30));
            assertThat(simd[1]).isCloseTo(scalar[1], within(1e-5 * magnitude + 1e-30));
        }
    }

    @Test
    void scalarStatisticsMatchADoublePrecisionOracle() {
        SplittableRandom random = new SplittableRandom(52);
        double[] stats = new double[3];
        for (int bits = 1; bits <= 8; bits++) {
            float[] row = SymmetricChannelQuantizerTest.outlierRow(random, 5000);
            GridKernel.Shape shape = GridKernel.Shape.of(bits);
            double spacing = SymmetricChannelQuantizer.levelSpacing(bits, 0.1);
            float inverse = (float) (1 / spacing), unit = (float) (spacing * shape.unitPerSpacing());
            GridKernel.statsScalar(row, 0, row.length, shape, inverse, unit, stats);
            double dd = 0, dv = 0, vv = 0;
            for (float w : row) {
                // Nearest level by double arithmetic; float rounding can only matter at exact midpoints.
                double x = Math.clamp(Math.floor(w / spacing + shape.offset()), 0, shape.maxField());
                int v = shape.valueStep() * (int) x - shape.maxLevel();
                double d = w - (double) unit * v;
                dd += d * d;
                dv += d * v;
                vv += (double) v * v;
            }
            assertThat(stats[2]).isEqualTo(vv);
            assertThat(stats[0]).isCloseTo(dd, within(1e-5 * dd));
            assertThat(stats[1]).isCloseTo(dv, within(1e-5 * Math.sqrt(dd * vv)));
        }
    }
}
