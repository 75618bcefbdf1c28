package jquant.runtime;

import jquant.formats.weightlet.PackedTensor;
import jquant.formats.weightlet.VectorWeightletUnpacker;
import jquant.formats.weightlet.WeightletLayout;
import jquant.runtime.kernels.MatmulKernels;

/**
 * Weight-only quantization run from the packed bytes (EdgeFlow's weightlets, paper §4.2): the SIMD
 * unpacker sits on the matmul path. For each group of four output channels, each channel's codes are
 * unpacked at its own bit width into a small int8 buffer that stays in L1, and the int8 × float32
 * kernel multiplies them with the activations; the channel's scale is applied once to the sum:
 * {@code y_r = scale_r · Σ_k q_r[k] · x[k]}. Mixed widths stay mixed in memory; nothing is decoded
 * ahead of use.
 */
public sealed class WeightletWeights extends RowMajorWeights permits NpuInt8Weights {
    protected final PackedTensor packed;
    protected final float[] scales;

    public WeightletWeights(String name, PackedTensor packed, float[] scales, Compute compute) {
        super(name, packed.channels(), packed.length(), compute);
        KernelWarmup.startInt8Rows();
        if (scales.length != packed.channels()) {
            throw new IllegalArgumentException(name + ": " + packed.channels() + " channels but " + scales.length + " scales");
        }
        this.packed = packed;
        this.scales = scales;
    }

    @Override
    final void dotRows(MatmulKernels k, int r0, int r1, int r2, int r3, float[] x, int xOff, int k0, int k1, float[] acc, Scratch s) {
        int width = k1 - k0;
        byte[] codes = s.codes(4 * width);
        unpack(r0, k0, k1, codes, 0);
        unpack(r1, k0, k1, codes, width);
        unpack(r2, k0, k1, codes, 2 * width);
        unpack(r3, k0, k1, codes, 3 * width);
        k.rowsI8(codes, -k0, width - k0, 2 * width - k0, 3 * width - k0, x, xOff, k0, k1, acc);
    }

    /** Channel r's int8 codes for columns [k0, k1) (k0 on a group boundary) into dst[at..]. */
    private void unpack(int r, int k0, int k1, byte[] dst, int at) {
        int bits = packed.bits(r);
        long from = packed.channelOffset(r) + (long) (k0 / WeightletLayout.GROUP_WEIGHTS) * WeightletLayout.groupBytes(bits);
        VectorWeightletUnpacker.INSTANCE.unpackChannel(packed.data(), from, bits, k1 - k0, dst, at);
    }

    @Override
    final void decodeRows(int r0, int count, int k0, int k1, float[] dst, Scratch s) {
        for (int i = 0; i < count; i++) {
            int r = r0 + i, bits = packed.bits(r);
            long from = packed.channelOffset(r) + (long) (k0 / WeightletLayout.GROUP_WEIGHTS) * WeightletLayout.groupBytes(bits);
            VectorWeightletUnpacker.INSTANCE.unpackChannel(packed.data(), from, bits, k1 - k0, 1f, dst, i * (k1 - k0));
        }
    }

    @Override
    public long storedBytes() {
        return packed.byteSize() + 4L * scales.length;
    }

    @Override
    float output(int r, float dot) {
        return dot * scales[r];
    }

    /** Row-major {@code [channels][length]} floats {@code int8 · scale}: the dequantized matrix, for tests and embeddings. */
    static float[] dequantize(PackedTensor packed, float[] scales) {
        int len = packed.length();
        float[] w = new float[Math.multiplyExact(packed.channels(), len)];
        for (int c = 0; c < packed.channels(); c++) {
            VectorWeightletUnpacker.INSTANCE.unpackChannel(packed.data(), packed.channelOffset(c), packed.bits(c), len, scales[c], w, c * len);
        }
        return w;
    }
}
