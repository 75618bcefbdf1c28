package jquant.formats;

import java.lang.foreign.MemorySegment;
import java.util.zip.CRC32C;

/**
 * What a versioned jquant file is, and the checks of it in one place (Lucene's {@code CodecUtil}:
 * writeHeader, checkHeader, checksum): the identifier a file of the format declares — a binary magic
 * ({@code .jqw}), a {@code "format"} field (a bit plan), a GGUF {@code general.architecture} (a
 * calibration stats file) — the version written, the oldest still read, and CRC-32C checksums. A
 * reader passes the values it found, however its container stores them, so every versioned file
 * fails with the same one-line reasons: not a <i>name</i> (…), <i>name</i> version N is not supported,
 * checksum mismatch in <i>part</i>. What each version holds stays with the file's own reader.
 *
 * <p>The checks throw {@link IllegalArgumentException} without a path: readers that parse bytes have
 * none, and each reader's entry point names the file ({@link CheckpointException}).
 *
 * @param name       what a file of the format is, as messages say it ("jquant packed file")
 * @param identifier what a file declares itself to be ("JQUANTPK", "jquant-bitplan", "jquant-calibration")
 * @param oldest     the oldest version still read
 * @param current    the version written
 */
public record FileFormat(String name, String identifier, int oldest, int current) {

    /** CRC-32C is fed in chunks so that segments larger than a ByteBuffer's 2 GB work. */
    private static final long CRC_CHUNK = 1L << 30;

    public FileFormat {
        if (oldest < 1 || oldest > current) throw new IllegalArgumentException(name + ": versions " + oldest + " to " + current);
    }

    /** The reason a file is not of this format: "not a jquant packed file (bad magic or too short)". */
    public IllegalArgumentException notThisFormat(String why) {
        return new IllegalArgumentException("not a " + name + " (" + why + ")");
    }

    /**
     * Throws {@link #notThisFormat} unless {@code found}, what the file's {@code field} holds (null when it
     * lacks it), is this format's identifier.
     */
    public void checkIdentifier(String field, Object found) {
        if (!identifier.equals(found)) {
            throw notThisFormat(field + " is " + (found == null ? "missing" : found instanceof String s ? "\"" + s + "\"" : found)
                    + ", expected \"" + identifier + "\"");
        }
    }

    /** {@code version}, if this reader reads it: "bit plan version 3 is not supported (1 to 2 are)" otherwise. */
    public int checkVersion(long version) {
        if (version < oldest || version > current) {
            throw new IllegalArgumentException(name + " version " + version + " is not supported ("
                    + (oldest == current ? "only " + current + " is" : oldest + " to " + current + " are") + ")");
        }
        return (int) version;
    }

    /** Throws unless the checksum a file stores for {@code part} is the one its content gives. */
    public static void checkChecksum(String part, long stored, long actual) {
        if (stored != actual) {
            throw new IllegalArgumentException(String.format(
                    "checksum mismatch in %s: the file says %08x, its content gives %08x (the file was changed or damaged)",
                    part, stored, actual));
        }
    }

    /** CRC-32C of {@code bytes}, any size. */
    public static long crc32c(MemorySegment bytes) {
        CRC32C crc = new CRC32C();
        for (long off = 0; off < bytes.byteSize(); off += CRC_CHUNK) {
            crc.update(bytes.asSlice(off, Math.min(CRC_CHUNK, bytes.byteSize() - off)).asByteBuffer());
        }
        return crc.getValue();
    }
}
