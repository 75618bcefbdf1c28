package jquant.bench;

import jquant.bench.baseline.PaddedInt4Int8Packer;
import jquant.bench.baseline.SplitPlanePacker;
import jquant.bench.baseline.VectorPaddedUnpacker;
import jquant.bench.baseline.VectorSplitPlaneUnpacker;
import jquant.formats.weightlet.ChannelPacker;
import jquant.formats.weightlet.ChannelUnpacker;
import jquant.formats.weightlet.PackedTensor;
import jquant.formats.weightlet.ScalarWeightletUnpacker;
import jquant.formats.weightlet.VectorWeightletUnpacker;
import jquant.formats.weightlet.WeightletLayout;
import jquant.formats.weightlet.WeightletPacker;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Unpack throughput of the weightlet format against the paper's Figure-13 baselines, as a ratio to a
 * memcpy of the same number of int8 bytes measured in the same run (1 and 2 threads of one persistent
 * pool). Uniform plans B = 2, 3, 4, 5, 8 and a mixed per-channel plan on a channels × length tensor
 * (default 4096 × 4096, larger than the caches). Buffers are pre-touched and every kernel is warmed
 * up before it is timed; each figure is the median of the timed repetitions.
 *
 * <p>Run: {@code ./jquant bench unpack [channels length reps [stripe]]}; {@code stripe} times the 128-bit stripe
 * kernel instead of the machine's default. Only one weightlet kernel runs per JVM: with both hot, C2
 * inlines both into the shared channel loop, hits its inlining node limit and boxes vectors.
 */
public final class UnpackBench {

    private static final int WARMUP = 8;

    private record Format(String name, ChannelPacker packer, ChannelUnpacker unpacker) {}

    private final ExecutorService pool;
    private final int reps;

    private UnpackBench(ExecutorService pool, int reps) {
        this.pool = pool;
        this.reps = reps;
    }

    public static void main(String[] args) throws Exception {
        int channels = args.length > 0 ? Integer.parseInt(args[0]) : 4096;
        int length = args.length > 1 ? Integer.parseInt(args[1]) : 4096;
        int reps = args.length > 2 ? Integer.parseInt(args[2]) : 15;
        ExecutorService pool = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "unpack-bench");
            t.setDaemon(true);
            return t;
        });
        try {
            new UnpackBench(pool, reps).run(channels, length, args.length > 3 && args[3].equals("stripe"));
        } finally {
            pool.shutdown();
        }
    }

    private void run(int channels, int length, boolean stripeKernel) throws Exception {
        List<Format> formats = List.of(
                new Format(stripeKernel ? "weightlet (SIMD 128, stripes)" : "weightlet (SIMD, machine's kernel)",
                        WeightletPacker.INSTANCE,
                        stripeKernel ? VectorWeightletUnpacker.STRIPE_KERNEL : VectorWeightletUnpacker.INSTANCE),
                new Format("weightlet (scalar ref)", WeightletPacker.INSTANCE, ScalarWeightletUnpacker.INSTANCE),
                new Format("split planes, K-quant-like (SIMD 128)", SplitPlanePacker.INSTANCE, VectorSplitPlaneUnpacker.INSTANCE),
                new Format("INT4/INT8 padded (SIMD 128)", PaddedInt4Int8Packer.INSTANCE, VectorPaddedUnpacker.INSTANCE));
        int weights = Math.multiplyExact(channels, length);
        byte[] out = new byte[weights];
        byte[] copySource = new byte[weights];
        Arrays.fill(out, (byte) 1);
        Arrays.fill(copySource, (byte) 2);
        System.out.printf(Locale.ROOT, "UnpackBench: %d × %d weights (%.1f MB of int8 out), %d timed reps, %s%n",
                channels, length, weights / 1e6, reps, Runtime.version());
        Random random = new Random(2026);
        List<String> plans = List.of("B=2", "B=3", "B=4", "B=5", "B=8", "mixed");
        for (String plan : plans) {
            int[] bits = plan.equals("mixed") ? mixedPlan(channels, random) : uniform(channels, plan.charAt(2) - '0');
            byte[] fields = new byte[weights];
            for (int c = 0; c < channels; c++) {
                int limit = WeightletLayout.maxField(bits[c]) + 1;
                for (int i = 0; i < length; i++) fields[c * length + i] = (byte) random.nextInt(limit);
            }
            System.out.printf(Locale.ROOT, "%n== plan %s (mean %.2f bits/weight) ==%n", plan,
                    Arrays.stream(bits).average().orElseThrow());
            System.out.printf(Locale.ROOT, "%-36s %8s %6s %8s %9s %8s %8s%n", "format", "MB", "b/w", "threads",
                    "ms", "GB/s", "/memcpy");
            List<PackedTensor> packed = new ArrayList<>();
            for (Format format : formats) packed.add(PackedTensor.pack(format.packer(), fields, channels, length, bits));
            for (int threadCount = 1; threadCount <= 2; threadCount++) {
                int threads = threadCount;
                double copyMs = time(() -> copy(copySource, out, threads));
                System.out.printf(Locale.ROOT, "%-36s %8.1f %6.2f %8d %9.3f %8.2f %8.2f%n", "memcpy int8 (System.arraycopy)",
                        weights / 1e6, 8.0, threads, copyMs, weights / copyMs / 1e6, 1.0);
                for (int f = 0; f < formats.size(); f++) {
                    Format format = formats.get(f);
                    if (format.unpacker() == ScalarWeightletUnpacker.INSTANCE && threads > 1) continue;
                    PackedTensor tensor = packed.get(f);
                    double ms = time(() -> unpack(format.unpacker(), tensor, out, threads));
                    System.out.printf(Locale.ROOT, "%-36s %8.1f %6.2f %8d %9.3f %8.2f %8.2f%n", format.name(),
                            tensor.byteSize() / 1e6, 8.0 * tensor.byteSize() / weights, threads, ms,
                            weights / ms / 1e6, copyMs / ms);
                }
            }
        }
    }

    /** Per-channel widths with roughly the spread of the paper's Figure 4a (mostly 4–6 bits). */
    static int[] mixedPlan(int channels, Random random) {
        int[] widths = {2, 3, 4, 5, 6, 7, 8};
        double[] share = {0.05, 0.10, 0.25, 0.25, 0.20, 0.10, 0.05};
        int[] bits = new int[channels];
        for (int c = 0; c < channels; c++) {
            double u = random.nextDouble();
            int k = 0;
            while (k < share.length - 1 && (u -= share[k]) > 0) k++;
            bits[c] = widths[k];
        }
        return bits;
    }

    static int[] uniform(int channels, int bits) {
        int[] b = new int[channels];
        Arrays.fill(b, bits);
        return b;
    }

    private interface Work {
        void run() throws Exception;
    }

    /** Median wall time in ms after warm-up. */
    private double time(Work work) throws Exception {
        for (int i = 0; i < WARMUP; i++) work.run();
        double[] ms = new double[reps];
        for (int i = 0; i < reps; i++) {
            long t0 = System.nanoTime();
            work.run();
            ms[i] = (System.nanoTime() - t0) / 1e6;
        }
        Arrays.sort(ms);
        return ms[reps / 2];
    }

    private void unpack(ChannelUnpacker unpacker, PackedTensor tensor, byte[] out, int threads) throws Exception {
        int channels = tensor.channels();
        List<Callable<Void>> tasks = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int first = channels * t / threads;
            int end = channels * (t + 1) / threads;
            tasks.add(() -> {
                unpacker.unpackChannels(tensor, first, end, out);
                return null;
            });
        }
        await(pool.invokeAll(tasks));
    }

    private void copy(byte[] src, byte[] dst, int threads) throws Exception {
        List<Callable<Void>> tasks = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int from = (int) ((long) src.length * t / threads);
            int to = (int) ((long) src.length * (t + 1) / threads);
            tasks.add(() -> {
                System.arraycopy(src, from, dst, from, to - from);
                return null;
            });
        }
        await(pool.invokeAll(tasks));
    }

    private static void await(List<Future<Void>> futures) throws InterruptedException, ExecutionException {
        for (Future<Void> f : futures) f.get();
    }
}
