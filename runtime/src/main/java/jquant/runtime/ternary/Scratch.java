package jquant.runtime.ternary;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Work arrays of one thread, kept across calls and grown when a larger matrix needs more, so that a
 * decode step (about 150 matrix-vector products per token) allocates nothing per call. One per
 * thread, never shared: the worker pool may run a job's chunks on any thread, including the caller.
 */
final class Scratch {

    private static final ThreadLocal<Scratch> MINE = ThreadLocal.withInitial(Scratch::new);

    int[] tree = new int[0], dots = new int[0];
    long[] headers = new long[0];
    short[] shorts = new short[0];
    float[] terms = new float[0], scales = new float[0];
    /** Off-heap, like a mapped file, so the kernels see one kind of segment. */
    MemorySegment padded = MemorySegment.NULL;

    static Scratch mine() { return MINE.get(); }

    int[] tree(int n) { return tree.length >= n ? tree : (tree = new int[n]); }

    int[] dots(int n) { return dots.length >= n ? dots : (dots = new int[n]); }

    long[] headers(int n) { return headers.length >= n ? headers : (headers = new long[n]); }

    short[] shorts(int n) { return shorts.length >= n ? shorts : (shorts = new short[n]); }

    float[] terms(int n) { return terms.length >= n ? terms : (terms = new float[n]); }

    float[] scales(int n) { return scales.length >= n ? scales : (scales = new float[n]); }

    MemorySegment padded(long bytes) { return padded.byteSize() >= bytes ? padded : (padded = Arena.ofAuto().allocate(bytes, 64)); }
}
