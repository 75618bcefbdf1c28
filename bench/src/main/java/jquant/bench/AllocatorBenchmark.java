package jquant.bench;

import jquant.quantize.ErrorTable;
import jquant.quantize.GreedyBitAllocator;
import jquant.quantize.Metric;
import jquant.quantize.RelativeError;
import jquant.quantize.TensorPlan;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

import java.util.stream.IntStream;

/**
 * JMH: EdgeFlow's allocation of one tensor generated as {@link AllocatorBench} does (per-row
 * Gaussians with outlier columns): the relative-error table by metric, and the greedy heap on it at a
 * 5-bit budget; {@code sumOfSquares}, one parallel pass of Σw² per row, is the least any per-channel
 * statistic can cost and the baseline the others are read against.
 */
@State(org.openjdk.jmh.annotations.Scope.Benchmark)
public class AllocatorBenchmark extends JmhDefaults {

    @Param({"APPROX", "EXACT"})
    public Metric metric;

    @Param({"1024"})
    public int rows;

    @Param({"4096"})
    public int cols;

    private float[] matrix;
    private ErrorTable errors;

    @Setup
    public void generate() {
        matrix = AllocatorBench.generate(rows, cols, 2024);
        errors = RelativeError.table("w", matrix, rows, cols, metric, null);
    }

    @Benchmark
    public ErrorTable errorTable() {
        return RelativeError.table("w", matrix, rows, cols, metric, null);
    }

    @Benchmark
    public TensorPlan allocate() {
        return GreedyBitAllocator.allocate(errors, AllocatorBench.BUDGET);
    }

    /** As {@link RelativeError#table}, parallel over rows. */
    @Benchmark
    public double[] sumOfSquares() {
        double[] sums = new double[rows];
        IntStream.range(0, rows).parallel().forEach(r -> {
            double s = 0;
            for (int j = r * cols; j < (r + 1) * cols; j++) s += matrix[j] * matrix[j];
            sums[r] = s;
        });
        return sums;
    }
}
