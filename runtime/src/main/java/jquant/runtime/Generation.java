package jquant.runtime;

import java.util.Arrays;
import java.util.function.IntConsumer;

/** Text continuation: the prompt in one batch, then one token at a time. */
public final class Generation {
    private Generation() {}

    /**
     * Continues {@code prompt} (token ids, BOS included if wanted) by up to {@code maxNewTokens}
     * tokens, stopping early, without emitting it, when {@code stopToken} is sampled (-1: never).
     * Each new token is passed to {@code onToken} as soon as it is chosen.
     *
     * @return the new tokens, without the prompt
     * @throws IllegalArgumentException if the prompt is empty or prompt and continuation do not fit
     *         the model's context
     */
    public static int[] generate(LlamaModel model, int[] prompt, int maxNewTokens, Sampler sampler,
                                 int stopToken, IntConsumer onToken) {
        if (prompt.length == 0) throw new IllegalArgumentException("the prompt has no tokens (encode with BOS to start from nothing)");
        if (maxNewTokens < 0) throw new IllegalArgumentException("max new tokens must be ≥ 0, got " + maxNewTokens);
        int context = model.config().maxSeqLen();
        // the last new token is never fed back, so the sequence needs prompt + new - 1 positions
        if ((long) prompt.length + maxNewTokens - 1 > context) {
            throw new IllegalArgumentException(prompt.length + " prompt tokens + " + maxNewTokens
                    + " new tokens exceed the model's context of " + context);
        }
        int[] generated = new int[maxNewTokens];
        if (maxNewTokens == 0) return generated;
        int vocab = model.config().vocabSize();
        InferenceSession session = model.newSession(prompt.length + maxNewTokens - 1);
        float[] logits = session.forward(prompt, 0, prompt.length - 1);
        int count = 0;
        while (true) {
            int next = sampler.sample(logits, 0, vocab);
            if (next == stopToken) break;
            generated[count++] = next;
            onToken.accept(next);
            if (count == maxNewTokens) break;
            logits = session.decode(next, prompt.length + count - 1);
        }
        return Arrays.copyOf(generated, count);
    }
}
