package jquant.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import jquant.formats.DType;
import jquant.runtime.TernaryLinearWeights;
import jquant.core.WorkerPool;
import jquant.runtime.nativelib.NativeKernels;
import jquant.runtime.nativelib.NativeKernels.TernaryLayout;
import jquant.runtime.ternary.LutMatrix;
import jquant.runtime.ternary.NativeTernaryMatrix;
import jquant.runtime.ternary.T2pMatrix;
import jquant.runtime.ternary.TernaryMatrix;
import jquant.runtime.ternary.Tq2Matrix;

/**
 * The kernel families of one stored format side by side in one JVM: the Java kernels, the Java
 * table-lookup ones (on a copy repacked at load) and the C library's for each instruction set this
 * CPU runs, on the same bytes (22 layers of TinyLlama-1.1B
 * shapes, random codes, each matrix its own off-heap memory as a mapped file's tensors are). Decode
 * runs rounds of one token per family in turn, so a change in the shared machine's load hits all
 * alike, and prints each family's best and median round with its ratio to the Java kernels' and to a
 * memory-read probe of the same pool; prefill does the same with one layer at 256 columns.
 *
 * <pre>
 *   ./jquant bench kernels [--quick]
 * </pre>
 */
public final class KernelFamilyBench {

    /** How a family builds a matrix on given bytes. */
    interface Make { TernaryMatrix make(MemorySegment data, int rows, int cols, WorkerPool pool); }

    /** One family: its name and how it builds a matrix. */
    record Family(String name, Make make) {}

    public static void main(String[] args) {
        boolean quick = List.of(args).contains("--quick");
        int layers = quick ? 4 : TernaryBench.LAYERS, rounds = quick ? 8 : 24;
        List<Family> t2p = new ArrayList<>(List.of(new Family("T2P java", T2pMatrix::new), new Family("T2P LUT (java)", LutMatrix::new)));
        List<Family> tq2 = new ArrayList<>(List.of(new Family("TQ2_0 java", Tq2Matrix::new)));
        for (NativeKernels k : NativeKernels.supported()) {
            String isa = k.isa().name().toLowerCase(Locale.ROOT);
            t2p.add(new Family("T2P " + isa, (d, r, c, p) -> new NativeTernaryMatrix(TernaryLayout.T2P, d, r, c, p, k)));
            tq2.add(new Family("TQ2_0 " + isa, (d, r, c, p) -> new NativeTernaryMatrix(TernaryLayout.TQ2_0, d, r, c, p, k)));
        }
        System.out.printf("kernel families: %s, %d cpus, Java kernels at %s, %d layers of TinyLlama-1.1B shapes; native: %s%n", Runtime.version(),
                Runtime.getRuntime().availableProcessors(), TernaryMatrix.vectorWidth(), layers, NativeKernels.status());
        MemorySegment probe = Arena.ofAuto().allocate(512L << 20, 64);
        for (long i = 0; i < probe.byteSize(); i += 8) probe.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i);
        for (int threads = 1; threads <= 2; threads++) {
            try (WorkerPool pool = new WorkerPool(threads)) {
                System.out.printf("%n== %d thread%s, load average %s, memory read probe %.1f GB/s%n", threads, threads == 1 ? "" : "s",
                        TernaryBench.loadAverage(), TernaryBench.bandwidth(probe, pool));
                compare(t2p, model(DType.T2P, layers), pool, rounds, TernaryBench.bandwidth(probe, pool));
                compare(tq2, model(DType.TQ2_0, layers), pool, rounds, TernaryBench.bandwidth(probe, pool));
            }
        }
    }

    /** {@code layers} layers' matrices of random blocks in {@code format}, each its own off-heap memory. */
    static MemorySegment[] model(DType format, int layers) {
        MemorySegment[] data = new MemorySegment[layers * TernaryBench.LAYER.length];
        for (int i = 0; i < data.length; i++) {
            TernaryBench.Shape s = TernaryBench.LAYER[i % TernaryBench.LAYER.length];
            data[i] = TernaryBench.random(format, s.rows(), s.cols(), 1000 + i);
        }
        return data;
    }

    /** Decode rounds (all layers, one token) and prefill rounds (the first layer, 256 columns), the families in turn. */
    static void compare(List<Family> families, MemorySegment[] data, WorkerPool pool, int rounds, double probe) {
        int n = families.size(), width = 256;
        TernaryLinearWeights[][] ws = new TernaryLinearWeights[n][];
        for (int f = 0; f < n; f++) {
            ws[f] = new TernaryLinearWeights[data.length];
            for (int i = 0; i < data.length; i++) {
                TernaryBench.Shape s = TernaryBench.LAYER[i % TernaryBench.LAYER.length];
                ws[f][i] = new TernaryLinearWeights(families.get(f).make().make(data[i], s.rows(), s.cols(), pool), pool);
            }
        }
        long bytes = 0;
        for (TernaryLinearWeights w : ws[0]) bytes += w.matrix().packedBytes();
        float[] x = TernaryBench.gaussian(width * 5632, 11), y = new float[width * 5632];
        for (TernaryLinearWeights[] w : ws) TernaryBench.warm(() -> {
            token(w, x, y);
            layer(w, x, width, y);
        });
        long[][] decode = new long[n][rounds], prefill = new long[n][rounds];
        for (int r = 0; r < rounds; r++) {
            for (int f = 0; f < n; f++) {
                long t = System.nanoTime();
                token(ws[f], x, y);
                decode[f][r] = System.nanoTime() - t;
            }
            for (int f = 0; f < n; f++) {
                long t = System.nanoTime();
                layer(ws[f], x, width, y);
                prefill[f][r] = System.nanoTime() - t;
            }
        }
        double layerMacs = 0;
        for (TernaryBench.Shape s : TernaryBench.LAYER) layerMacs += (double) s.rows() * s.cols() * width;
        double baseDecode = median(decode[0]), basePrefill = median(prefill[0]);
        for (int f = 0; f < n; f++) {
            double best = Arrays.stream(decode[f]).min().orElseThrow(), med = median(decode[f]);
            System.out.printf("  %-16s decode %7.2f ms best, %7.2f median (%.2f× java), %5.1f GB/s = %.2f of probe;   prefill %6.1f GMAC/s median (%.2f× java)%n",
                    families.get(f).name(), best / 1e6, med / 1e6, baseDecode / med, bytes / med, bytes / med / probe,
                    layerMacs / median(prefill[f]), basePrefill / median(prefill[f]));
        }
    }

    private static void token(TernaryLinearWeights[] ws, float[] x, float[] y) {
        for (TernaryLinearWeights w : ws) w.matmul(x, 1, y);
    }

    /** The first layer's seven matrices at {@code width} columns. */
    private static void layer(TernaryLinearWeights[] ws, float[] x, int width, float[] y) {
        for (int i = 0; i < TernaryBench.LAYER.length; i++) ws[i].matmul(x, width, y);
    }

    private static double median(long[] v) {
        long[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2.0;
    }
}
