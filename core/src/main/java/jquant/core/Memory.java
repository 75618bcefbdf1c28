package jquant.core;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Memory as a setting: how much heap a stage may use, and the words for it. Every offline stage
 * predicts what it needs from the model's shape before it starts and refuses a run that cannot fit,
 * naming the figure and how to give the JVM more, rather than failing with an OutOfMemoryError hours in.
 */
public final class Memory {
    /** The environment variable the launcher passes to the JVM, where -Xmx goes. */
    public static final String JAVA_OPTS = "JQUANT_JAVA_OPTS";

    private Memory() {}

    /** Layers whose float32 weights are smaller than this leave too little garbage to be worth a collection. */
    private static final long COLLECTED_FROM_BYTES = 64L << 20;

    /**
     * An offline stage has finished a layer whose weights take {@code layerFloatBytes} in float32: collects
     * what the layer left. Its float32 copies (weights, W', GPTQ's E[x·xᵀ] and factor) are large arrays that
     * die with it, and G1 collects them only when its young generation fills or the old one passes a share of
     * the heap, so the resident set would follow the heap's bound, and differ from run to run, rather than
     * the one layer a stage holds (bench/RESULTS.md, issue 25). A full collection costs a fraction of a
     * second against the seconds to minutes such a layer takes.
     */
    public static void layerDone(long layerFloatBytes) {
        if (layerFloatBytes >= COLLECTED_FROM_BYTES) System.gc();
    }

    /** The heap this JVM may grow to. */
    public static long heap() {
        return Runtime.getRuntime().maxMemory();
    }

    /**
     * The memory the system can give a process without swapping: Linux's {@code MemAvailable} (free memory and
     * the page cache it can drop), elsewhere the free physical memory.
     */
    public static long systemAvailable() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("MemAvailable:")) return 1024 * Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        } catch (IOException | NumberFormatException e) {
            // not Linux, or a kernel without the figure: the JVM's own
        }
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getFreeMemorySize();
    }

    /** {@code 3.4 GB}, {@code 512 MB}: decimal units, as people read sizes. */
    public static String format(long bytes) {
        if (bytes >= 1_000_000_000L) return String.format(Locale.ROOT, "%.1f GB", bytes / 1e9);
        if (bytes >= 1_000_000L) return String.format(Locale.ROOT, "%.0f MB", bytes / 1e6);
        return String.format(Locale.ROOT, "%.0f kB", bytes / 1e3);
    }

    /** The whole gibibytes of a heap that holds {@code bytes} with room for the collector (a quarter more). */
    public static long gibibytesFor(long bytes) {
        return (bytes + bytes / 4 + (1L << 30) - 1) >> 30;
    }

    /**
     * Parses a size as users write it: {@code 12G}, {@code 512M}, {@code 800k} or bytes (binary units,
     * as -Xmx reads them).
     */
    public static long parse(String size) {
        String s = size.strip();
        if (s.isEmpty()) throw new IllegalArgumentException("an empty size");
        long unit = switch (Character.toUpperCase(s.charAt(s.length() - 1))) {
            case 'K' -> 1L << 10;
            case 'M' -> 1L << 20;
            case 'G' -> 1L << 30;
            case 'T' -> 1L << 40;
            default -> 1;
        };
        String digits = unit == 1 ? s : s.substring(0, s.length() - 1);
        try {
            double value = Double.parseDouble(digits);
            if (!(value > 0) || value * unit > Long.MAX_VALUE) throw new NumberFormatException();
            return (long) (value * unit);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + size + "' is not a size (such as 12G, 512M or a number of bytes)");
        }
    }
}
