package jquant.bench;

import java.io.PrintStream;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import jquant.runtime.Compute;
import jquant.runtime.InferenceSession;
import jquant.runtime.LlamaModel;
import jquant.runtime.LoadedModel;
import jquant.core.WorkerPool;

/**
 * Decode speed of a whole model against the machine's memory bandwidth, both measured in one run: for
 * each thread count, the read rate of {@link MemoryProbe} on a pool of that size, then the model
 * loaded on the same pool decodes greedily after a short prompt. A decode step reads every linear
 * layer's stored bytes once ({@link LlamaModel#linearWeightBytes}), so bytes ÷ time per token,
 * divided by the probe's rate, says how close the step runs to memory speed (llama.cpp reaches about
 * 0.6 for F16, 0.45 for Q4_0 and 0.3 for TQ2_0 on these machines).
 */
public final class DecodeBench {

    /** Opens the model under test on the given threads; the bench closes it when that thread count is done. */
    @FunctionalInterface
    public interface ModelLoader {
        LoadedModel load(Compute compute) throws Exception;
    }

    /** One thread count's figures. */
    public record Result(int threads, double probeGBs, double msPerToken, long weightBytes) {
        public double weightGBs() { return weightBytes / (msPerToken / 1e3) / 1e9; }

        public double ofBandwidth() { return weightGBs() / probeGBs; }
    }

    private DecodeBench() {}

    /**
     * Decodes {@code tokens} tokens (after {@code warmUp} untimed ones) following {@code prompt}, once
     * per entry of {@code threadCounts}, printing a line each.
     */
    public static List<Result> run(ModelLoader loader, int[] prompt, int warmUp, int tokens, int[] threadCounts, PrintStream out)
            throws Exception {
        List<Result> results = new ArrayList<>();
        try (MemoryProbe probe = new MemoryProbe()) {
            out.printf("%7s  %12s  %10s  %14s  %12s%n", "threads", "probe GB/s", "ms/token", "weights GB/s", "of probe");
            for (int threads : threadCounts) {
                results.add(runOne(loader, probe, threads, prompt, warmUp, tokens, out));
                collectClosedLoad();
            }
        }
        return results;
    }

    /** One thread count of {@link #run}, in a frame of its own: once it returns, nothing holds its load. */
    private static Result runOne(ModelLoader loader, MemoryProbe probe, int threads, int[] prompt, int warmUp, int tokens, PrintStream out)
            throws Exception {
        try (WorkerPool pool = new WorkerPool(threads); LoadedModel loaded = loader.load(Compute.vector().on(pool))) {
            double bandwidth = probe.bandwidth(pool, 6);
            LlamaModel model = loaded.model();
            Timed t = msPerToken(model, prompt, warmUp, tokens);
            Result r = new Result(threads, bandwidth, t.msPerToken(), model.linearWeightBytes());
            out.printf("%7d  %12.1f  %10.2f  %14.1f  %12.2f%n", threads, bandwidth, t.msPerToken(), r.weightGBs(), r.ofBandwidth());
            StorageReads.note(out, t.storageBytes());
            return r;
        }
    }

    /**
     * Frees what a closed load leaves to the garbage collector (the weightlet lanes' copies), so that the next thread count's
     * probe and decode do not run beside a dead model's memory.
     */
    private static void collectClosedLoad() {
        System.gc();
    }

    /**
     * As {@link #run}, each thread count's model decoding in turn with a second load of it on other kernels
     * ({@code against}, named {@code againstName}), token by token in one process, so that the two speeds
     * meet the same moments of the machine; prints both and the first's speed as a multiple of the second's.
     */
    public static List<Result> compare(ModelLoader loader, ModelLoader against, String againstName, int[] prompt, int warmUp, int tokens,
                                       int[] threadCounts, PrintStream out) throws Exception {
        List<Result> results = new ArrayList<>();
        try (MemoryProbe probe = new MemoryProbe()) {
            out.printf("%7s  %12s  %10s  %14s  %12s  %14s  %8s%n", "threads", "probe GB/s", "ms/token", "weights GB/s", "of probe",
                    againstName + " ms", "speed");
            for (int threads : threadCounts) {
                results.add(compareOne(loader, against, againstName, probe, threads, prompt, warmUp, tokens, out));
                collectClosedLoad();
            }
        }
        return results;
    }

    /** One thread count of {@link #compare}, in a frame of its own: once it returns, nothing holds its loads. */
    private static Result compareOne(ModelLoader loader, ModelLoader against, String againstName, MemoryProbe probe, int threads, int[] prompt,
                                     int warmUp, int tokens, PrintStream out) throws Exception {
        try (WorkerPool pool = new WorkerPool(threads); LoadedModel first = loader.load(Compute.vector().on(pool));
             LoadedModel second = against.load(Compute.vector().on(pool))) {
            double bandwidth = probe.bandwidth(pool, 6);
            LlamaModel model = first.model(), other = second.model();
            int timedEnd = checkedEnd(model, prompt, warmUp, tokens);
            warm(model, prompt, timedEnd);
            warm(other, prompt, timedEnd);
            Steps a = new Steps(model, prompt, warmUp, timedEnd), b = new Steps(other, prompt, warmUp, timedEnd);
            for (int i = 0; i < tokens; i++) {
                // Alternate which goes first, so neither always follows the other's traffic.
                if (i % 2 == 0) {
                    a.step();
                    b.step();
                } else {
                    b.step();
                    a.step();
                }
            }
            Result r = new Result(threads, bandwidth, a.msPerStep(), model.linearWeightBytes());
            out.printf("%7d  %12.1f  %10.2f  %14.1f  %12.2f  %14.2f  %7.3fx%n", threads, bandwidth, r.msPerToken(), r.weightGBs(),
                    r.ofBandwidth(), b.msPerStep(), b.msPerStep() / a.msPerStep());
            return r;
        }
    }

    /** The position after the timed steps, which the model's context must hold. */
    private static int checkedEnd(LlamaModel model, int[] prompt, int warmUp, int tokens) {
        long end = (long) prompt.length + warmUp + tokens;
        if (end > model.config().maxSeqLen()) {
            throw new IllegalArgumentException("a prompt of " + prompt.length + " tokens, " + warmUp + " warm-up and " + tokens
                    + " timed steps need " + end + " positions; the model's context holds " + model.config().maxSeqLen());
        }
        return (int) end;
    }

    /** A decode step's wall time, and the bytes read from storage while the steps were timed. */
    record Timed(double msPerToken, long storageBytes) {}

    /** Most extra steps of the first pass while the JIT compiler is still at work. */
    private static final int MAX_EXTRA_WARMUP = 256;
    /** Steps in a row with no compilation time added that count as a quiet compiler, if they also last {@link #QUIET_NANOS}. */
    private static final int QUIET_STEPS = 4;
    /**
     * Wall time with no compilation time added that counts as a quiet compiler: the compilers add a compilation's time when
     * it ends, and one of the decode kernels' C2 compilations outlasts four short steps.
     */
    private static final long QUIET_NANOS = 500_000_000L;

    /**
     * Wall time per greedy decode step, after the prompt and {@code warmUp} steps, measured in a second
     * session after {@link #warm}. With it, the bytes read from storage during the timed steps
     * ({@link StorageReads}).
     */
    static Timed msPerToken(LlamaModel model, int[] prompt, int warmUp, int tokens) {
        int timedEnd = checkedEnd(model, prompt, warmUp, tokens);
        warm(model, prompt, timedEnd);
        Steps steps = new Steps(model, prompt, warmUp, timedEnd);
        OptionalLong read = StorageReads.bytes();
        for (int i = 0; i < tokens; i++) steps.step();
        return new Timed(steps.msPerStep(), StorageReads.since(read));
    }

    /**
     * The first pass: a session decodes the positions up to {@code timedEnd} and then more (up to
     * {@value #MAX_EXTRA_WARMUP}) until the JIT compiler has added no compilation time for {@value #QUIET_STEPS}
     * steps and half a second, as llama-bench times repetitions after a warm-up run: kernels that a longer context switches to
     * (the blocked attention kernels) are then compiled before the timed steps reach them, and no compilation
     * takes a core from them (bench/RESULTS.md).
     */
    private static void warm(LlamaModel model, int[] prompt, int timedEnd) {
        InferenceSession first = model.newSession(Math.min(model.config().maxSeqLen(), timedEnd + MAX_EXTRA_WARMUP + 1));
        int pos = prompt.length;
        int next = argmax(first.forward(prompt, 0, prompt.length - 1));
        while (pos < timedEnd) next = argmax(first.decode(next, pos++));
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit != null && jit.isCompilationTimeMonitoringSupported()) {
            long last = jit.getTotalCompilationTime(), quietSince = System.nanoTime();
            for (int quiet = 0; (quiet < QUIET_STEPS || System.nanoTime() - quietSince < QUIET_NANOS)
                    && pos < first.capacity() && pos < timedEnd + MAX_EXTRA_WARMUP; ) {
                next = argmax(first.decode(next, pos++));
                long now = jit.getTotalCompilationTime();
                if (now != last) {
                    quiet = 0;
                    quietSince = System.nanoTime();
                } else {
                    quiet++;
                }
                last = now;
            }
        }
    }

    /** A second session after the prompt and {@code warmUp} untimed steps, whose greedy steps are timed one by one. */
    private static final class Steps {
        private final InferenceSession session;
        private int pos, next, steps;
        private long nanos;

        Steps(LlamaModel model, int[] prompt, int warmUp, int timedEnd) {
            session = model.newSession(Math.min(model.config().maxSeqLen(), timedEnd + 1));
            pos = prompt.length;
            next = argmax(session.forward(prompt, 0, prompt.length - 1));
            for (int i = 0; i < warmUp; i++) next = argmax(session.decode(next, pos++));
        }

        void step() {
            long t0 = System.nanoTime();
            next = argmax(session.decode(next, pos++));
            nanos += System.nanoTime() - t0;
            steps++;
        }

        double msPerStep() {
            return nanos / 1e6 / steps;
        }
    }

    private static int argmax(float[] logits) {
        int best = 0;
        for (int i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
        return best;
    }
}
