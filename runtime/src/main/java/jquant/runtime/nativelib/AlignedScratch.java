package jquant.runtime.nativelib;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A thread's scratch buffer for the native kernels' operands, off the heap and aligned to a cache
 * line, the longest that thread has asked for. A Java array's elements start 16 bytes into the object,
 * so a 64-byte load from one crosses a cache line every time: the T2P kernel read its arranged
 * activations that way at 0.75–0.81 of its speed from aligned ones (bench/RESULTS.md). The buffer is
 * freed by the garbage collector once the thread is gone or a longer one replaced it; any thread may
 * read it (a call's columns are read by every worker of the pool).
 */
public final class AlignedScratch {

    /** A cache line, and a 512-bit register. */
    private static final long ALIGNMENT = 64;

    private final ThreadLocal<MemorySegment> buffer = ThreadLocal.withInitial(() -> MemorySegment.NULL);

    /** This thread's buffer, at least {@code bytes} long (its contents are whatever the last use left). */
    public MemorySegment get(long bytes) {
        MemorySegment s = buffer.get();
        if (s.byteSize() < bytes) buffer.set(s = Arena.ofAuto().allocate(bytes, ALIGNMENT));
        return s.asSlice(0, bytes);
    }
}
