package jquant.bench;

import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;
import jquant.runtime.InferenceSession;
import jquant.runtime.KernelChoice;
import jquant.runtime.LlamaModel;
import jquant.runtime.LoadedModel;
import jquant.runtime.PackedModelLoader;
import jquant.runtime.Sampler;
import jquant.core.WorkerPool;

/**
 * Decode speed of two builds of the runtime side by side in one JVM: each build's classes in a class
 * loader of its own, a model loaded in each, and their decode steps alternating, so that both see the
 * machine in the same minutes, and whether both decoded the same tokens. On a shared machine the same command moves between processes by far
 * more than a change of a few percent (compilation outcomes as well as the neighbours); alternating
 * inside one process shows such a change (bench/RESULTS.md). Run it through
 * {@code scripts/side-by-side}, which builds the baseline revision and the class paths.
 *
 * <p>Arguments: the baseline's class path, the candidate's class path (each: its module classes, this
 * module's classes and the third-party jars, separated by the path separator), the model file, the
 * threads, the decode steps per round, the rounds, the {@code .jqw} mode (weight-only or npu) and the depth: the
 * positions of the prompt before the decode steps, which walk the next 504 positions and wrap back.
 */
public final class SideBySide {

    private SideBySide() {}

    /** Positions the decode steps walk after the prompt before they wrap back to its end. */
    private static final int WINDOW = 504;

    /**
     * One build's model, decoding greedily; each call runs {@code steps} steps and returns ms per step,
     * and {@link #get} the tokens decoded so far (JDK interfaces, so that another class loader's caller
     * can use them).
     */
    public static final class Steps implements DoubleSupplier, Supplier<int[]> {
        private final InferenceSession session;
        private final Sampler greedy = Sampler.greedy();
        private final int steps;
        private final int wrapAt, depth;
        private int pos;
        private int next;
        private int[] decoded = new int[64];
        private int count;

        public Steps(String model, int threads, int steps, String mode, int depth) throws Exception {
            // The model keeps the pool it was loaded under (its Compute), so its decode steps run on it.
            LlamaModel m = new WorkerPool(threads).call(() -> LoadedModel.open(Path.of(model), null,
                    mode.equals("npu") ? PackedModelLoader.Mode.NPU : PackedModelLoader.Mode.WEIGHT_ONLY, KernelChoice.AUTO).model());
            // a round's steps fit after the prompt before the first wrap
            if (depth < 1 || depth + steps > m.config().maxSeqLen()) {
                throw new IllegalArgumentException("depth " + depth + " outside [1, " + (m.config().maxSeqLen() - steps) + "] for " + model);
            }
            wrapAt = Math.min(m.config().maxSeqLen(), depth + WINDOW);
            session = m.newSession(wrapAt);
            int[] prompt = new int[depth];
            for (int i = 0; i < depth; i++) prompt[i] = 1 + i % 8;
            next = next(session.forward(prompt, 0, prompt.length - 1));
            pos = this.depth = depth;
            this.steps = steps;
        }

        @Override
        public double getAsDouble() {
            long t0 = System.nanoTime();
            for (int i = 0; i < steps; i++) {
                if (pos == wrapAt) pos = depth;   // back to just after the prompt: both builds walk the same positions
                next = next(session.decode(next, pos++));
                if (count == decoded.length) decoded = Arrays.copyOf(decoded, 2 * count);
                decoded[count++] = next;
            }
            return (System.nanoTime() - t0) / 1e6 / steps;
        }

        /** Every token decoded so far, in order (the prompt's successor first). */
        @Override
        public int[] get() {
            return Arrays.copyOf(decoded, count);
        }

        private int next(float[] logits) {
            return greedy.sample(logits, 0, logits.length);
        }
    }

    /**
     * Each build's ms per step over the rounds, per round the candidate's speed ÷ the baseline's, and
     * the tokens each build decoded (the same if the builds compute the same model).
     */
    public record Result(double[] baselineMs, double[] candidateMs, double[] ratios, int[] baselineTokens, int[] candidateTokens) {
        /** The first step at which the builds decoded different tokens, or -1 if they never did. */
        public int firstDifference() {
            return Arrays.mismatch(baselineTokens, candidateTokens);
        }
    }

    /**
     * Loads {@code model} once per class path (baseline first), warms both, then runs {@code rounds}
     * rounds of {@code steps} decode steps per build, who goes first alternating by round.
     */
    public static Result compare(String baseline, String candidate, String model, int threads, int steps, int rounds, String mode,
                                 int depth) throws Exception {
        DoubleSupplier[] builds = new DoubleSupplier[2];
        String[] classPaths = {baseline, candidate};
        for (int k = 0; k < 2; k++) {
            ClassLoader loader = new URLClassLoader(urls(classPaths[k]), ClassLoader.getPlatformClassLoader());
            // by name: the caller's loader need not have runtime classes to link Steps against
            builds[k] = (DoubleSupplier) loader.loadClass("jquant.bench.SideBySide$Steps")
                    .getConstructor(String.class, int.class, int.class, String.class, int.class).newInstance(model, threads, steps, mode, depth);
        }
        for (int w = 0; w < 3; w++) for (DoubleSupplier b : builds) b.getAsDouble();
        double[][] ms = new double[2][rounds];
        double[] ratios = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            for (int j = 0; j < 2; j++) {
                int k = (r + j) % 2;
                ms[k][r] = builds[k].getAsDouble();
            }
            ratios[r] = ms[0][r] / ms[1][r];
        }
        return new Result(ms[0], ms[1], ratios, tokens(builds[0]), tokens(builds[1]));
    }

    @SuppressWarnings("unchecked")
    private static int[] tokens(DoubleSupplier build) {
        return ((Supplier<int[]>) build).get();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 8 || !(args[6].equals("weight-only") || args[6].equals("npu"))) {
            System.err.println("usage: SideBySide BASELINE_CLASSPATH CANDIDATE_CLASSPATH MODEL THREADS STEPS ROUNDS weight-only|npu DEPTH");
            System.exit(2);
        }
        int threads = Integer.parseInt(args[3]), steps = Integer.parseInt(args[4]), rounds = Integer.parseInt(args[5]), depth = Integer.parseInt(args[7]);
        Result r = compare(args[0], args[1], args[2], threads, steps, rounds, args[6], depth);
        System.out.printf("%s, %d thread(s), %d rounds of %d steps from position %d, builds alternating%n", args[2], threads, rounds, steps, depth);
        print("baseline", r.baselineMs());
        print("candidate", r.candidateMs());
        double[] ratios = sorted(r.ratios());
        System.out.printf("candidate speed ÷ baseline speed, per round: median %.3f (%.3f–%.3f)%n",
                ratios[ratios.length / 2], ratios[0], ratios[ratios.length - 1]);
        int differs = r.firstDifference();
        System.out.println(differs < 0 ? "both builds decoded the same " + r.baselineTokens().length + " tokens"
                : "the builds decoded different tokens from step " + differs + ": they do not compute the same model");
        System.exit(0);   // the loaders' pools and layer threads are not worth closing one by one
    }

    private static void print(String name, double[] ms) {
        double[] s = sorted(ms);
        System.out.printf("%-10s median %.2f ms/step (%.2f–%.2f)%n", name, s[s.length / 2], s[0], s[s.length - 1]);
    }

    private static double[] sorted(double[] values) {
        double[] s = values.clone();
        Arrays.sort(s);
        return s;
    }

    private static URL[] urls(String classPath) throws MalformedURLException {
        List<URL> urls = new ArrayList<>();
        for (String entry : classPath.split(java.io.File.pathSeparator)) {
            if (!entry.isEmpty()) urls.add(Path.of(entry).toUri().toURL());
        }
        return urls.toArray(URL[]::new);
    }
}
