package jquant.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import jquant.formats.DType;
import jquant.formats.TernaryCodecs;
import jquant.formats.quant.T2pShapeException;
import jquant.formats.quant.TernaryTensor;
import jquant.runtime.TernaryLinearWeights;
import jquant.core.WorkerPool;
import jquant.runtime.ternary.TernaryKernels;
import jquant.runtime.ternary.TernaryMatrix;

/**
 * Ternary kernel benchmark: one run, worker pools of 1 and 2 threads, every figure beside a
 * memory-read probe measured in the same run with the same pool (summing a pre-touched 512 MiB
 * off-heap buffer).
 *
 * <p>Decode: the 22 layers of a TinyLlama-1.1B-shaped model (per layer q 2048×2048, k and v
 * 256×2048, o 2048×2048, gate and up 5632×2048, down 2048×5632: 971M weights), each matrix its own
 * off-heap memory as a mapped file's tensors are, multiplied one token at a time through
 * {@link TernaryLinearWeights} (activation quantization included), for every type the ternary kernels
 * serve ({@link TernaryKernels}: T2P, TQ2_0, PQ2_0, PTQ1_0): ms per token, GB/s of packed weights and
 * its ratio to the probe, and each type's time against T2P's; then one large 32768 × 8192 matrix.
 * Prefill: one layer's seven matrices at 4, 64 and 256 columns, GMAC/s and the tokens/s the 22 layers'
 * linear layers would allow.
 *
 * <pre>
 *   JQUANT_JAVA_OPTS=-Xmx8g ./jquant bench ternary [--quick]
 * </pre>
 */
public final class TernaryBench {

    record Shape(String name, int rows, int cols) {}

    static final Shape[] LAYER = {new Shape("q", 2048, 2048), new Shape("k", 256, 2048), new Shape("v", 256, 2048),
            new Shape("o", 2048, 2048), new Shape("gate", 5632, 2048), new Shape("up", 5632, 2048), new Shape("down", 2048, 5632)};
    static final int LAYERS = 22;
    static final Shape LARGE = new Shape("large", 32768, 8192);
    private static final VectorSpecies<Long> L = LongVector.SPECIES_PREFERRED;

    /** The types measured, in the table's order; ratios are against T2P, the row-pair layout. */
    static final List<DType> TYPES = TernaryKernels.types();
    static final int BASE = TYPES.indexOf(DType.T2P);

    public static void main(String[] args) {
        boolean quick = List.of(args).contains("--quick");
        int layers = quick ? 4 : LAYERS;
        System.out.printf("ternary bench: %s, %d cpus, kernels at %s, %d layers of TinyLlama-1.1B shapes%n", Runtime.version(),
                Runtime.getRuntime().availableProcessors(), TernaryMatrix.vectorWidth(), layers);
        long t0 = System.nanoTime();
        MemorySegment probe = Arena.ofAuto().allocate(512L << 20, 64);
        for (long i = 0; i < probe.byteSize(); i += 8) probe.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i);
        List<MemorySegment[]> model = new ArrayList<>();   // [type][layer * 7 + matrix]
        for (DType type : TYPES) {
            MemorySegment[] m = new MemorySegment[layers * LAYER.length];
            for (int i = 0; i < m.length; i++) m[i] = random(type, LAYER[i % LAYER.length].rows(), LAYER[i % LAYER.length].cols(), 1000 + i);
            model.add(m);
        }
        MemorySegment[] large = new MemorySegment[TYPES.size()];
        for (int f = 0; f < TYPES.size(); f++) large[f] = random(TYPES.get(f), LARGE.rows(), LARGE.cols(), 7);
        System.out.printf("setup (generate off-heap, touch 512 MiB probe): %.1f s%n", (System.nanoTime() - t0) / 1e9);

        for (int threads = 1; threads <= 2; threads++) {
            try (WorkerPool pool = new WorkerPool(threads)) {
                System.out.printf("%n== %d thread%s, load average %s%n", threads, threads == 1 ? "" : "s", loadAverage());
                double bw = bandwidth(probe, pool);
                System.out.printf("memory read probe: %.1f GB/s%n", bw);
                TernaryLinearWeights[][] all = new TernaryLinearWeights[TYPES.size()][];
                for (int f = 0; f < TYPES.size(); f++) all[f] = weights(TYPES.get(f), model.get(f), pool);
                double[] msPerToken = decodeTokens(all, layers, bw);
                System.out.printf("  decode%s (ms per token, inverted); probe again %.1f GB/s%n", againstBase(msPerToken), bandwidth(probe, pool));
                for (int f = 0; f < TYPES.size(); f++) {
                    TernaryMatrix m = TernaryKernels.on(TYPES.get(f), large[f], LARGE.rows(), LARGE.cols(), pool);
                    decodeLarge(TYPES.get(f), new TernaryLinearWeights(m, pool), bw);
                }
                for (int width : new int[] {4, 64, 256}) {
                    double[] perLayer = new double[TYPES.size()];
                    for (int f = 0; f < TYPES.size(); f++) {
                        perLayer[f] = prefillLayer(TYPES.get(f), weights(TYPES.get(f), model.get(f), pool), width, quick, layers);
                    }
                    System.out.printf("  prefill %3d columns:%s%n", width, againstBase(perLayer));
                }
            }
        }
    }

    /** " T2P / TQ2_0 1.34×, …": each type's time over T2P's. */
    private static String againstBase(double[] seconds) {
        StringBuilder s = new StringBuilder();
        for (int f = 0; f < TYPES.size(); f++) {
            if (f != BASE) s.append(String.format("%s T2P / %s %.2f×", s.isEmpty() ? "" : ",", TYPES.get(f), seconds[f] / seconds[BASE]));
        }
        return s.toString();
    }

    static TernaryLinearWeights[] weights(DType type, MemorySegment[] data, WorkerPool pool) {
        TernaryLinearWeights[] w = new TernaryLinearWeights[data.length];
        for (int i = 0; i < data.length; i++) {
            Shape s = LAYER[i % LAYER.length];
            w[i] = new TernaryLinearWeights(TernaryKernels.on(type, data[i], s.rows(), s.cols(), pool), pool);
        }
        return w;
    }

    /**
     * One token through every layer's seven matrices, for every format: each warmed up, then rounds
     * of one token per format in turn (so a change in the machine's load hits all alike), best of the
     * rounds. Returns ms per token by format.
     */
    static double[] decodeTokens(TernaryLinearWeights[][] all, int layers, double bandwidth) {
        float[] x = gaussian(5632, 11), y = new float[5632];
        for (TernaryLinearWeights[] ws : all) warm(() -> token(ws, x, y));
        long[] best = new long[all.length];
        java.util.Arrays.fill(best, Long.MAX_VALUE);
        for (int round = 0; round < 16; round++) {
            for (int f = 0; f < all.length; f++) {
                long t = System.nanoTime();
                token(all[f], x, y);
                best[f] = Math.min(best[f], System.nanoTime() - t);
            }
        }
        double[] ms = new double[all.length];
        for (int f = 0; f < all.length; f++) {
            long bytes = 0;
            for (TernaryLinearWeights w : all[f]) bytes += w.matrix().packedBytes();
            double gbs = bytes / (double) best[f];
            ms[f] = best[f] / 1e6;
            System.out.printf("  decode %-7s %3d layers %7.1f MB  %7.2f ms/token (22 layers: %6.2f)  %5.1f GB/s  %.2f of probe%n",
                    TYPES.get(f), layers, bytes / 1e6, ms[f], ms[f] * LAYERS / layers, gbs, gbs / bandwidth);
        }
        return ms;
    }

    private static void token(TernaryLinearWeights[] ws, float[] x, float[] y) {
        for (TernaryLinearWeights w : ws) w.matmul(x, 1, y);
    }

    static void decodeLarge(DType f, TernaryLinearWeights w, double bandwidth) {
        float[] x = gaussian(LARGE.cols(), 12), y = new float[LARGE.rows()];
        warm(() -> w.matmul(x, 1, y));
        long best = Long.MAX_VALUE;
        for (int i = 0; i < 20; i++) {
            long t = System.nanoTime();
            w.matmul(x, 1, y);
            best = Math.min(best, System.nanoTime() - t);
        }
        double gbs = w.matrix().packedBytes() / (double) best;
        System.out.printf("  decode %-7s %d×%d %6.1f MB  %7.3f ms  %5.1f GB/s  %.2f of probe%n", f, LARGE.rows(), LARGE.cols(),
                w.matrix().packedBytes() / 1e6, best / 1e6, gbs, gbs / bandwidth);
    }

    /** The first layer's seven matrices at {@code width} columns: GMAC/s per matrix and tokens/s for all layers; returns s per layer. */
    static double prefillLayer(DType f, TernaryLinearWeights[] ws, int width, boolean quick, int layers) {
        float[] x = gaussian(width * 5632, 13), y = new float[width * 5632];
        double layerSeconds = 0, macs = 0;
        StringBuilder per = new StringBuilder();
        warm(() -> {
            for (int i = 0; i < LAYER.length; i++) ws[i].matmul(x, width, y);
        });
        for (int i = 0; i < LAYER.length; i++) {
            TernaryLinearWeights w = ws[i];
            int reps = width >= 64 ? (quick ? 2 : 3) : 5;
            long best = Long.MAX_VALUE;
            for (int k = 0; k < reps; k++) {
                long t = System.nanoTime();
                w.matmul(x, width, y);
                best = Math.min(best, System.nanoTime() - t);
            }
            double m = (double) LAYER[i].rows() * LAYER[i].cols() * width;
            macs += m;
            layerSeconds += best / 1e9;
            per.append(String.format(" %s %.0f", LAYER[i].name(), m / best));
        }
        System.out.printf("  prefill %-7s %3d columns: %6.1f GMAC/s (%s), %6.1f tokens/s for 22 layers' linear layers%n", f, width,
                macs / layerSeconds / 1e9, per.toString().trim(), width / (layerSeconds * LAYERS));
        return layerSeconds;
    }

    /**
     * Runs {@code work} for at least {@value #WARM_SECONDS} s: C2 compiles the kernels only after many
     * calls, later still on a loaded machine, and a benchmark of the interpreter measures nothing.
     */
    static void warm(Runnable work) {
        long until = System.nanoTime() + (long) (WARM_SECONDS * 1e9);
        do work.run(); while (System.nanoTime() < until);
    }

    static final double WARM_SECONDS = 3;

    static float[] gaussian(int n, long seed) {
        Random rnd = new Random(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) rnd.nextGaussian();
        return x;
    }

    /** GB/s of summing the pre-touched probe buffer, split across the pool; best of several passes. */
    static double bandwidth(MemorySegment buffer, WorkerPool pool) {
        int chunks = 64;
        long per = buffer.byteSize() / chunks;
        long[] sink = new long[chunks];
        long best = Long.MAX_VALUE;
        for (int pass = 0; pass < 8; pass++) {
            long t = System.nanoTime();
            pool.forRange(chunks, 1 << 20, (worker, start, end) -> {
                for (int c = start; c < end; c++) sink[c] = sum(buffer, c * per, per);
            });
            best = Math.min(best, System.nanoTime() - t);
        }
        return buffer.byteSize() / (double) best;
    }

    private static long sum(MemorySegment s, long from, long bytes) {
        LongVector acc = LongVector.zero(L);
        for (long i = from; i < from + bytes; i += L.vectorByteSize()) {
            acc = acc.add(LongVector.fromMemorySegment(L, s, i, ByteOrder.LITTLE_ENDIAN));
        }
        return acc.reduceLanes(VectorOperators.ADD);
    }

    static String loadAverage() {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).split(" ")[0];
        } catch (java.io.IOException | RuntimeException e) {
            return "?";
        }
    }

    /** Rows encoded at a time: a multiple of every type's row group, few enough to keep the codes small. */
    private static final int BAND = 64;

    /**
     * Off-heap random weights stored as {@code type} through its codec: ternary codes, fp16 scales in
     * [0.001, 0.02), one per stored block (TQ2_0's blocks hold 256 weights, so two 128-blocks share one).
     */
    static MemorySegment random(DType type, int rows, int cols, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int tied = type.blockSize() / TernaryTensor.BLOCK;
        MemorySegment out = Arena.ofAuto().allocate(type.byteSize((long) rows * cols, cols), 64);
        long at = 0;
        for (int r0 = 0; r0 < rows; r0 += BAND) {
            int band = Math.min(BAND, rows - r0);
            byte[] codes = new byte[band * cols];
            for (int i = 0; i < codes.length; i++) codes[i] = (byte) (rnd.nextInt(3) - 1);
            float[] scales = new float[band * cols / TernaryTensor.BLOCK];
            for (int i = 0; i < scales.length; i += tied) {
                java.util.Arrays.fill(scales, i, i + tied, Float.float16ToFloat(Float.floatToFloat16(0.001f + 0.019f * (float) rnd.nextDouble())));
            }
            MemorySegment encoded;
            try {
                encoded = TernaryCodecs.encode(new TernaryTensor("bench", band, cols, scales, codes), new long[] {band, cols}, type).data();
            } catch (T2pShapeException e) {
                throw new IllegalArgumentException(e.getMessage(), e);   // the bench shapes all fit T2P
            }
            MemorySegment.copy(encoded, 0, out, at, encoded.byteSize());
            at += encoded.byteSize();
        }
        return out;
    }
}
