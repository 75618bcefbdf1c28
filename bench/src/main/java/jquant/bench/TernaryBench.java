package jquant.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.function.Function;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.Ptq1Block;
import jquant.formats.quant.T2pBlock;
import jquant.formats.quant.Tq2Block;
import jquant.runtime.TernaryLinearWeights;
import jquant.core.WorkerPool;
import jquant.runtime.ternary.Pq2Matrix;
import jquant.runtime.ternary.Ptq1Matrix;
import jquant.runtime.ternary.T2pMatrix;
import jquant.runtime.ternary.TernaryMatrix;
import jquant.runtime.ternary.Tq2Matrix;

/**
 * Ternary kernel benchmark: one run, worker pools of 1 and 2 threads, every figure beside a
 * memory-read probe measured in the same run with the same pool (summing a pre-touched 512 MiB
 * off-heap buffer).
 *
 * <p>Decode: the 22 layers of a TinyLlama-1.1B-shaped model (per layer q 2048×2048, k and v
 * 256×2048, o 2048×2048, gate and up 5632×2048, down 2048×5632: 971M weights), each matrix its own
 * off-heap memory as a mapped file's tensors are, multiplied one token at a time through
 * {@link TernaryLinearWeights} (activation quantization included), for T2P, TQ2_0, PQ2_0 and PTQ1_0:
 * ms per token, GB/s of packed weights and its ratio to the probe; then one large 32768 × 8192
 * matrix. Prefill: one layer's seven matrices at 4, 64 and 256 columns, GMAC/s and the tokens/s the
 * 22 layers' linear layers would allow.
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

    /** How a format lays out random blocks: bytes per row and a generator for one row group of blocks. */
    enum Format {
        T2P(T2pMatrix::new), TQ2_0(Tq2Matrix::new), PQ2_0(Pq2Matrix::new), PTQ1_0(Ptq1Matrix::new);

        interface Make { TernaryMatrix make(MemorySegment data, int rows, int cols, WorkerPool pool); }

        final Make make;

        Format(Make make) { this.make = make; }

        long bytes(int rows, int cols) {
            return switch (this) {
                case T2P -> (long) rows / 4 * (cols / 128) * T2pBlock.BYTES;
                case TQ2_0 -> (long) rows * (cols / 256) * Tq2Block.BYTES;
                case PQ2_0 -> (long) rows * (cols / 128) * Pq2Block.BYTES;
                case PTQ1_0 -> (long) rows * (cols / 128) * Ptq1Block.BYTES;
            };
        }
    }

    public static void main(String[] args) {
        boolean quick = List.of(args).contains("--quick");
        int layers = quick ? 4 : LAYERS;
        System.out.printf("ternary bench: %s, %d cpus, kernels at %s, %d layers of TinyLlama-1.1B shapes%n", Runtime.version(),
                Runtime.getRuntime().availableProcessors(), TernaryMatrix.vectorWidth(), layers);
        long t0 = System.nanoTime();
        MemorySegment probe = Arena.ofAuto().allocate(512L << 20, 64);
        for (long i = 0; i < probe.byteSize(); i += 8) probe.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i);
        List<MemorySegment[]> model = new ArrayList<>();   // [format][layer * 7 + matrix]
        for (Format f : Format.values()) {
            MemorySegment[] m = new MemorySegment[layers * LAYER.length];
            for (int i = 0; i < m.length; i++) m[i] = random(f, LAYER[i % LAYER.length].rows(), LAYER[i % LAYER.length].cols(), 1000 + i);
            model.add(m);
        }
        MemorySegment[] large = new MemorySegment[Format.values().length];
        for (Format f : Format.values()) large[f.ordinal()] = random(f, LARGE.rows(), LARGE.cols(), 7);
        System.out.printf("setup (generate off-heap, touch 512 MiB probe): %.1f s%n", (System.nanoTime() - t0) / 1e9);

        for (int threads = 1; threads <= 2; threads++) {
            try (WorkerPool pool = new WorkerPool(threads)) {
                System.out.printf("%n== %d thread%s, load average %s%n", threads, threads == 1 ? "" : "s", loadAverage());
                double bw = bandwidth(probe, pool);
                System.out.printf("memory read probe: %.1f GB/s%n", bw);
                TernaryLinearWeights[][] all = new TernaryLinearWeights[Format.values().length][];
                for (Format f : Format.values()) all[f.ordinal()] = weights(f, model.get(f.ordinal()), pool);
                double[] msPerToken = decodeTokens(all, layers, bw);
                System.out.printf("  decode T2P / TQ2_0 %.2f×, T2P / PQ2_0 %.2f× (ms per token, inverted); probe again %.1f GB/s%n",
                        msPerToken[Format.TQ2_0.ordinal()] / msPerToken[0], msPerToken[Format.PQ2_0.ordinal()] / msPerToken[0], bandwidth(probe, pool));
                for (Format f : Format.values()) {
                    TernaryMatrix m = f.make.make(large[f.ordinal()], LARGE.rows(), LARGE.cols(), pool);
                    decodeLarge(f, new TernaryLinearWeights(m, pool), bw);
                }
                for (int width : new int[] {4, 64, 256}) {
                    double[] perLayer = new double[3];
                    for (Format f : new Format[] {Format.T2P, Format.TQ2_0, Format.PQ2_0}) {
                        perLayer[f.ordinal()] = prefillLayer(f, weights(f, model.get(f.ordinal()), pool), width, quick, layers);
                    }
                    System.out.printf("  prefill %3d columns: T2P / TQ2_0 %.2f×, T2P / PQ2_0 %.2f×%n", width,
                            perLayer[Format.TQ2_0.ordinal()] / perLayer[0], perLayer[Format.PQ2_0.ordinal()] / perLayer[0]);
                }
            }
        }
    }

    static TernaryLinearWeights[] weights(Format f, MemorySegment[] data, WorkerPool pool) {
        TernaryLinearWeights[] w = new TernaryLinearWeights[data.length];
        for (int i = 0; i < data.length; i++) {
            Shape s = LAYER[i % LAYER.length];
            w[i] = new TernaryLinearWeights(f.make.make(data[i], s.rows(), s.cols(), pool), pool);
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
        for (Format f : Format.values()) {
            long bytes = 0;
            for (TernaryLinearWeights w : all[f.ordinal()]) bytes += w.matrix().packedBytes();
            double gbs = bytes / (double) best[f.ordinal()];
            ms[f.ordinal()] = best[f.ordinal()] / 1e6;
            System.out.printf("  decode %-7s %3d layers %7.1f MB  %7.2f ms/token (22 layers: %6.2f)  %5.1f GB/s  %.2f of probe%n",
                    f, layers, bytes / 1e6, ms[f.ordinal()], ms[f.ordinal()] * LAYERS / layers, gbs, gbs / bandwidth);
        }
        return ms;
    }

    private static void token(TernaryLinearWeights[] ws, float[] x, float[] y) {
        for (TernaryLinearWeights w : ws) w.matmul(x, 1, y);
    }

    static void decodeLarge(Format f, TernaryLinearWeights w, double bandwidth) {
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
    static double prefillLayer(Format f, TernaryLinearWeights[] ws, int width, boolean quick, int layers) {
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

    /** Off-heap random blocks of a format: ternary codes, fp16 scales in [0.001, 0.02). */
    static MemorySegment random(Format f, int rows, int cols, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        byte[] ternaryBytes = new byte[81];
        for (int v = 0; v < 81; v++) ternaryBytes[v] = (byte) (v % 3 | (v / 3 % 3) << 2 | (v / 9 % 3) << 4 | (v / 27) << 6);
        byte[] out = new byte[Math.toIntExact(f.bytes(rows, cols))];
        Function<Integer, Void> scale = off -> {
            short d = Float.floatToFloat16(0.001f + 0.019f * (float) rnd.nextDouble());
            out[off] = (byte) d;
            out[off + 1] = (byte) (d >> 8);
            return null;
        };
        switch (f) {
            case T2P -> {
                for (int off = 0; off < out.length; off += T2pBlock.BYTES) {
                    for (int r = 0; r < 4; r++) scale.apply(off + 2 * r);
                    for (int j = T2pBlock.CODES_OFFSET; j < T2pBlock.BYTES; j++) out[off + j] = ternaryBytes[rnd.nextInt(81)];
                }
            }
            case TQ2_0 -> {
                for (int off = 0; off < out.length; off += Tq2Block.BYTES) {
                    for (int j = 0; j < Tq2Block.SCALE_OFFSET; j++) out[off + j] = ternaryBytes[rnd.nextInt(81)];
                    scale.apply(off + Tq2Block.SCALE_OFFSET);
                }
            }
            case PQ2_0 -> {
                for (int off = 0; off < out.length; off += Pq2Block.BYTES) {
                    scale.apply(off);
                    for (int j = Pq2Block.CODES_OFFSET; j < Pq2Block.BYTES; j++) out[off + j] = ternaryBytes[rnd.nextInt(81)];
                }
            }
            case PTQ1_0 -> {
                for (int off = 0; off < out.length; off += Ptq1Block.BYTES) {
                    for (int i = 0; i < Ptq1Block.QS_BYTES; i++) out[off + i] = (byte) ((rnd.nextInt(243) * 256 + 242) / 243);
                    for (int i = 0; i < Ptq1Block.QH_BYTES; i++) out[off + Ptq1Block.QH_OFFSET + i] = (byte) ((rnd.nextInt(81) * 3 * 256 + 242) / 243);
                    scale.apply(off + Ptq1Block.SCALE_OFFSET);
                }
            }
        }
        return TernaryMatrix.offHeap(out);
    }
}
