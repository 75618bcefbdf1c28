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
 * <p>Σx·xᵀ is summed in float32, as GPTQ sums its Hessian, into its upper triangle only (row i:
 * columns i … D−1, {@link SecondMoment}): one row i at a time, each entry over the tokens in order
 * ({@link FusedAxpy}), so the sums do not depend on how the rows are dealt out over threads.
 */
final class ActivationRecorder implements LinearWeightsFactory {

    /** Running statistics of one group's input. */
    static final class InputStats {
        final int channels;
        final float[] max;
        final double[] sumSquares;
        long rows;
        final float[] sample;
        final int sampleCapacity;
        /** Σ x·xᵀ, its upper triangle row by row; null unless second moments are recorded. */
        private final float[] sumOuter;
        private final Compute compute;
        private final SplittableRandom random;

        InputStats(int channels, int sampleCapacity, long seed, boolean secondMoments, Compute compute) {
            this.channels = channels;
            this.max = new float[channels];
            this.sumSquares = new double[channels];
            this.sampleCapacity = sampleCapacity;
            this.sample = new float[sampleCapacity * channels];
            this.sumOuter = secondMoments ? new float[Math.toIntExact(SecondMoment.triangleSize(channels))] : null;
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

        private void addOuter(float[] x, int n) {
            int d = channels;
            compute.pool().forRange(d, (long) n * d / 2, (worker, start, end) -> {
                for (int i = start; i < end; i++) {
                    int row = (int) SecondMoment.rowStart(d, i);
                    for (int t = 0; t < n; t++) FusedAxpy.VECTOR.floats(x[t * d + i], x, t * d + i, sumOuter, row, d - i);
                }
            });
        }

        /** E[x·xᵀ], divided in place of the sums (these stats take no more rows after), or null if it was not recorded. */
        SecondMoment meanSecondMoment() {
            if (sumOuter == null) return null;
            for (int i = 0; i < sumOuter.length; i++) sumOuter[i] = (float) (sumOuter[i] / (double) rows);
            return new SecondMoment.Held(channels, sumOuter);
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
