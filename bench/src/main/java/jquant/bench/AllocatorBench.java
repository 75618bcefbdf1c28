package jquant.bench;

import jquant.quantize.BitPlan;
import jquant.quantize.ErrorTable;
import jquant.quantize.GreedyBitAllocator;
import jquant.quantize.Metric;
import jquant.quantize.RelativeError;
import jquant.quantize.TensorPlan;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import java.util.stream.IntStream;

/**
 * Time to allocate bits for one generated 7B-class tensor and for a whole 8B-shaped model.
 *
 * <p>Tensor: 4096 output channels (rows) × 14336 inputs (cols), the shape of Llama-3-8B's
 * down_proj, generated deterministically (per-row Gaussian with row scales spread over 10×, and 8
 * input columns 20× larger, as activation outliers leave them after smoothing). For APPROX and
 * EXACT: the RE table (parallel over rows) and the heap allocation at budget 5, best of
 * {@value #RUNS} runs after at least {@value #WARMUPS} warm-ups and 2 s of warm-up. Baseline, same run: one parallel pass
 * summing w² over the same matrix (the least any per-channel statistic can cost).
 *
 * <p>Model-wide: the heap alone over 32 layers of Llama-3-8B projection shapes (q 4096, k 1024,
 * v 1024, o 4096, gate 14336, up 14336, down 4096 rows), 1.38M channels, with synthetic APPROX
 * curves, budget 5.
 *
 * <p>Run: {@code JQUANT_JAVA_OPTS=-Xmx3g ./jquant bench allocator}
 */
public final class AllocatorBench {

    static final int ROWS = 4096, COLS = 14336, RUNS = 5, WARMUPS = 2;
    static final double BUDGET = 5;

    public static void main(String[] args) {
        float[] matrix = generate(ROWS, COLS, 2024);
        System.out.printf("tensor %d rows (output channels) × %d cols, %d threads%n", ROWS, COLS, Runtime.getRuntime().availableProcessors());

        double baseline = best(() -> sumOfSquares(matrix));
        System.out.printf("baseline: one pass of Σw² per row          %9.1f ms%n", baseline);
        for (Metric metric : Metric.values()) {
            double table = best(() -> RelativeError.table("down_proj", matrix, ROWS, COLS, metric, null));
            ErrorTable errors = RelativeError.table("down_proj", matrix, ROWS, COLS, metric, null);
            double heap = best(() -> GreedyBitAllocator.allocate(errors, BUDGET));
            TensorPlan plan = GreedyBitAllocator.allocate(errors, BUDGET);
            System.out.printf("%-6s RE table %9.1f ms (%6.1f× baseline)   heap %7.2f ms   total %9.1f ms   avg %.4f bits, histogram %s%n",
                    metric, table, table / baseline, heap, table + heap, plan.averageBits(), Arrays.toString(plan.histogram()));
        }

        List<ErrorTable> model = syntheticModel(32);
        long channels = model.stream().mapToLong(ErrorTable::rows).sum();
        double modelHeap = best(() -> GreedyBitAllocator.allocate(model, BUDGET));
        BitPlan plan = GreedyBitAllocator.allocate(model, BUDGET);
        System.out.printf("model-wide heap: %d tensors, %d channels, %.3g weights: %9.1f ms, avg %.6f bits%n",
                model.size(), channels, (double) plan.weights(), modelHeap, plan.averageBits());
    }

    static float[] generate(int rows, int cols, long seed) {
        float[] m = new float[rows * cols];
        SplittableRandom root = new SplittableRandom(seed);
        int[] outlierColumns = root.ints(8, 0, cols).toArray();
        long[] rowSeeds = root.longs(rows).toArray();
        IntStream.range(0, rows).parallel().forEach(r -> {
            SplittableRandom random = new SplittableRandom(rowSeeds[r]);
            double sigma = 0.01 * Math.pow(10, random.nextDouble());
            for (int j = 0; j < cols; j++) m[r * cols + j] = (float) (random.nextGaussian() * sigma);
            for (int j : outlierColumns) m[r * cols + j] *= 20;
        });
        return m;
    }

    static double[] sumOfSquares(float[] matrix) {
        double[] sums = new double[ROWS];
        IntStream.range(0, ROWS).parallel().forEach(r -> {
            double s = 0;
            for (int j = r * COLS; j < (r + 1) * COLS; j++) s += matrix[j] * matrix[j];
            sums[r] = s;
        });
        return sums;
    }

    static List<ErrorTable> syntheticModel(int layers) {
        String[] names = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
        int[] rows = {4096, 1024, 1024, 4096, 14336, 14336, 4096};
        int[] cols = {4096, 4096, 4096, 4096, 4096, 4096, 14336};
        SplittableRandom random = new SplittableRandom(7);
        List<ErrorTable> tables = new ArrayList<>();
        for (int layer = 0; layer < layers; layer++) {
            for (int t = 0; t < names.length; t++) {
                double[] errors = new double[rows[t] * 8];
                for (int r = 0; r < rows[t]; r++) {
                    double k = Math.exp(random.nextGaussian()) * 20; // max²/E[w²], lognormal across channels
                    for (int b = 1; b <= 8; b++) errors[r * 8 + b - 1] = k / (6 * Math.pow(4, b));
                }
                tables.add(new ErrorTable("blk." + layer + "." + names[t] + ".weight", rows[t], cols[t], Metric.APPROX, errors));
            }
        }
        return tables;
    }

    /** Best wall time in ms over RUNS runs after at least WARMUPS warm-ups and 2 s of warm-up; keeps results alive. */
    static double best(Supplier<?> work) {
        Object sink = null;
        long warmStart = System.nanoTime();
        for (int i = 0; i < WARMUPS || System.nanoTime() - warmStart < 2_000_000_000L; i++) sink = work.get();
        double best = Double.POSITIVE_INFINITY;
        for (int i = 0; i < RUNS; i++) {
            long start = System.nanoTime();
            sink = work.get();
            best = Math.min(best, (System.nanoTime() - start) / 1e6);
        }
        if (sink == null) throw new IllegalStateException("benchmark produced nothing");
        return best;
    }
}
