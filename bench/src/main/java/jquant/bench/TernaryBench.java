package jquant.bench;

import java.util.Random;
import java.util.SplittableRandom;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.Ptq1Block;
import jquant.formats.quant.T2pRepacker;
import jquant.runtime.ternary.ActivationBlocks;
import jquant.runtime.ternary.Pq2Matrix;
import jquant.runtime.ternary.Ptq1Matrix;
import jquant.runtime.ternary.RowPool;
import jquant.runtime.ternary.T2pMatrix;
import jquant.runtime.ternary.TernaryMatrix;

/**
 * Ternary kernel benchmark, one run, persistent pools of 1 and 2 threads.
 *
 * <p>Decode: a 32768 × 8192 matvec (far larger than any cache; another width with the same weight
 * count as the first argument) in stock PQ2_0, T2P
 * and PTQ1_0, reported as GB/s of packed weights read and as a ratio to the memory read bandwidth
 * measured in the same run (summing a pre-touched 1 GiB buffer with the same thread count). Prefill:
 * GMAC/s of 4- and 64-column batches, stock against T2P.
 *
 * <pre>
 *   JQUANT_JAVA_OPTS=-Xmx6g ./jquant bench ternary [cols]
 * </pre>
 */
public final class TernaryBench {

    /** Weights of the decode matrix: 32768 × 8192 by default; {@code cols} may be given, rows follow. */
    static final long WEIGHTS = 32768L * 8192;
    private static final VectorSpecies<Long> L = LongVector.SPECIES_512;

    public static void main(String[] args) throws Exception {
        final int COLS = args.length > 0 ? Integer.parseInt(args[0]) : 8192, ROWS = (int) (WEIGHTS / COLS);
        if (COLS % 128 != 0 || ROWS % 4 != 0) throw new IllegalArgumentException("cols must be a multiple of 128 dividing 2^28 / 4");
        System.out.printf("ternary bench: %d × %d, %s, %d cpus%n", ROWS, COLS, Runtime.version(),
                Runtime.getRuntime().availableProcessors());
        long t0 = System.nanoTime();
        byte[] pq2 = randomPq2(ROWS, COLS, 1);
        byte[] t2p = T2pRepacker.repack("bench", pq2, ROWS, COLS);
        byte[] ptq1 = randomPtq1(ROWS, COLS, 2);
        long[] buffer = new long[1 << 27];
        for (int i = 0; i < buffer.length; i++) buffer[i] = i;
        System.out.printf("setup (generate, repack, touch 1 GiB): %.1f s%n", (System.nanoTime() - t0) / 1e9);

        float[] x = new float[COLS];
        Random rnd = new Random(3);
        for (int i = 0; i < COLS; i++) x[i] = (float) rnd.nextGaussian();
        ActivationBlocks xq = ActivationBlocks.quantize(x);

        for (int threads = 1; threads <= 2; threads++) {
            try (RowPool pool = new RowPool(threads)) {
                double bw = bandwidth(buffer, pool);
                System.out.printf("%n== %d thread%s: memory read bandwidth %.1f GB/s%n", threads, threads == 1 ? "" : "s", bw);
                TernaryMatrix stock = new Pq2Matrix(pq2, ROWS, COLS, pool);
                TernaryMatrix rowPairs = new T2pMatrix(t2p, ROWS, COLS, pool);
                TernaryMatrix base3 = new Ptq1Matrix(ptq1, ROWS, COLS, pool);
                double gbStock = decode("PQ2_0 stock", stock, xq, bw);
                double gbT2p = decode("T2P row pairs", rowPairs, xq, bw);
                decode("PTQ1_0 1.75-bit", base3, xq, bw);
                System.out.printf("  decode T2P / stock: %.2f×%n", gbT2p / gbStock);
                for (int width : new int[] {4, 64}) {
                    ActivationBlocks[] batch = new ActivationBlocks[width];
                    for (int c = 0; c < width; c++) {
                        for (int i = 0; i < COLS; i++) x[i] = (float) rnd.nextGaussian();
                        batch[c] = ActivationBlocks.quantize(x);
                    }
                    double s = prefill("PQ2_0 stock", stock, batch), t = prefill("T2P row pairs", rowPairs, batch);
                    System.out.printf("  prefill %d columns T2P / stock: %.2f×%n", width, t / s);
                }
            }
        }
    }

    static double decode(String name, TernaryMatrix m, ActivationBlocks x, double bandwidth) {
        float[] y = new float[m.rows()];
        for (int i = 0; i < 15; i++) m.matvec(x, y);          // C2 warm-up
        int reps = 30;
        long best = Long.MAX_VALUE;
        for (int i = 0; i < reps; i++) {
            long t = System.nanoTime();
            m.matvec(x, y);
            best = Math.min(best, System.nanoTime() - t);
        }
        double gbs = m.packedBytes() / (double) best;
        System.out.printf("  decode  %-16s %6.2f MB  %7.3f ms  %6.1f GB/s  %.2f of bandwidth  %.1f Gweights/s  (y0 %.4f)%n",
                name, m.packedBytes() / 1e6, best / 1e6, gbs, gbs / bandwidth, (double) m.rows() * m.cols() / best, y[0]);
        return gbs;
    }

    static double prefill(String name, TernaryMatrix m, ActivationBlocks[] batch) {
        int reps = batch.length >= 64 ? 2 : 8;
        for (int i = 0; i < 2; i++) m.multiply(batch);
        long best = Long.MAX_VALUE;
        for (int i = 0; i < reps; i++) {
            long t = System.nanoTime();
            m.multiply(batch);
            best = Math.min(best, System.nanoTime() - t);
        }
        double gmacs = (double) m.rows() * m.cols() * batch.length / best;
        System.out.printf("  prefill %-16s %2d columns  %8.2f ms  %6.1f GMAC/s%n", name, batch.length, best / 1e6, gmacs);
        return gmacs;
    }

    /** GB/s of summing the pre-touched buffer, split across the pool; best of several passes. */
    static double bandwidth(long[] buffer, RowPool pool) {
        int chunks = 64, per = buffer.length / chunks;
        long[] sink = new long[chunks];
        long best = Long.MAX_VALUE;
        for (int pass = 0; pass < 8; pass++) {
            long t = System.nanoTime();
            pool.forEach(chunks, (from, to) -> {
                for (int c = from; c < to; c++) {
                    LongVector acc = LongVector.zero(L);
                    for (int i = c * per; i < (c + 1) * per; i += L.length()) acc = acc.add(LongVector.fromArray(L, buffer, i));
                    sink[c] = acc.reduceLanes(VectorOperators.ADD);
                }
            });
            best = Math.min(best, System.nanoTime() - t);
        }
        long check = 0;
        for (long s : sink) check += s;
        if (check != (long) buffer.length * (buffer.length - 1) / 2) throw new IllegalStateException("bandwidth sum wrong");
        return buffer.length * 8.0 / best;
    }

    /** Random ternary PQ2_0 rows (codes 0..2) with fp16 scales in [0.001, 0.02). */
    static byte[] randomPq2(int rows, int cols, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        byte[] ternaryBytes = new byte[81];
        for (int v = 0; v < 81; v++) ternaryBytes[v] = (byte) (v % 3 | (v / 3 % 3) << 2 | (v / 9 % 3) << 4 | (v / 27) << 6);
        byte[] out = new byte[Math.toIntExact(rows * Pq2Block.rowBytes(cols))];
        for (int off = 0; off < out.length; off += Pq2Block.BYTES) {
            short d = Float.floatToFloat16(0.001f + 0.019f * (float) rnd.nextDouble());
            out[off] = (byte) d;
            out[off + 1] = (byte) (d >> 8);
            for (int j = 0; j < 32; j++) out[off + 2 + j] = ternaryBytes[rnd.nextInt(81)];
        }
        return out;
    }

    /** Random valid PTQ1_0 blocks: qs bytes ceil(q·256/243), qh bytes ceil(3q·256/243). */
    static byte[] randomPtq1(int rows, int cols, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        byte[] out = new byte[rows * (cols / Ptq1Block.WEIGHTS) * Ptq1Block.BYTES];
        for (int off = 0; off < out.length; off += Ptq1Block.BYTES) {
            for (int i = 0; i < Ptq1Block.QS_BYTES; i++) out[off + i] = (byte) ((rnd.nextInt(243) * 256 + 242) / 243);
            for (int i = 0; i < Ptq1Block.QH_BYTES; i++) out[off + Ptq1Block.QH_OFFSET + i] = (byte) ((rnd.nextInt(81) * 3 * 256 + 242) / 243);
            short d = Float.floatToFloat16(0.001f + 0.019f * (float) rnd.nextDouble());
            out[off + Ptq1Block.SCALE_OFFSET] = (byte) d;
            out[off + Ptq1Block.SCALE_OFFSET + 1] = (byte) (d >> 8);
        }
        return out;
    }
}
