package jquant.bench;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * Drops one model's pages from the operating system's page cache, so that the next run reads it from
 * disk (a cold start) without dropping every other file's pages: {@code posix_fadvise(fd, 0, 0,
 * POSIX_FADV_DONTNEED)} on each file, called through {@code java.lang.foreign}. Linux only; pages
 * that another process has locked or dirtied may stay.
 */
public final class PageCache {
    private static final int O_RDONLY = 0;
    private static final int POSIX_FADV_DONTNEED = 4;

    private PageCache() {}

    /** Whether eviction works on this platform. */
    public static boolean supported() {
        return System.getProperty("os.name", "").toLowerCase().contains("linux");
    }

    /** Evicts {@code model} (a file, or every file of a folder) from the page cache. */
    public static void evict(Path model) throws IOException {
        if (!supported()) throw new IOException("dropping pages from the page cache needs Linux");
        List<Path> files;
        if (Files.isDirectory(model)) {
            try (Stream<Path> s = Files.list(model)) {
                files = s.filter(Files::isRegularFile).toList();
            }
        } else {
            files = List.of(model);
        }
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        MethodHandle open = linker.downcallHandle(libc.find("open").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        MethodHandle fadvise = linker.downcallHandle(libc.find("posix_fadvise").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
        MethodHandle close = linker.downcallHandle(libc.find("close").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        try (Arena arena = Arena.ofConfined()) {
            for (Path f : files) {
                int fd = (int) open.invokeExact(arena.allocateFrom(f.toAbsolutePath().toString()), O_RDONLY);
                if (fd < 0) throw new IOException(f + ": cannot open to drop its cached pages");
                int rc = (int) fadvise.invokeExact(fd, 0L, 0L, POSIX_FADV_DONTNEED);
                int closed = (int) close.invokeExact(fd);
                if (rc != 0 || closed != 0) throw new IOException(f + ": posix_fadvise failed (" + rc + ")");
            }
        } catch (IOException e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(model + ": cannot drop cached pages: " + t.getMessage(), t);
        }
    }
}
