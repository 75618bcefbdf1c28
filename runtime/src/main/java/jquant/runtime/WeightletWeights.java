package jquant.runtime;

import jquant.pack.PackedTensor;
import jquant.pack.VectorWeightletUnpacker;

/**
 * Weight-only quantization: a weightlet-packed matrix, unpacked once at load to its int8 codes and
 * multiplied as {@code int8 · scale_channel} in float32 ({@link DenseF32Weights}'s kernels). The
 * product is exactly that of a float model holding the dequantized weights.
 *
 * <p>The weights are dequantized to float32 at load rather than per panel during the matmul: the
 * tested float kernels run on their own repacked panels, so a fused unpack-in-the-matmul kernel would
 * be a second matmul implementation; the price is float32 memory at run time (the file stays small).
 */
public final class WeightletWeights implements LinearWeights {
    private final DenseF32Weights dense;

    public WeightletWeights(PackedTensor packed, float[] scales, Compute compute) {
        this.dense = new DenseF32Weights(dequantize(packed, scales), packed.channels(), packed.length(), compute);
    }

    /** Row-major {@code [channels][length]} floats {@code int8 · scale}. */
    static float[] dequantize(PackedTensor packed, float[] scales) {
        if (scales.length != packed.channels()) {
            throw new IllegalArgumentException(packed.channels() + " channels but " + scales.length + " scales");
        }
        int len = packed.length();
        float[] w = new float[Math.multiplyExact(packed.channels(), len)];
        for (int c = 0; c < packed.channels(); c++) {
            VectorWeightletUnpacker.INSTANCE.unpackChannel(packed.data(), packed.channelOffset(c), packed.bits(c), len, scales[c], w, c * len);
        }
        return w;
    }

    @Override
    public int inFeatures() {
        return dense.inFeatures();
    }

    @Override
    public int outFeatures() {
        return dense.outFeatures();
    }

    @Override
    public void matmul(float[] x, int n, float[] y) {
        dense.matmul(x, n, y);
    }
}
