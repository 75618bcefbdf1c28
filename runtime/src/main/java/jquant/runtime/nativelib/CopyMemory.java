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
import java.lang.ref.Reference;
import java.lang.ref.WeakReference;
import java.util.Locale;

/**
 * Memory for a large copy that its maker writes in full, not zeroed by Java first ({@code Arena.allocate}
 * zeroes every byte, a pass over memory as long as the copy's own). On Linux, 2 MiB pages: anonymous
 * mappings aligned to 2 MiB and advised onto them ({@code madvise(MADV_HUGEPAGE)}, where transparent
 * huge pages are on or "madvise"). A copy of a few megabytes on a mapping of its own would get them
 * only for the 2 MiB-aligned stretch inside it, so smaller copies are cut one after another from
 * shared {@value #SLAB_MIB} MiB slabs, and a copy of a model's tensors lies on huge pages nearly whole (the
 * kernels read a copy from memory faster on them: bench/RESULTS.md). No more is resident than is written, but for
 * the huge page at a slab's end. Elsewhere the C library's {@code aligned_alloc}. Freed when the segment (and, for a
 * slab, every copy cut from it) is unreachable.
 */
public final class CopyMemory {

    /** A transparent huge page on x86-64 and arm64 Linux. */
    private static final long HUGE_PAGE = 2L << 20;
    private static final long PAGE = 4096;
    private static final int SLAB_MIB = 64;
    private static final long SLAB = (long) SLAB_MIB << 20;
    /** The slab copies are cut from, held weakly (its copies hold it) so that it is freed with its last copy; and its first unused byte. */
    private static WeakReference<MemorySegment> slab = new WeakReference<>(null);
    private static long slabUsed;
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
        if (alignment > PAGE || Long.bitCount(alignment) != 1) throw new IllegalArgumentException("alignment " + alignment + " is not a power of two up to " + PAGE);
        try {
            if (LINUX) return bytes >= SLAB / 4 ? hugeMapping(bytes) : fromSlab(bytes, alignment);
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

    /** The next {@code bytes} of the current slab, or of a new one where they do not fit. */
    private static synchronized MemorySegment fromSlab(long bytes, long alignment) throws Throwable {
        MemorySegment current = slab.get();
        long at = (slabUsed + alignment - 1) & -alignment;
        if (current == null || at + bytes > SLAB) {
            current = hugeMapping(SLAB);
            slab = new WeakReference<>(current);
            at = 0;
        }
        slabUsed = at + bytes;
        // The copy's own scope holds the slab (its cleanup refers to it), so the slab lives while any of its copies does.
        MemorySegment holder = current;
        return current.asSlice(at, bytes).reinterpret(bytes, Arena.ofAuto(), copy -> Reference.reachabilityFence(holder));
    }

    /**
     * A mapping of {@code bytes} (rounded up to 4 KiB) starting on a 2 MiB boundary: mapped 2 MiB longer, the
     * ends cut off. Its last part short of a whole huge page stays on 4 KiB pages.
     */
    private static MemorySegment hugeMapping(long bytes) throws Throwable {
        long size = Math.max(PAGE, (bytes + PAGE - 1) / PAGE * PAGE), mapped = size + HUGE_PAGE;
        MemorySegment raw = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, mapped, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0L);
        if (raw.address() == -1L) throw new OutOfMemoryError("mmap of " + mapped + " bytes failed");
        raw = raw.reinterpret(mapped);
        long head = -raw.address() & (HUGE_PAGE - 1);
        if (head > 0) unmap(raw, head);
        if (mapped - head - size > 0) unmap(raw.asSlice(head + size), mapped - head - size);
        MemorySegment block = raw.asSlice(head, size).reinterpret(size, Arena.ofAuto(), b -> unmap(b, size));
        // Advice only: without transparent huge pages the kernel refuses it and 4 KiB pages serve.
        if (size >= HUGE_PAGE) {
            int ignored = (int) MADVISE.invokeExact(block, size, MADV_HUGEPAGE);
        }
        return block.asSlice(0, bytes);
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
