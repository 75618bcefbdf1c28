package jquant.bench;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import jquant.runtime.Compute;
import jquant.runtime.InferenceSession;
import jquant.runtime.LoadedModel;
import jquant.core.WorkerPool;

/**
 * Prefill speed of a whole model as {@code jquant eval} runs it: windows of {@code ctx} tokens of a
 * real text (BOS first), each pushed through the model in batches with the logits of its second half
 * computed — llama-perplexity's protocol, so tokens/s compare with its figures on the same windows.
 * One untimed window warms the JIT up.
 */
public final class PrefillBench {

    /** One thread count's figures. */
    public record Result(int threads, int windows, int ctx, double seconds) {
        public double tokensPerSecond() { return (double) windows * ctx / seconds; }
    }

    private PrefillBench() {}

    public static List<Result> run(DecodeBench.ModelLoader loader, int[] tokens, int bos, int ctx, int windows, int[] threadCounts,
                                   PrintStream out) throws Exception {
        if (tokens.length < (long) ctx * (windows + 1)) {
            throw new IllegalArgumentException("the text has " + tokens.length + " tokens, " + (long) ctx * (windows + 1)
                    + " are needed for " + windows + " windows of " + ctx + " and one to warm up");
        }
        List<Result> results = new ArrayList<>();
        out.printf("%7s  %8s  %10s  %10s%n", "threads", "windows", "seconds", "tokens/s");
        for (int threads : threadCounts) {
            try (WorkerPool pool = new WorkerPool(threads); LoadedModel loaded = loader.load(Compute.vector().on(pool))) {
                InferenceSession session = loaded.model().newSession(ctx);
                window(session, tokens, 0, ctx, bos);
                OptionalLong read = StorageReads.bytes();
                long t0 = System.nanoTime();
                for (int w = 1; w <= windows; w++) window(session, tokens, w, ctx, bos);
                Result r = new Result(threads, windows, ctx, (System.nanoTime() - t0) / 1e9);
                long readWhileTimed = StorageReads.since(read);
                results.add(r);
                out.printf("%7d  %8d  %10.2f  %10.1f%n", threads, windows, r.seconds(), r.tokensPerSecond());
                StorageReads.note(out, readWhileTimed);
            }
        }
        return results;
    }

    private static void window(InferenceSession session, int[] tokens, int w, int ctx, int bos) {
        int[] window = Arrays.copyOfRange(tokens, w * ctx, (w + 1) * ctx);
        window[0] = bos;
        session.forward(window, 0, ctx / 2);
    }
}
