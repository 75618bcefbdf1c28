package jquant.bench;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import jquant.formats.quant.T2pRepacker;
import jquant.formats.quant.T2pShapeException;
import jquant.core.WorkerPool;
import jquant.runtime.ternary.ActivationBlocks;
import jquant.runtime.ternary.Pq2Matrix;
import jquant.runtime.ternary.Ptq1Matrix;
import jquant.runtime.ternary.T2pMatrix;
import jquant.runtime.ternary.TernaryMatrix;
import jquant.runtime.ternary.Tq2Matrix;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.util.Random;

/**
 * JMH: one-thread ternary matrix-vector products (decode) in the stock PQ2_0 and TQ2_0 layouts (the
 * baseline), the T2P row-pair repack of the same PQ2_0 weights and PTQ1_0, on off-heap blocks as
 * {@link TernaryBench} generates them.
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
    public void generate() throws T2pShapeException {
        pool = new WorkerPool(1);
        MemorySegment pq2 = TernaryBench.random(TernaryBench.Format.PQ2_0, rows, cols, 1);
        matrix = switch (layout) {
            case "pq2_0" -> new Pq2Matrix(pq2, rows, cols, pool);
            case "tq2_0" -> new Tq2Matrix(TernaryBench.random(TernaryBench.Format.TQ2_0, rows, cols, 1), rows, cols, pool);
            case "t2p" -> new T2pMatrix(TernaryMatrix.offHeap(T2pRepacker.repack("bench", pq2.toArray(ValueLayout.JAVA_BYTE), rows, cols)),
                    rows, cols, pool);
            case "ptq1_0" -> new Ptq1Matrix(TernaryBench.random(TernaryBench.Format.PTQ1_0, rows, cols, 2), rows, cols, pool);
            default -> throw new IllegalArgumentException("unknown layout " + layout);
        };
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
