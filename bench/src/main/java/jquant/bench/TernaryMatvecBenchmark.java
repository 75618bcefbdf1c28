package jquant.bench;

import java.util.Locale;
import jquant.formats.DType;
import jquant.core.WorkerPool;
import jquant.runtime.ternary.ActivationBlocks;
import jquant.runtime.ternary.TernaryKernels;
import jquant.runtime.ternary.TernaryMatrix;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.util.Random;

/**
 * JMH: one-thread ternary matrix-vector products (decode) in each type the ternary kernels serve: the
 * stock PQ2_0 and TQ2_0 layouts (the baseline), T2P row pairs and PTQ1_0, on off-heap blocks as
 * {@link TernaryBench} generates them (the same weights in every type with one scale per 128).
 */
@State(org.openjdk.jmh.annotations.Scope.Benchmark)
public class TernaryMatvecBenchmark extends JmhDefaults {

    @Param({"pq2_0", "tq2_0", "t2p", "ptq1_0"})
    public String layout;

    @Param({"4096"})
    public int rows;

    @Param({"4096"})
    public int cols;

    private WorkerPool pool;
    private TernaryMatrix matrix;
    private ActivationBlocks x;
    private float[] y;

    @Setup
    public void generate() {
        pool = new WorkerPool(1);
        DType type = DType.valueOf(layout.toUpperCase(Locale.ROOT));
        matrix = TernaryKernels.on(type, TernaryBench.random(type, rows, cols, 1), rows, cols, pool);
        float[] v = new float[cols];
        Random random = new Random(3);
        for (int i = 0; i < cols; i++) v[i] = (float) random.nextGaussian();
        x = ActivationBlocks.quantize(v);
        y = new float[rows];
    }

    @TearDown
    public void close() {
        pool.close();
    }

    @Benchmark
    public float[] matvec() {
        matrix.matvec(x, y);
        return y;
    }
}
