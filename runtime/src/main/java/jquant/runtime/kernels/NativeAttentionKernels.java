package jquant.runtime.kernels;

import java.lang.foreign.MemorySegment;
import jquant.runtime.nativelib.KernelSource;
import jquant.runtime.nativelib.NativeKernels;

/**
 * {@link VectorKernels} with attention's {@link #scores} and {@link #weightedSums} in the C library
 * ({@code jq_attn_scores}, {@code jq_attn_sums}; AVX-512, AVX2 and NEON), and on AVX-512 its {@link #softmaxRows}
 * ({@code jq_softmax_rows}), which give the Java kernels' bits on the same lanes. In
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

    /**
     * The C library's softmax where it has one (AVX-512), 32 rows a call; a row it leaves as it was (a NaN, an infinite
     * maximum) takes the Java softmax, a row it leaves with lanes for {@code Math.exp} (they hold {@code x − max}, the
     * only negative values among positive exponentials) gets them here, then its sum and scaling.
     */
    @Override
    public void softmaxRows(float[] x, int off, int stride, int rows, int len) {
        if (!lib.hasSoftmaxRows()) {
            super.softmaxRows(x, off, stride, rows, len);
            return;
        }
        if (rows <= 0 || len <= 0) return;
        checkStrided(x.length, off, rows, stride, len);
        for (int r0 = 0; r0 < rows; r0 += 32) {
            int base = off + r0 * stride;
            long left = lib.softmaxRows(MemorySegment.ofArray(x), base, stride, Math.min(32, rows - r0), len);
            for (long untouched = left & 0xFFFF_FFFFL; untouched != 0; untouched &= untouched - 1) {
                softmax(x, base + Long.numberOfTrailingZeros(untouched) * stride, len);
            }
            for (long unfinished = left >>> 32; unfinished != 0; unfinished &= unfinished - 1) {
                int at = base + Long.numberOfTrailingZeros(unfinished) * stride;
                for (int k = at; k < at + len; k++) if (x[k] < 0f) x[k] = (float) Math.exp(x[k]);
                normalize(x, at, len);
            }
        }
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
