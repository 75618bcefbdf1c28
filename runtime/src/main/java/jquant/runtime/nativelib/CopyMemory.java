package jquant.runtime.nativelib;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Locale;

/**
 * Memory for a large copy that its maker writes in full, not zeroed by Java first ({@code Arena.allocate}
 * zeroes every byte, a pass over memory as long as the copy's own). On Linux an anonymous mapping
 * advised onto 2 MiB pages ({@code madvise(MADV_HUGEPAGE)}, where transparent huge pages are on or
 * "madvise": a page fault per 2 MiB rather than per 4 KiB; the mapping's ends stay on 4 KiB pages, so
 * no more is resident than is written); elsewhere the C library's {@code aligned_alloc}. Freed when the
 * segment is unreachable.
 */
public final class CopyMemory {

    /** A transparent huge page on x86-64 and arm64 Linux. */
    private static final long HUGE_PAGE = 2L << 20;
    private static final long PAGE = 4096;
    /** Linux's mman.h: PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, MADV_HUGEPAGE. */
    private static final int PROT_READ_WRITE = 3, MAP_PRIVATE_ANONYMOUS = 0x22, MADV_HUGEPAGE = 14;
    private static final boolean LINUX = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux");

    private static final MethodHandle MMAP, MUNMAP, MADVISE, ALIGNED_ALLOC, FREE;

    static {
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        MMAP = LINUX ? linker.downcallHandle(libc.find("mmap").orElseThrow(),
                FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG)) : null;
        MUNMAP = LINUX ? linker.downcallHandle(libc.find("munmap").orElseThrow(), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG)) : null;
        MADVISE = LINUX ? linker.downcallHandle(libc.find("madvise").orElseThrow(), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT)) : null;
        ALIGNED_ALLOC = linker.downcallHandle(libc.find("aligned_alloc").orElseThrow(), FunctionDescriptor.of(ADDRESS, JAVA_LONG, JAVA_LONG));
        FREE = linker.downcallHandle(libc.find("free").orElseThrow(), FunctionDescriptor.ofVoid(ADDRESS));
    }

    private CopyMemory() {}

    /** {@code bytes} of memory aligned to {@code alignment} (a power of two up to 4 KiB), its contents undefined. */
    public static MemorySegment allocate(long bytes, long alignment) {
        try {
            if (LINUX) {
                long size = Math.max(PAGE, (bytes + PAGE - 1) / PAGE * PAGE);
                MemorySegment raw = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, size, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0L);
                if (raw.address() == -1L) throw new OutOfMemoryError("mmap of " + size + " bytes failed");
                MemorySegment block = raw.reinterpret(size, Arena.ofAuto(), b -> unmap(b, size));
                // Advice only: without transparent huge pages the kernel refuses it and 4 KiB pages serve.
                if (size >= HUGE_PAGE) {
                    int ignored = (int) MADVISE.invokeExact(block, size, MADV_HUGEPAGE);
                }
                return block.asSlice(0, bytes);
            }
            long size = Math.max(alignment, (bytes + alignment - 1) / alignment * alignment);
            MemorySegment raw = (MemorySegment) ALIGNED_ALLOC.invokeExact(alignment, size);
            if (raw.equals(MemorySegment.NULL)) throw new OutOfMemoryError("aligned_alloc of " + size + " bytes failed");
            return raw.reinterpret(size, Arena.ofAuto(), CopyMemory::free).asSlice(0, bytes);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static void unmap(MemorySegment block, long size) {
        try {
            int ignored = (int) MUNMAP.invokeExact(block, size);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static void free(MemorySegment block) {
        try {
            FREE.invokeExact(block);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
