package jquant.calibration;

import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.quantize.FusedAxpy;
import jquant.runtime.Compute;
import jquant.runtime.LinearWeights;
import jquant.runtime.LinearWeightsFactory;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A {@link LinearWeightsFactory} that gives the model its weights multiplied where they are stored
 * ({@link LinearWeightsFactory#inPlace}, so a model larger than the heap calibrates) wrapped in an observer:
 * each product first runs unchanged, then its input rows {@code x} and output rows {@code o} are
 * folded into running statistics. The forward pass is not touched. The first member of each
 * {@link LinearGroup} records the shared input (S_I, Σx², a reservoir sample of rows and, when asked,
 * Σx·xᵀ) from its first product on, until the calibrator {@link #take}s them: run one layer at a time,
 * only one layer's statistics exist at once. Every layer records its own S_O.
 *
 * <p>The sample is reservoir sampling (Algorithm R) over the input rows in the order the model
 * produces them, seeded per group, so the same text and seed always give the same sample.
 *
 * <p>Σx·xᵀ is summed in float32, as GPTQ sums its Hessian: each entry (i, j ≥ i) over the tokens in
 * order, one fused multiply-add per token, so the sums do not depend on how the work is dealt out over
 * threads. A batch of tokens is one rank-n update done as tiles ({@link FusedAxpy#tile}: 64 rows of the
 * square at a time, the batch's columns read from cache for all of them), into a D×D square held while
 * the layer runs; its upper triangle is what is kept ({@link SecondMoment}).
 */
final class ActivationRecorder implements LinearWeightsFactory {

    /** Rows of Σx·xᵀ one tile pass updates. */
    private static final int OUTER_ROWS = 64;
    /** Columns of one tile call: the batch's strip of them stays in L2 while the block's rows use it. */
    private static final int OUTER_COLUMNS = 256;

    /** Running statistics of one group's input. */
    static final class InputStats {
        final int channels;
        final float[] max;
        final double[] sumSquares;
        long rows;
        final float[] sample;
        final int sampleCapacity;
        /** Σ x·xᵀ, row-major D×D (entries below the diagonal are not kept); null unless second moments are recorded. */
        private final float[] sumOuter;
        private final Compute compute;
        private final SplittableRandom random;

        InputStats(int channels, int sampleCapacity, long seed, boolean secondMoments, Compute compute) {
            this.channels = channels;
            this.max = new float[channels];
            this.sumSquares = new double[channels];
            this.sampleCapacity = sampleCapacity;
            this.sample = new float[sampleCapacity * channels];
            this.sumOuter = secondMoments ? new float[Math.multiplyExact(channels, channels)] : null;
            this.compute = compute;
            this.random = new SplittableRandom(seed);
        }

        void add(float[] x, int n) {
            if (sumOuter != null) addOuter(x, n);
            for (int t = 0; t < n; t++) {
                int base = t * channels;
                for (int j = 0; j < channels; j++) {
                    float v = x[base + j];
                    max[j] = Math.max(max[j], Math.abs(v));
                    sumSquares[j] += (double) v * v;
                }
                long seen = rows++;
                long slot = seen < sampleCapacity ? seen : random.nextLong(seen + 1);
                if (slot < sampleCapacity) System.arraycopy(x, base, sample, (int) slot * channels, channels);
            }
        }

        /**
         * Rows [i0, i0 + 64) of the square, from column i0 on, get {@code x_ti · x_tj} for each token t of the batch
         * in order: the tile's coefficients are the block's columns of x, transposed.
         */
        private void addOuter(float[] x, int n) {
            int d = channels, blocks = (d + OUTER_ROWS - 1) / OUTER_ROWS;
            compute.pool().forRange(blocks, (long) n * OUTER_ROWS * d / 2, (worker, start, end) -> {
                float[] columns = new float[OUTER_ROWS * n];
                for (int b = start; b < end; b++) {
                    int i0 = b * OUTER_ROWS, rows = Math.min(OUTER_ROWS, d - i0);
                    for (int r = 0; r < rows; r++) {
                        for (int t = 0; t < n; t++) columns[r * n + t] = x[t * d + i0 + r];
                    }
                    for (int c0 = i0; c0 < d; c0 += OUTER_COLUMNS) {
                        FusedAxpy.VECTOR.tile(columns, 0, n, x, 0, d, sumOuter, i0 * d, d, rows, n, c0, Math.min(d, c0 + OUTER_COLUMNS));
                    }
                }
            });
        }

        /** E[x·xᵀ]: the upper triangle of the sums divided by the token count (these stats take no more rows after), or null if it was not recorded. */
        SecondMoment meanSecondMoment() {
            if (sumOuter == null) return null;
            int d = channels;
            float[] mean = new float[Math.toIntExact(SecondMoment.triangleSize(d))];
            for (int i = 0; i < d; i++) {
                int row = (int) SecondMoment.rowStart(d, i);
                for (int j = i; j < d; j++) mean[row + j - i] = (float) (sumOuter[i * d + j] / (double) rows);
            }
            return new SecondMoment.Held(d, mean);
        }

        /** Rows held in the sample: min(rows seen, capacity). */
        int sampleRows() {
            return (int) Math.min(rows, sampleCapacity);
        }

        float[] meanSquare() {
            float[] m = new float[channels];
            for (int j = 0; j < channels; j++) m[j] = (float) (sumSquares[j] / rows);
            return m;
        }
    }

    private final Compute compute;
    private final int sampleRows;
    private final long seed;
    private final boolean secondMoments;
    private final Map<String, InputStats> inputs = new LinkedHashMap<>();
    private final Map<String, float[]> outputs = new LinkedHashMap<>();

    ActivationRecorder(Compute compute, int sampleRows, long seed, boolean secondMoments) {
        this.compute = compute;
        this.sampleRows = sampleRows;
        this.seed = seed;
        this.secondMoments = secondMoments;
    }

    @Override
    public LinearWeights create(TensorKind kind, int layer, Tensor tensor) {
        LinearWeights dense = LinearWeightsFactory.inPlace(compute).create(kind, layer, tensor);
        LinearGroup group = LinearGroup.of(kind);
        String groupName = group.canonicalName(layer);
        boolean recordsInput = group.members().getFirst() == kind;
        long groupSeed = seed * 1_000_003L + groupName.hashCode();
        float[] outMax = new float[tensor.rows()];
        outputs.put(CalibrationStats.tensorName(kind, layer), outMax);
        return new LinearWeights() {
            @Override
            public int inFeatures() { return dense.inFeatures(); }

            @Override
            public int outFeatures() { return dense.outFeatures(); }

            @Override
            public void matmul(float[] x, int n, float[] out) {
                dense.matmul(x, n, out);
                if (recordsInput) {
                    inputs.computeIfAbsent(groupName, g -> new InputStats(tensor.cols(), sampleRows, groupSeed, secondMoments, compute)).add(x, n);
                }
                int c = outMax.length;
                for (int t = 0; t < n; t++) {
                    for (int i = 0; i < c; i++) outMax[i] = Math.max(outMax[i], Math.abs(out[t * c + i]));
                }
            }
        };
    }

    /** The input statistics of one group instance, handed over: the recorder forgets them. */
    InputStats take(LinearGroup group, int layer) {
        InputStats s = inputs.remove(group.canonicalName(layer));
        if (s == null) throw new IllegalStateException("no input of " + group.canonicalName(layer) + " was recorded");
        return s;
    }

    /** S_O of every linear layer, in load order. */
    Map<String, float[]> outputs() {
        return outputs;
    }

    static void checkFinite(String what, float[] values) {
        for (int i = 0; i < values.length; i++) {
            if (!Float.isFinite(values[i])) {
                throw new IllegalStateException(what + " channel " + i + " saw a non-finite activation (" + values[i]
                        + "): the model overflows on the calibration text");
            }
        }
    }
}
