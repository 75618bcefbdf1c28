package jquant.calibration;

import jquant.runtime.Compute;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

class AlphaSearchTest {

    /** Gaussian inputs (tokens × channels) whose first {@code outliers} channels are {@code gain}× larger. */
    private static float[] inputs(int tokens, int channels, int outliers, float gain, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] x = new float[tokens * channels];
        for (int t = 0; t < tokens; t++) {
            for (int j = 0; j < channels; j++) x[t * channels + j] = (float) (gaussian(r) * (j < outliers ? gain : 1));
        }
        return x;
    }

    private static double gaussian(SplittableRandom r) {
        return Math.sqrt(-2 * Math.log(1 - r.nextDouble())) * Math.cos(2 * Math.PI * r.nextDouble());
    }

    private static float[] channelMax(float[] x, int channels) {
        float[] m = new float[channels];
        for (int i = 0; i < x.length; i++) m[i % channels] = Math.max(m[i % channels], Math.abs(x[i]));
        return m;
    }

    @Test
    void outlierChannelsAreSmoothedAwayAndCleanOnesAreLeftAlone() {
        int tokens = 256, channels = 128, rows = 96;
        AlphaSearch.Member w = new AlphaSearch.Member(inputs(rows, channels, 0, 1, 3), rows, channels);
        // Activation outliers 60× the rest: per-tensor int8 crushes the ordinary channels unless α moves the range into W.
        float[] x = inputs(tokens, channels, 4, 60, 5);
        float[] sIn = channelMax(x, channels);
        GroupStats.SearchedAlpha outliers = new AlphaSearch(x, tokens, sIn, SmoothingFactors.floored(sIn), List.of(w), Compute.scalar()).search(5);
        assertThat(outliers.alpha()).isGreaterThan(0.2f);
        assertThat(outliers.error()).isLessThan(0.5 * outliers.unsmoothedError());

        // Uniform activations: nothing to gain from moving their range into the weights.
        float[] flat = inputs(tokens, channels, 0, 1, 7);
        float[] flatMax = channelMax(flat, channels);
        GroupStats.SearchedAlpha clean = new AlphaSearch(flat, tokens, flatMax, SmoothingFactors.floored(flatMax), List.of(w), Compute.scalar()).search(5);
        assertThat(clean.error()).isGreaterThan(0.8 * clean.unsmoothedError());
    }

    /**
     * The static range is the maximum over the whole calibration run, set by a few tokens the sampled rows
     * need not hold: here a run whose maximum is twice the sample's in every channel. The clip searched with
     * α then saturates those few and rounds the sampled tokens finely (a smaller error than the full range);
     * when the run's maximum is the sample's own, the range is clipped less.
     */
    @Test
    void aRangeSetByTokensOutsideTheSampleIsClippedWhereThatLowersTheError() {
        int tokens = 256, channels = 128, rows = 96;
        AlphaSearch.Member w = new AlphaSearch.Member(inputs(rows, channels, 0, 1, 3), rows, channels);
        float[] x = inputs(tokens, channels, 0, 1, 9);
        float[] sampleMax = channelMax(x, channels), runMax = sampleMax.clone();
        for (int j = 0; j < channels; j++) runMax[j] *= 2;
        AlphaSearch search = new AlphaSearch(x, tokens, runMax, SmoothingFactors.floored(runMax), List.of(w), Compute.scalar());
        GroupStats.SearchedAlpha a = search.search(8);
        assertThat(a.inputClip()).isBetween(0.4f, 0.6f);
        assertThat(a.error()).isEqualTo(search.error(a.alpha(), 8, a.inputClip()));
        assertThat(a.error()).isLessThan(0.5 * search.error(a.alpha(), 8, 1f));

        GroupStats.SearchedAlpha own = new AlphaSearch(x, tokens, sampleMax, SmoothingFactors.floored(sampleMax), List.of(w), Compute.scalar()).search(8);
        assertThat(own.inputClip()).isGreaterThan(a.inputClip());
    }

    /**
     * The weights' share of the error grows as the budget shrinks, so the α searched at the budget's
     * widths falls with it; α = 0 is always a candidate, so the chosen α is never worse than none.
     */
    @Test
    void smallerBudgetsGetWeakerSmoothingNeverWorseThanNone() {
        int tokens = 256, channels = 128, rows = 96;
        AlphaSearch.Member w = new AlphaSearch.Member(inputs(rows, channels, 0, 1, 3), rows, channels);
        float[] x = inputs(tokens, channels, 4, 60, 5);
        float[] sIn = channelMax(x, channels);
        List<GroupStats.SearchedAlpha> alphas = new AlphaSearch(x, tokens, sIn, SmoothingFactors.floored(sIn), List.of(w), Compute.scalar())
                .search(List.of(2.0, 3.0, 5.0, 8.0));
        assertThat(alphas).extracting(GroupStats.SearchedAlpha::budget).containsExactly(2.0, 3.0, 5.0, 8.0);
        for (int i = 0; i < alphas.size(); i++) {
            GroupStats.SearchedAlpha a = alphas.get(i);
            assertThat(a.error()).as("budget %s", a.budget()).isLessThanOrEqualTo(a.unsmoothedError());
            if (i > 0) assertThat(a.alpha()).as("budget %s", a.budget()).isGreaterThanOrEqualTo(alphas.get(i - 1).alpha());
        }
        assertThat(alphas.getFirst().alpha()).isLessThan(alphas.getLast().alpha());
    }

    @Test
    void tiedBasesShareOneFactorPerKvChannel() {
        jquant.formats.ModelConfig c = new jquant.formats.ModelConfig(16, 32, 1, 4, 2, 10, 8, 10000f, 1e-5f, false);
        float[] sIn = new float[16];
        for (int j = 0; j < 16; j++) sIn[j] = j + 1;
        float[] b = SmoothingFactors.bases(LinearGroup.ATTN_OUTPUT, sIn, c);
        // head dim 4, heads 0,1 share kv 0 and heads 2,3 share kv 1: each channel takes the max over its kv group.
        for (int d = 0; d < 4; d++) {
            assertThat(b[d]).isEqualTo(b[4 + d]).isEqualTo(sIn[4 + d]);
            assertThat(b[8 + d]).isEqualTo(b[12 + d]).isEqualTo(sIn[12 + d]);
        }
        float[] zeroChannel = sIn.clone();
        zeroChannel[3] = 0;
        assertThat(SmoothingFactors.bases(LinearGroup.ATTN_QKV, zeroChannel, c)[3]).isEqualTo(16 * SmoothingFactors.FLOOR);
        assertThat(SmoothingFactors.floored(new float[3])).containsExactly(1f, 1f, 1f);
    }
}
