package jquant.bench;

import jquant.quantize.Metric;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Each JMH benchmark once, on small shapes, outside JMH: it sets up, and what it times computes the right thing. */
class BenchmarksTest {

    @Test
    void everyUnpackFormatAndPlanGivesTheScalarReferenceBytes() {
        for (String plan : new String[] {"3", "8", "mixed"}) {
            byte[] reference = unpack("weightlet-scalar", plan);
            for (String format : new String[] {"weightlet", "split-planes", "padded-int4-int8"}) {
                assertThat(unpack(format, plan)).as(format + " plan " + plan).isEqualTo(reference);
            }
        }
    }

    private static byte[] unpack(String format, String plan) {
        UnpackBenchmark b = new UnpackBenchmark();
        b.format = format;
        b.plan = plan;
        b.channels = 16;
        b.length = 300;
        b.pack();
        assertThat(b.copy()).hasSize(16 * 300);
        return b.unpack().clone();
    }

    @Test
    void ternaryLayoutsAgreeOnTheSameWeights() {
        float[] stock = matvec("pq2_0"), rowPairs = matvec("t2p");
        assertThat(rowPairs).isEqualTo(stock);
        assertThat(matvec("ptq1_0")).isEqualTo(stock);
        assertThat(matvec("tq2_0")).hasSize(8);
    }

    private static float[] matvec(String layout) {
        TernaryMatvecBenchmark b = new TernaryMatvecBenchmark();
        b.layout = layout;
        b.rows = 8;
        b.cols = 256;
        try {
            b.generate();
            return b.matvec().clone();
        } catch (Exception e) {
            throw new AssertionError(e);
        } finally {
            b.close();
        }
    }

    @Test
    void vectorAndScalarMatvecAgreeClosely() {
        float[] vector = dense("vector"), scalar = dense("scalar");
        for (int i = 0; i < vector.length; i++) assertThat(vector[i]).isCloseTo(scalar[i], org.assertj.core.data.Offset.offset(1e-3f));
    }

    private static float[] dense(String kernels) {
        MatvecBenchmark b = new MatvecBenchmark();
        b.kernels = kernels;
        b.n = 64;
        b.generate();
        return b.matvec().clone();
    }

    @Test
    void allocatorBenchmarksAllocateAtTheBudget() {
        AllocatorBenchmark b = new AllocatorBenchmark();
        b.metric = Metric.APPROX;
        b.rows = 32;
        b.cols = 256;
        b.generate();
        assertThat(b.errorTable().rows()).isEqualTo(32);
        assertThat(b.allocate().averageBits()).isLessThanOrEqualTo(AllocatorBench.BUDGET);
        assertThat(b.sumOfSquares()).hasSize(32);
    }
}
