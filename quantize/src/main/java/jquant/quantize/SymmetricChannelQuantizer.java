package jquant.quantize;

import jquant.core.WorkerPool;
import jquant.formats.weightlet.WeightletLayout;

/**
 * Per-output-channel symmetric quantization of one row of a weight matrix to B ∈ 1..8 bits, as
 * the NPU needs it: every weight becomes an int8 value {@code v}, the channel gets one float
 * {@code scale}, and {@code w ≈ scale · v}.
 *
 * <h2>The grid</h2>
 * <pre>
 *  B = 1..7  mid-rise, all 2^B codes used, no zero level
 *            field f ∈ [0, 2^B − 1]      int8 v = 2f − (2^B − 1)        (odd, |v| ≤ 2^B − 1 ≤ 127)
 *            B=1: v ∈ {−1, +1}   B=2: {−3, −1, 1, 3}   …   B=7: {−127, −125, …, 125, 127}
 *  B = 8     mid-tread, the int8 symmetric grid
 *            field f ∈ [0, 254]          int8 v = f − 127               (field 255 is invalid)
 * </pre>
 * The field is the unsigned B-bit number a packed file stores; field 0 is always the most negative
 * level and fields increase with the value. The weightlet format defines the mapping the packer and
 * unpacker use ({@link WeightletLayout#toInt8}, {@link WeightletLayout#toField}).
 *
 * <p>Why mid-rise below 8 bits: a symmetric grid with a zero level can use only 2^B − 1 of the
 * 2^B codes (at 2 bits it is ternary, a quarter of the code space unused); the mid-rise grid uses
 * all of them, and B = 1 becomes plain sign quantization; at 2 bits its 4 odd levels come much closer
 * to a Gaussian row than the best ternary grid (bench/RESULTS.md). The price is that 0 is not a level (a zero weight becomes ±spacing/2), which the exact metric sees.
 * B = 8 cannot be mid-rise: its odd levels would reach ±255, which is not an int8, so 8 bits use
 * the int8 symmetric grid ±127.
 *
 * <h2>Codes and scale</h2>
 * The grid's top level is a clip value {@code L = r · max|w|}; its level spacing is
 * {@code 2L/(2^B − 1)} for B ≤ 7 (odd levels) and {@code L/127} for B = 8. Codes are nearest-level
 * rounding (ties towards +∞, in float arithmetic: {@link GridKernel#code}), weights beyond ±L take
 * the extreme code. The clip ratio r is chosen
 * per channel and bit width from {@link #CLIP_RATIOS} (1 down to ≈0.22) to maximise
 * {@code cos(w, v)}; r = 1 (the plain max-abs grid) is a candidate, so the search never does worse.
 * Why search: with r = 1 the few largest weights of a long channel stretch the grid and the rest
 * crowd into the central levels; the best clip cuts the cosine distance severalfold at 2 to 4 bits,
 * and it keeps each channel's error curve convex in B, which greedy allocation needs to be optimal. B = 1 has nothing to
 * search (sign quantization).
 *
 * <p>The stored scale is then refit by least squares, {@code scale = ⟨w, v⟩ / ⟨v, v⟩}: it
 * minimises {@code ‖w − scale·v‖²} for these codes (for B = 1 it is mean|w|, the classic
 * binary-weight scale) and makes the squared error exactly {@code ‖w‖²·(1 − cos²(w, v))}, so the
 * exact {@link RelativeError} metric measures the error this quantizer really makes.
 *
 * <p>A channel that is all zeros (or whose max|w| is below 2^−100, see {@link #NEGLIGIBLE}) gets
 * scale 0 and the code of 0.0 on a unit grid (v = +1 for B ≤ 7, v = 0 for B = 8); it dequantizes
 * to zeros. NaN or ±Inf weights are rejected with an
 * exception naming row and column.
 */
public final class SymmetricChannelQuantizer {

    private SymmetricChannelQuantizer() {}

    /** One quantized channel: int8 values on the B-bit grid and the dequantization scale. */
    public record QuantizedRow(int bits, byte[] values, float scale) {
        public QuantizedRow {
            checkBits(bits);
            values = values.clone();
            if (!Float.isFinite(scale) || scale < 0) throw new IllegalArgumentException("scale must be finite and ≥ 0, got " + scale);
        }

        @Override
        public byte[] values() { return values.clone(); }

        public int length() { return values.length; }

        public byte value(int column) { return values[column]; }

        /** The unsigned B-bit field of one column, as a packed file stores it. */
        public int field(int column) { return WeightletLayout.toField(values[column], bits); }

        /** {@code scale · v} for every column. */
        public float[] dequantize() {
            float[] out = new float[values.length];
            for (int j = 0; j < out.length; j++) out[j] = scale * values[j];
            return out;
        }
    }

    /** A whole matrix quantized row by row with per-row bit widths. */
    public record QuantizedMatrix(int rows, int cols, byte[] bits, byte[] values, float[] scales) {
        public QuantizedMatrix {
            bits = bits.clone();
            values = values.clone();
            scales = scales.clone();
            if (bits.length != rows || scales.length != rows || values.length != (long) rows * cols) {
                throw new IllegalArgumentException("inconsistent quantized matrix " + rows + "×" + cols);
            }
        }

        @Override
        public byte[] bits() { return bits.clone(); }

        @Override
        public byte[] values() { return values.clone(); }

        @Override
        public float[] scales() { return scales.clone(); }

        public float[] dequantize() {
            float[] out = new float[values.length];
            for (int r = 0; r < rows; r++) {
                for (int j = 0; j < cols; j++) out[r * cols + j] = scales[r] * values[r * cols + j];
            }
            return out;
        }
    }

    /** Quantizes {@code length} weights of {@code data} starting at {@code offset}; {@code row} is only for error messages. */
    public static QuantizedRow quantizeRow(float[] data, int offset, int length, int bits, int row) {
        checkBits(bits);
        float maxAbs = maxAbs(data, offset, length, row);
        byte[] values = new byte[length];
        if (maxAbs < NEGLIGIBLE) {
            java.util.Arrays.fill(values, (byte) zeroCode(bits));
            return new QuantizedRow(bits, values, 0f);
        }
        Grid grid = chooseGrid(data, offset, length, bits, maxAbs, energy(data, offset, length));
        GridKernel.Shape shape = GridKernel.Shape.of(bits);
        double dotWV = 0, dotVV = 0;
        for (int j = 0; j < length; j++) {
            float w = data[offset + j];
            int v = GridKernel.code(shape, w, grid.inverseSpacing());
            values[j] = (byte) v;
            dotWV += (double) w * v;
            dotVV += (double) v * v;
        }
        // dotVV > 0: B ≤ 7 has no zero level, and the largest |w| never rounds to 0 (clip ≤ max|w|).
        return new QuantizedRow(bits, values, (float) (dotWV / dotVV));
    }

    public static QuantizedRow quantizeRow(float[] row, int bits) {
        return quantizeRow(row, 0, row.length, bits, 0);
    }

    /** Quantizes every row {@code r} of a row-major {@code rows × cols} matrix to {@code bits[r]} bits. */
    public static QuantizedMatrix quantize(float[] matrix, int rows, int cols, byte[] bits) {
        if ((long) rows * cols != matrix.length) {
            throw new IllegalArgumentException("matrix has " + matrix.length + " floats, not " + rows + "×" + cols);
        }
        if (bits.length != rows) throw new IllegalArgumentException(bits.length + " bit widths for " + rows + " rows");
        byte[] values = new byte[matrix.length];
        float[] scales = new float[rows];
        WorkerPool.current().forRange(rows, 16L * cols, (worker, start, end) -> {
            for (int r = start; r < end; r++) {
                QuantizedRow q = quantizeRow(matrix, r * cols, cols, bits[r], r);
                System.arraycopy(q.values, 0, values, r * cols, cols);
                scales[r] = q.scale();
            }
        });
        return new QuantizedMatrix(rows, cols, bits, values, scales);
    }

    /** Largest |int8 value| of the B-bit grid: 2^B − 1 for B ≤ 7, 127 for B = 8. */
    public static int maxLevel(int bits) {
        checkBits(bits);
        return bits == QuantLimits.MAX_BITS ? QuantLimits.INT8_MAX : (1 << bits) - 1;
    }

    /**
     * Distance between adjacent grid levels in weight units when the top level is {@code clip}:
     * {@code 2·clip/(2^B − 1)} for B ≤ 7 (odd levels), {@code clip/127} for B = 8.
     */
    public static double levelSpacing(int bits, double clip) {
        checkBits(bits);
        return bits == QuantLimits.MAX_BITS ? clip / QuantLimits.INT8_MAX : 2.0 * clip / ((1 << bits) - 1);
    }

    /** Candidate clip ratios r (top level = r·max|w|): 2^(−k/5) for k = 0..11, so 1 down to ≈0.22 in steps of ≈13%. */
    static final double[] CLIP_RATIOS = java.util.stream.IntStream.range(0, 12).mapToDouble(k -> Math.pow(2, -k / 5.0)).toArray();

    /**
     * Channels whose largest |w| is below 2^−100 are quantized as all zero: their grid would need a
     * 1/spacing beyond float range, and every weight of them is within 2^−100 of zero anyway.
     */
    static final float NEGLIGIBLE = 0x1p-100f;

    /**
     * The grid chosen for one channel at one width: its top level, the float 1/spacing the rounding
     * uses, and {@code 1 − cos²(w, v)} of its codes.
     */
    record Grid(double clip, float inverseSpacing, double sineSquared) {
        /** {@code 1 − cos(w, v) = (1 − cos²) / (1 + cos)}. */
        double cosineDistance() {
            return sineSquared / (1 + Math.sqrt(1 - sineSquared));
        }
    }

    /**
     * The clip ratio of {@link #CLIP_RATIOS} whose codes have the largest cosine with the channel
     * (the earliest, i.e. widest, on ties). {@code maxAbs} must be at least {@link #NEGLIGIBLE};
     * {@code energy} is Σw² of the channel.
     */
    static Grid chooseGrid(float[] data, int offset, int length, int bits, float maxAbs, double energy) {
        if (bits == QuantLimits.MIN_BITS) {
            // Sign codes: ⟨w, v⟩ = Σ|w| and ⟨v, v⟩ = n exactly, no search and no rounding to measure.
            double sumAbs = 0;
            for (int j = 0; j < length; j++) sumAbs += Math.abs(data[offset + j]);
            double cosSquared = sumAbs * sumAbs / (length * energy);
            return new Grid(maxAbs, (float) (1 / levelSpacing(bits, maxAbs)), Math.clamp(1 - cosSquared, 0.0, 1.0));
        }
        GridKernel.Shape shape = GridKernel.Shape.of(bits);
        double[] stats = new double[3];
        Grid best = null;
        for (int k = 0; k < CLIP_RATIOS.length; k++) {
            double clip = CLIP_RATIOS[k] * maxAbs;
            double spacing = levelSpacing(bits, clip);
            float inverseSpacing = (float) (1 / spacing);
            GridKernel.stats(data, offset, length, shape, inverseSpacing, (float) (spacing * shape.unitPerSpacing()), stats);
            double sineSquared = Math.clamp((stats[0] - stats[1] * stats[1] / stats[2]) / energy, 0.0, 1.0);
            if (best == null || sineSquared < best.sineSquared) best = new Grid(clip, inverseSpacing, sineSquared);
        }
        return best;
    }

    static double energy(float[] data, int offset, int length) {
        double sum = 0;
        for (int j = 0; j < length; j++) sum += (double) data[offset + j] * data[offset + j];
        return sum;
    }

    /** The code an all-zero channel gets: the level of 0.0 (v = +1 below 8 bits, 0 at 8 bits). */
    static int zeroCode(int bits) {
        return bits == QuantLimits.MAX_BITS ? 0 : 1;
    }

    /** max|w| over the slice, rejecting NaN and infinities with their row and column. */
    static float maxAbs(float[] data, int offset, int length, int row) {
        float max = 0f;
        for (int j = 0; j < length; j++) {
            float w = data[offset + j];
            if (!Float.isFinite(w)) throw nonFinite(w, row, j);
            max = Math.max(max, Math.abs(w));
        }
        return max;
    }

    static IllegalArgumentException nonFinite(float w, int row, int column) {
        return new IllegalArgumentException("weight at row " + row + ", column " + column + " is " + w + " (not finite)");
    }

    static void checkBits(int bits) {
        if (!QuantLimits.isBitWidth(bits)) throw new IllegalArgumentException("bit width " + bits + " outside " + QuantLimits.BIT_RANGE);
    }
}
