package jquant.runtime;

import java.util.SplittableRandom;

/** Picks the next token from a row of logits: greedily, or from the temperature-scaled softmax with a seeded generator. */
public final class Sampler {
    private final float temperature;
    private final SplittableRandom random;

    private Sampler(float temperature, SplittableRandom random) {
        this.temperature = temperature;
        this.random = random;
    }

    /** Always the most likely token (the lowest id among equal maxima, as llama2.c's argmax). */
    public static Sampler greedy() {
        return new Sampler(0f, null);
    }

    /**
     * Samples from {@code softmax(logits / temperature)}, reproducibly for a given {@code seed};
     * temperature 0 is {@link #greedy()}.
     */
    public static Sampler temperature(float temperature, long seed) {
        if (!(temperature >= 0) || Float.isInfinite(temperature)) {
            throw new IllegalArgumentException("temperature must be a finite number ≥ 0, got " + temperature);
        }
        return temperature == 0f ? greedy() : new Sampler(temperature, new SplittableRandom(seed));
    }

    /** The next token for the {@code vocab} logits at {@code logits[offset..]}. */
    public int sample(float[] logits, int offset, int vocab) {
        int best = 0;
        for (int i = 0; i < vocab; i++) {
            float value = logits[offset + i];
            if (!Float.isFinite(value)) throw new IllegalStateException("logit of token " + i + " is " + value);
            if (value > logits[offset + best]) best = i;
        }
        if (random == null) return best;
        double max = logits[offset + best];
        double[] weights = new double[vocab];
        double total = 0;
        for (int i = 0; i < vocab; i++) {
            weights[i] = Math.exp((logits[offset + i] - max) / temperature);
            total += weights[i];
        }
        double target = random.nextDouble() * total;
        double cumulative = 0;
        for (int i = 0; i < vocab; i++) {
            cumulative += weights[i];
            if (target < cumulative) return i;
        }
        return best;
    }
}
