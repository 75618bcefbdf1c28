package jquant.runtime;

import jquant.formats.RopeConvention;
import jquant.formats.RopeScaling;

/**
 * Rotary position embedding with precomputed angles. Within each head, frequency {@code j < headDim/2}
 * is {@code theta^(-2j/headDim)} and rotates the pair the checkpoint's {@link RopeConvention} says:
 * {@code (2j, 2j+1)} for adjacent pairs (Meta, llama2.c, GGUF), {@code (j, j + headDim/2)} for
 * rotate-half (Hugging Face, whose exporter permuted the q/k rows to match). The weights are used as
 * stored; only the pairing differs. With {@link RopeScaling} (Llama 3.1's scaling) frequency {@code j} is
 * divided by the checkpoint's factor {@code j}, as Hugging Face transformers' {@code _compute_llama3_parameters}
 * and llama.cpp's {@code rope_freqs} compute it.
 *
 * <p>Scalar on purpose: it touches each q/k element once per token, which is nothing next to the
 * matrix products.
 */
final class RotaryEmbedding {
    private final RopeConvention convention;
    private final int headDim;
    private final int half;
    private final int positions;
    private final float[] cos;
    private final float[] sin;

    /** @param scaling per-frequency divisors, or null for plain RoPE */
    RotaryEmbedding(RopeConvention convention, int headDim, int positions, float theta, RopeScaling scaling) {
        this.convention = convention;
        this.headDim = headDim;
        this.half = headDim / 2;
        this.positions = positions;
        this.cos = new float[positions * half];
        this.sin = new float[positions * half];
        float[] factors = scaling == null ? null : scaling.factors();
        for (int j = 0; j < half; j++) {
            double frequency = Math.pow(theta, -2.0 * j / headDim);
            if (factors != null) frequency /= factors[j];
            for (int p = 0; p < positions; p++) {
                double angle = p * frequency;
                cos[p * half + j] = (float) Math.cos(angle);
                sin[p * half + j] = (float) Math.sin(angle);
            }
        }
    }

    /** Rotates the {@code heads} consecutive heads at {@code v[off..]} to position {@code pos}. */
    void apply(float[] v, int off, int heads, int pos) {
        if (pos < 0 || pos >= positions) throw new IllegalArgumentException("position " + pos + " outside [0, " + positions + ")");
        int angles = pos * half;
        boolean adjacent = convention == RopeConvention.ADJACENT_PAIRS;
        for (int h = 0; h < heads; h++) {
            int head = off + h * headDim;
            for (int j = 0; j < half; j++) {
                int a = adjacent ? head + 2 * j : head + j;
                int b = adjacent ? a + 1 : a + half;
                float c = cos[angles + j];
                float s = sin[angles + j];
                float x0 = v[a];
                float x1 = v[b];
                v[a] = x0 * c - x1 * s;
                v[b] = x0 * s + x1 * c;
            }
        }
    }
}
