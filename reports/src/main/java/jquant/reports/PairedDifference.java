package jquant.reports;

import org.apache.commons.math3.distribution.TDistribution;

/**
 * Whether one evaluation really beats another on the same tokens: the mean of the per-token
 * differences {@code d_t = NLL_first(t) − NLL_second(t)} with its {@value #CONFIDENCE} confidence
 * interval from Student's t distribution with n − 1 degrees of freedom (Apache Commons Math):
 * {@code mean ± t_{0.975, n−1} · sd(d) / √n}. Pairing removes what both models find hard about a
 * token, so the interval is far narrower than the two perplexities' ± suggest. Like llama.cpp's ±, it
 * treats tokens as independent; tokens of one window are not quite, so read an interval that barely
 * excludes 0 with care.
 *
 * @param first  the first evaluation's label
 * @param second the second's
 * @param tokens tokens compared
 * @param mean   mean NLL difference, nats per token (negative: {@code first} predicts better)
 * @param low    lower end of the interval
 * @param high   upper end
 */
public record PairedDifference(String first, String second, int tokens, double mean, double low, double high) {
    public static final double CONFIDENCE = 0.95;

    /** The paired difference {@code a − b}; both arrays hold the same scored tokens in the same order. */
    public static PairedDifference of(String first, float[] a, String second, float[] b) {
        if (a.length != b.length) throw new IllegalArgumentException(first + " scored " + a.length + " tokens but " + second + " " + b.length);
        if (a.length < 2) throw new IllegalArgumentException("a paired comparison needs at least 2 tokens, not " + a.length);
        int n = a.length;
        double sum = 0;
        for (int t = 0; t < n; t++) sum += (double) a[t] - b[t];
        double mean = sum / n, squares = 0;
        for (int t = 0; t < n; t++) {
            double d = (double) a[t] - b[t] - mean;
            squares += d * d;
        }
        double halfWidth = new TDistribution(n - 1).inverseCumulativeProbability(0.5 + CONFIDENCE / 2) * Math.sqrt(squares / (n - 1) / n);
        return new PairedDifference(first, second, n, mean, mean - halfWidth, mean + halfWidth);
    }

    /** Whether the interval excludes 0: the difference is real at this confidence. */
    public boolean real() {
        return low > 0 || high < 0;
    }

    /** {@code first better}, {@code second better} or {@code no real difference}. */
    public String verdict() {
        return high < 0 ? first + " better" : low > 0 ? second + " better" : "no real difference";
    }
}
