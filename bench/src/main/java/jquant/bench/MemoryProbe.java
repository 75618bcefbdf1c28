package jquant.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import jquant.core.WorkerPool;

/**
 * The machine's memory read bandwidth, measured in the same run as the figures it is the denominator
 * of: a pre-touched 1 GiB off-heap buffer summed as 64-bit lanes, four streams per chunk, chunks dealt
 * out by the worker pool under test; the best of several passes, in GB/s. First writes to fresh memory
 * are very slow on these machines, so the buffer is touched once before any timing.
 */
public final class MemoryProbe implements AutoCloseable {
    private static final VectorSpecies<Long> L = LongVector.SPECIES_PREFERRED;
    private static final long BYTES = 1L << 30;
    private static final int CHUNK = 4 << 20;

    private final Arena arena = Arena.ofShared();
    private final MemorySegment buffer = arena.allocate(BYTES, 64);

    public MemoryProbe() {
        buffer.fill((byte) 1);
    }

    /** Best read rate over {@code passes} passes over the buffer, on {@code pool}. */
    public double bandwidth(WorkerPool pool, int passes) {
        int chunks = (int) (BYTES / CHUNK);
        long[] sums = new long[chunks];
        double best = 0;
        for (int pass = 0; pass < passes; pass++) {
            long t0 = System.nanoTime();
            pool.forRange(chunks, CHUNK, (worker, start, end) -> {
                for (int c = start; c < end; c++) sums[c] = sum(buffer, (long) c * CHUNK);
            });
            best = Math.max(best, BYTES / ((System.nanoTime() - t0) / 1e9) / 1e9);
        }
        long total = 0;
        for (long s : sums) total += s;
        if (total != BYTES / 8 * 0x0101010101010101L) throw new IllegalStateException("memory probe summed the wrong total " + total);
        return best;
    }

    private static long sum(MemorySegment s, long from) {
        long quarter = CHUNK / 4, step = L.vectorByteSize();
        LongVector a = LongVector.zero(L), b = a, c = a, d = a;
        for (long at = from; at < from + quarter; at += step) {
            a = a.add(LongVector.fromMemorySegment(L, s, at, ByteOrder.nativeOrder()));
            b = b.add(LongVector.fromMemorySegment(L, s, at + quarter, ByteOrder.nativeOrder()));
            c = c.add(LongVector.fromMemorySegment(L, s, at + 2 * quarter, ByteOrder.nativeOrder()));
            d = d.add(LongVector.fromMemorySegment(L, s, at + 3 * quarter, ByteOrder.nativeOrder()));
        }
        return a.add(b).add(c).add(d).reduceLanes(VectorOperators.ADD);
    }

    @Override
    public void close() {
        arena.close();
    }
}
