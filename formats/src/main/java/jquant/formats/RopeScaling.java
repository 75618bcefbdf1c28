package jquant.formats;

import java.util.Arrays;

/**
 * A RoPE frequency table's per-frequency divisors: frequency {@code j < headDim/2} of a head is
 * {@code theta^(-2j/headDim) / factor(j)}. This is the form llama.cpp stores in a GGUF file (the
 * {@code rope_freqs.weight} tensor) and applies; Hugging Face describes the same table by its
 * {@code rope_scaling} parameters, which {@link #llama3} turns into divisors.
 */
public final class RopeScaling {
    /** GGUF tensor llama.cpp reads the divisors from (convert_hf_to_gguf.py writes it for rope_type llama3). */
    public static final String GGUF_TENSOR = "rope_freqs.weight";

    private final float[] factors;

    private RopeScaling(float[] factors) {
        for (float f : factors) {
            if (!(f > 0) || !Float.isFinite(f)) throw new IllegalArgumentException("RoPE frequency factor " + f + " is not a positive number");
        }
        this.factors = factors.clone();
    }

    /** Divisors as stored (a GGUF {@code rope_freqs.weight}, a .jqw file). */
    public static RopeScaling ofFactors(float[] factors) {
        return new RopeScaling(factors);
    }

    /**
     * Llama 3.1's scaling, exactly as Hugging Face transformers' {@code _compute_llama3_parameters}: with
     * wavelength {@code λ = 2π / f}, frequencies whose λ is below {@code original / highFreqFactor} are
     * kept, those above {@code original / lowFreqFactor} divided by {@code factor}, and those between
     * interpolated: {@code f · ((1 − s) / factor + s)} with {@code s = (original / λ − low) / (high − low)}.
     * As a divisor that is llama.cpp's {@code 1 / ((1 − s) / factor + s)}.
     */
    public static RopeScaling llama3(float theta, int headDim, double factor, double lowFreqFactor, double highFreqFactor,
                                     int originalMaxPositions) {
        if (!(factor > 0) || !(lowFreqFactor > 0) || !(highFreqFactor > lowFreqFactor) || originalMaxPositions <= 0) {
            throw new IllegalArgumentException("llama3 rope_scaling needs factor > 0, 0 < low_freq_factor < high_freq_factor and "
                    + "original_max_position_embeddings > 0 (factor " + factor + ", low " + lowFreqFactor + ", high " + highFreqFactor
                    + ", original " + originalMaxPositions + ")");
        }
        double lowFreqWavelen = originalMaxPositions / lowFreqFactor;
        double highFreqWavelen = originalMaxPositions / highFreqFactor;
        float[] factors = new float[headDim / 2];
        for (int j = 0; j < factors.length; j++) {
            double wavelen = 2 * Math.PI / Math.pow(theta, -2.0 * j / headDim);
            if (wavelen < highFreqWavelen) {
                factors[j] = 1f;
            } else if (wavelen > lowFreqWavelen) {
                factors[j] = (float) factor;
            } else {
                double smooth = (originalMaxPositions / wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
                factors[j] = (float) (1 / ((1 - smooth) / factor + smooth));
            }
        }
        return new RopeScaling(factors);
    }

    /** The divisors, one per frequency ({@code headDim / 2}). */
    public float[] factors() {
        return factors.clone();
    }

    public int frequencies() {
        return factors.length;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RopeScaling r && Arrays.equals(factors, r.factors);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(factors);
    }

    @Override
    public String toString() {
        return "RopeScaling" + Arrays.toString(factors);
    }
}
