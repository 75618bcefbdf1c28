package jquant.bench;

import jquant.runtime.Compute;
import jquant.runtime.DenseF32Weights;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

import java.util.SplittableRandom;

/**
 * JMH: the runtime's float32 matrix-vector product (one token through a dense layer), the Vector API
 * kernels against their scalar twins, the baseline of the same run.
 */
@State(org.openjdk.jmh.annotations.Scope.Benchmark)
public class MatvecBenchmark extends JmhDefaults {

    @Param({"vector", "scalar"})
    public String kernels;

    @Param({"4096"})
    public int n;

    private DenseF32Weights weights;
    private float[] x;
    private float[] y;

    @Setup
    public void generate() {
        SplittableRandom random = new SplittableRandom(1);
        float[] w = new float[n * n];
        for (int i = 0; i < w.length; i++) w[i] = (float) random.nextDouble(-1, 1);
        x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) random.nextDouble(-1, 1);
        y = new float[n];
        weights = new DenseF32Weights(w, n, n, kernels.equals("vector") ? Compute.vector() : Compute.scalar());
    }

    @Benchmark
    public float[] matvec() {
        weights.matmul(x, 1, y);
        return y;
    }
}
