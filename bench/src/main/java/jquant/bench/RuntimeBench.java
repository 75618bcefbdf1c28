package jquant.bench;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import jquant.formats.Checkpoint;
import jquant.formats.Checkpoints;
import jquant.formats.ModelConfig;
import jquant.formats.RopeConvention;
import jquant.runtime.Compute;
import jquant.runtime.DenseF32Weights;
import jquant.runtime.InferenceSession;
import jquant.runtime.LinearWeights;
import jquant.runtime.LlamaModel;
import jquant.runtime.TokenEmbedding;
import jquant.runtime.LinearWeightsFactory;
import jquant.core.WorkerPool;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Runtime throughput, every figure against a baseline measured in the same run:
 *
 * <ol>
 *   <li>memory read bandwidth: summing a pre-touched 1 GiB float buffer on all workers, timed per
 *       256 MiB (the ceiling of any memory-bound matrix-vector product);</li>
 *   <li>float32 matrix-vector product (8192 × 8192, 256 MiB, too big for any cache): GB/s of weights
 *       read, as a fraction of that bandwidth, Vector API and scalar;</li>
 *   <li>evaluation throughput (tokens/s through {@link InferenceSession#forward} in 256-token windows,
 *       logits for the second half, as perplexity runs) with the Vector API and scalar kernels, on
 *       stories260K and on a seeded random Llama with TinyLlama-1.1B's block shape (dim 2048, SwiGLU
 *       5632, 32 heads, 4 kv heads, vocab 32000, tied) cut to 2 layers.</li>
 * </ol>
 *
 * Every rate is best-of or averaged over wall-clock time; throughput is also given per CPU second
 * so runs on a busy shared machine stay comparable.
 *
 * <p>Run: {@code JQUANT_JAVA_OPTS=-Xmx6g ./jquant bench runtime [path/to/stories260K.bin]}.
 */
public final class RuntimeBench {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;

    private RuntimeBench() {}

    public static void main(String[] args) throws Exception {
        Path stories = Path.of(args.length > 0 ? args[0] : "../shared/models/stories260K.bin");
        WorkerPool pool = WorkerPool.common();
        System.out.printf("threads %d, vector species %s%n", pool.threads(), F);

        double bandwidth = readBandwidth(pool);
        System.out.printf("memory read bandwidth (1 GiB, pre-touched): %.1f GB/s%n", bandwidth);

        double vectorMatvec = matvec(Compute.vector());
        double scalarMatvec = matvec(Compute.scalar());
        System.out.printf("matvec 8192×8192 f32: vector %.1f GB/s (%.2f of bandwidth), scalar %.1f GB/s (%.2f); vector/scalar %.1f×%n",
                vectorMatvec, vectorMatvec / bandwidth, scalarMatvec, scalarMatvec / bandwidth, vectorMatvec / scalarMatvec);

        try (Checkpoint c = Checkpoints.open(stories)) {
            Throughput v = evalThroughput(load(c, Compute.vector()), 256, 3.0);
            Throughput s = evalThroughput(load(c, Compute.scalar()), 256, 3.0);
            System.out.printf("stories260K eval, ctx 256: vector %s, scalar %s, vector/scalar %.1f× (per CPU-s %.1f×)%n",
                    v, s, v.perSecond() / s.perSecond(), v.perCpuSecond() / s.perCpuSecond());
        }
        ModelConfig shape = new ModelConfig(2048, 5632, 2, 32, 4, 32000, 2048, 10000f, 1e-5f, true);
        Throughput v = evalThroughput(random(shape, Compute.vector(), 42), 256, 5.0);
        Throughput s = evalThroughput(random(shape, Compute.scalar(), 42), 256, 5.0);
        System.out.printf("random Llama dim 2048 × 2 layers eval, ctx 256: vector %s, scalar %s, vector/scalar %.1f× (per CPU-s %.1f×)%n",
                v, s, v.perSecond() / s.perSecond(), v.perCpuSecond() / s.perCpuSecond());
    }

    private static LlamaModel load(Checkpoint c, Compute compute) {
        return LlamaModel.load(c, compute, LinearWeightsFactory.dense(compute));
    }

    /** Floats summed per call: small enough that the loop is compiled after the first passes. */
    private static final int SUM_CHUNK = 1 << 20;

    /**
     * Summing a pre-touched 1 GiB buffer in 4 MiB chunks shared across the pool, timed per 256 MiB
     * quarter (the size of the matvec's matrix, so both see the same chance of being preempted on a
     * shared machine); the best quarter over 8 passes, in GB/s.
     */
    private static double readBandwidth(WorkerPool pool) {
        float[] buffer = new float[1 << 28];
        for (int i = 0; i < buffer.length; i++) buffer[i] = i & 7; // touch every page before timing
        int chunks = buffer.length / SUM_CHUNK;
        int quarter = chunks / 4;
        double[] sums = new double[chunks];
        double best = 0;
        for (int pass = 0; pass < 8; pass++) {
            for (int q = 0; q < 4; q++) {
                int first = q * quarter;
                long t0 = System.nanoTime();
                pool.forRange(quarter, SUM_CHUNK, (worker, start, end) -> {
                    for (int chunk = first + start; chunk < first + end; chunk++) sums[chunk] = sum(buffer, chunk * SUM_CHUNK, SUM_CHUNK);
                });
                double seconds = (System.nanoTime() - t0) / 1e9;
                best = Math.max(best, 4.0 * quarter * SUM_CHUNK / seconds / 1e9);
            }
        }
        double total = 0;
        for (double s : sums) total += s;
        if (total != 3.5 * buffer.length) throw new IllegalStateException("bandwidth sum is wrong: " + total);
        return best;
    }

    /**
     * Sum of {@code a[from, from + len)} read as four concurrent streams, one per quarter (one stream
     * per thread leaves bandwidth unused, as a matrix-vector product reading four rows at once does not).
     */
    private static double sum(float[] a, int from, int len) {
        int quarter = len / 4;
        FloatVector s0 = FloatVector.zero(F), s1 = s0, s2 = s0, s3 = s0;
        for (int i = from; i < from + quarter; i += F.length()) {
            s0 = s0.add(FloatVector.fromArray(F, a, i));
            s1 = s1.add(FloatVector.fromArray(F, a, i + quarter));
            s2 = s2.add(FloatVector.fromArray(F, a, i + 2 * quarter));
            s3 = s3.add(FloatVector.fromArray(F, a, i + 3 * quarter));
        }
        // exact: each lane sums at most 2^14 values ≤ 7
        return s0.add(s1).add(s2).add(s3).reduceLanes(VectorOperators.ADD);
    }

    /** Weight GB/s of a one-token product with an 8192×8192 matrix, best of the timed calls after warm-up. */
    private static double matvec(Compute compute) {
        int n = 8192;
        float[] w = new float[n * n];
        SplittableRandom rnd = new SplittableRandom(1);
        for (int i = 0; i < w.length; i++) w[i] = (float) rnd.nextDouble(-1, 1);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) rnd.nextDouble(-1, 1);
        float[] y = new float[n];
        LinearWeights weights = new DenseF32Weights(w, n, n, compute);
        double best = 0;
        for (int call = 0; call < 25; call++) {
            long t0 = System.nanoTime();
            weights.matmul(x, 1, y);
            double seconds = (System.nanoTime() - t0) / 1e9;
            if (call >= 5) best = Math.max(best, 4.0 * w.length / seconds / 1e9);
        }
        return best;
    }

    /** Tokens per wall-clock second and per CPU second of all threads (the machine may be shared). */
    private record Throughput(double perSecond, double perCpuSecond) {
        @Override
        public String toString() {
            return String.format("%.1f tok/s (%.1f tok/CPU-s)", perSecond, perCpuSecond);
        }
    }

    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** Throughput of perplexity-style windows (three warm-up windows for the JIT, then at least {@code seconds}). */
    private static Throughput evalThroughput(LlamaModel model, int ctx, double seconds) {
        SplittableRandom rnd = new SplittableRandom(5);
        int[] window = new int[ctx];
        for (int i = 0; i < ctx; i++) window[i] = rnd.nextInt(model.config().vocabSize());
        InferenceSession session = model.newSession(ctx);
        for (int warmUp = 0; warmUp < 3; warmUp++) session.forward(window, 0, ctx / 2);
        long tokens = 0;
        long t0 = System.nanoTime();
        long cpu0 = processCpuNanos();
        long elapsed;
        do {
            session.forward(window, 0, ctx / 2);
            tokens += ctx;
            elapsed = System.nanoTime() - t0;
        } while (elapsed < seconds * 1e9);
        return new Throughput(tokens / (elapsed / 1e9), tokens / ((processCpuNanos() - cpu0) / 1e9));
    }

    /** A model of {@code c}'s shape with seeded N(0, 0.02²)-ish uniform weights and unit norms. */
    private static LlamaModel random(ModelConfig c, Compute compute, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] embedding = uniform(rnd, c.vocabSize() * c.dim());
        List<LlamaModel.Layer> layers = new ArrayList<>();
        for (int l = 0; l < c.layers(); l++) {
            layers.add(new LlamaModel.Layer(ones(c.dim()),
                    dense(rnd, c.dim(), c.dim(), compute), dense(rnd, c.kvDim(), c.dim(), compute),
                    dense(rnd, c.kvDim(), c.dim(), compute), dense(rnd, c.dim(), c.dim(), compute),
                    ones(c.dim()),
                    dense(rnd, c.hiddenDim(), c.dim(), compute), dense(rnd, c.hiddenDim(), c.dim(), compute),
                    dense(rnd, c.dim(), c.hiddenDim(), compute)));
        }
        return new LlamaModel(c, RopeConvention.ADJACENT_PAIRS, TokenEmbedding.of(embedding, c.dim()), layers, ones(c.dim()),
                new DenseF32Weights(embedding, c.vocabSize(), c.dim(), compute), compute);
    }

    private static DenseF32Weights dense(SplittableRandom rnd, int out, int in, Compute compute) {
        return new DenseF32Weights(uniform(rnd, out * in), out, in, compute);
    }

    private static float[] uniform(SplittableRandom rnd, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) a[i] = (float) rnd.nextDouble(-0.035, 0.035);
        return a;
    }

    private static float[] ones(int n) {
        float[] a = new float[n];
        Arrays.fill(a, 1f);
        return a;
    }
}
