package jquant.runtime;

import java.lang.foreign.MemorySegment;
import jquant.pack.PackedTensor;
import jquant.pack.WeightletLayout;
import jquant.runtime.nativelib.KernelSource;
import jquant.runtime.nativelib.NativeKernels;

/**
 * A weightlet layer ({@link WeightletWeights} weight-only, or {@link NpuInt8Weights}) whose decode
 * runs on the C library's kernels: each channel's groups unpacked at its own bit width into an L1
 * buffer, then weight-only by the runtime's one summation order (the float lanes' fused multiply-add
 * chains, so the instruction set must have the Java kernels' lane count), npu by an exact integer dot
 * product ({@code vpdpbusd}, {@code vpmaddubsw}, {@code sdot}). The outputs are the Java layer's bit for
 * bit; a batch of {@value RowMajorWeights#PREFILL_TOKENS} tokens or more (prefill) takes the Java layer.
 */
final class NativeWeightletWeights implements LinearWeights {

    private final WeightletWeights twin;
    private final NativeKernels kernels;
    private final MemorySegment data;
    private final long[] offsets;
    private final int[] bits;
    private final float[] scales;
    private final int out, in, padded;
    /** The npu layer's static activation scale, or NaN for weight-only. */
    private final float inputScale;

    NativeWeightletWeights(WeightletWeights twin, NativeKernels kernels) {
        PackedTensor p = twin.packed;
        this.twin = twin;
        this.kernels = kernels;
        this.data = p.data();
        this.offsets = p.channelOffsets();
        this.bits = p.bits();
        this.scales = twin.scales;
        this.out = twin.outFeatures();
        this.in = twin.inFeatures();
        this.padded = WeightletLayout.groups(in) * WeightletLayout.GROUP_WEIGHTS;
        this.inputScale = twin instanceof NpuInt8Weights npu ? npu.inputScale() : Float.NaN;
    }

    /**
     * {@code twin} on the native kernels chosen for this process ({@link KernelSource}) where they exist
     * for it — npu on any instruction set, weight-only on the one whose float lanes are the Java kernels'
     * ({@code lanes}) — else {@code twin} itself.
     */
    static LinearWeights of(WeightletWeights twin, int lanes) {
        boolean npu = twin instanceof NpuInt8Weights;
        return (npu ? KernelSource.kernels() : KernelSource.kernelsWithFloatLanes(lanes))
                .<LinearWeights>map(k -> new NativeWeightletWeights(twin, k)).orElse(twin);
    }

    @Override public int inFeatures() { return in; }
    @Override public int outFeatures() { return out; }
    @Override public long storedBytes() { return twin.storedBytes(); }

    @Override
    public void matmul(float[] x, int n, float[] y) {
        if (n >= RowMajorWeights.PREFILL_TOKENS) {
            twin.matmul(x, n, y);
            return;
        }
        boolean npu = !Float.isNaN(inputScale);
        for (int t = 0; t < n; t++) {
            MemorySegment act, outs = MemorySegment.ofArray(y).asSlice(4L * t * out);
            if (npu) {
                byte[] q = new byte[padded];
                for (int k = 0; k < in; k++) q[k] = ((NpuInt8Weights) twin).quantizeInput(x[t * in + k]);
                act = MemorySegment.ofArray(q);
            } else {
                float[] xs = new float[padded];
                System.arraycopy(x, t * in, xs, 0, in);
                act = MemorySegment.ofArray(xs);
            }
            MemorySegment offs = MemorySegment.ofArray(offsets), widths = MemorySegment.ofArray(bits), s = MemorySegment.ofArray(scales);
            twin.compute.pool().forRange((out + 3) / 4, 4L * in, (worker, start, end) -> {
                int r0 = 4 * start, r1 = Math.min(out, 4 * end);
                MemorySegment o = offs.asSlice(8L * r0), b = widths.asSlice(4L * r0), sc = s.asSlice(4L * r0), yy = outs.asSlice(4L * r0);
                if (npu) kernels.weightletNpu(data, o, b, r1 - r0, in, act, inputScale, sc, yy);
                else kernels.weightletWeightOnly(data, o, b, r1 - r0, in, act, sc, yy);
            });
        }
    }
}
