package jquant.runtime.kernels;

import java.lang.foreign.MemorySegment;
import jquant.runtime.nativelib.KernelSource;
import jquant.runtime.nativelib.NativeKernels;

/**
 * {@link VectorKernels} with attention's {@link #scores} and {@link #weightedSums} in the C library
 * ({@code jq_attn_scores}, {@code jq_attn_sums}; AVX-512 and AVX2), which give the Java kernels' bits on the same lanes. In
 * Java a context shorter than the blocked kernels' threshold takes the per-row definitions, whose lane
 * sums and tails took 12 % of a one-thread T2P decode step at the positions llama-bench times, because the
 * blocked kernels cost compilation time in a run's first tokens (bench/RESULTS.md); the C kernels run
 * blocked at every length from the first token.
 */
public final class NativeAttentionKernels extends VectorKernels {
    private final NativeKernels lib;

    NativeAttentionKernels(NativeKernels lib) {
        this.lib = lib;
    }

    /**
     * The vector kernels, with attention on the C library's where the process uses native kernels
     * ({@link KernelSource}) on an instruction set with the vector kernels' lane count.
     */
    public static Kernels vector() {
        return KernelSource.kernelsWithFloatLanes(VectorWidth.FLOATS.length()).<Kernels>map(NativeAttentionKernels::new)
                .orElseGet(VectorKernels::new);
    }

    @Override
    public void scores(float[] q, int qOff, int qStride, int rows, int dims, float scale,
                       float[] k, int kOff, int kStride, int len, float[] s, int sOff, int sStride) {
        if (rows <= 0 || len <= 0) return;
        // The C kernel reads and writes where it is told: the bounds Java would check, checked first.
        checkStrided(q.length, qOff, rows, qStride, dims);
        checkStrided(k.length, kOff, dims, kStride, len);
        checkStrided(s.length, sOff, rows, sStride, len);
        lib.attentionScores(MemorySegment.ofArray(q), qOff, qStride, rows, dims, scale, MemorySegment.ofArray(k), kOff, kStride, len,
                MemorySegment.ofArray(s), sOff, sStride);
    }

    @Override
    public void weightedSums(float[] s, int sOff, int sStride, int rows, float[] v, int vOff, int vStride, int dims, int len,
                             float[] out, int outOff, int outStride) {
        if (rows <= 0 || dims <= 0) return;
        if (len < 0) throw new IllegalArgumentException("weighted sums over " + len + " positions");
        checkStrided(s.length, sOff, rows, sStride, len);
        checkStrided(v.length, vOff, dims, vStride, len);   // so each dimension's offset d · vStride, which the kernel gathers by, is an int
        checkStrided(out.length, outOff, rows, outStride, dims);
        lib.attentionSums(MemorySegment.ofArray(s), sOff, sStride, rows, MemorySegment.ofArray(v), vOff, vStride, dims, len,
                MemorySegment.ofArray(out), outOff, outStride);
    }

    /** That {@code count} runs of {@code width} floats, {@code stride} apart from {@code off}, lie in an array of {@code length}. */
    private static void checkStrided(int length, int off, int count, int stride, int width) {
        if (count <= 0 || width <= 0) return;
        long end = off + (long) (count - 1) * stride + width;
        if (off < 0 || stride < 0 || end > length) {
            throw new IndexOutOfBoundsException(count + " runs of " + width + " floats " + stride + " apart from " + off + " exceed an array of " + length);
        }
    }
}
