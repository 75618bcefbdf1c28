package jquant.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;

/**
 * Bytes this process has had read from storage ({@code read_bytes} of Linux's {@code /proc/self/io},
 * which counts the pages a mapped file's faults bring in): a benchmark that reads its weights from
 * disk while it is timed measures the disk, not memory. On a machine whose page cache is reclaimed
 * under a running model (memory pressure, or a proactive reclaimer such as DAMON's page-out, which
 * dropped model files mid-run on the machines of bench/RESULTS.md's ninth session) the timed steps
 * are then told apart.
 */
final class StorageReads {

    private static final Path IO = Path.of("/proc/self/io");
    /** Reads during timed work worth a note: above readahead's odd page, below a model's share of a step. */
    static final long NOTABLE_BYTES = 1L << 20;

    private StorageReads() {}

    /** Bytes read from storage so far; empty where the system does not say. */
    static OptionalLong bytes() {
        try {
            return parse(Files.readString(IO));
        } catch (IOException | SecurityException e) {
            return OptionalLong.empty();
        }
    }

    /** {@code read_bytes} of a {@code /proc/<pid>/io} text. */
    static OptionalLong parse(String io) {
        for (String line : io.split("\n")) {
            if (line.startsWith("read_bytes:")) {
                try {
                    return OptionalLong.of(Long.parseLong(line.substring("read_bytes:".length()).trim()));
                } catch (NumberFormatException e) {
                    return OptionalLong.empty();
                }
            }
        }
        return OptionalLong.empty();
    }

    /** Bytes read since {@code before} (an earlier {@link #bytes}), or 0 where either is unknown. */
    static long since(OptionalLong before) {
        OptionalLong now = bytes();
        return before.isPresent() && now.isPresent() ? Math.max(0, now.getAsLong() - before.getAsLong()) : 0;
    }

    /** A note under a result line when the timed work read {@code bytes} from storage. */
    static void note(PrintStream out, long bytes) {
        if (bytes < NOTABLE_BYTES) return;
        out.printf("         note: %,d MB read from storage while timed: the page cache lost part of the model (memory pressure,"
                + " or a page-out daemon), so this line measures the disk%n", bytes / 1_000_000);
    }
}
