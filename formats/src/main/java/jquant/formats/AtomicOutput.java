package jquant.formats;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.UUID;

/**
 * The one way jquant writes an output file, so that it appears complete or not at all: the bytes go to
 * a temporary file in the target's folder, which is renamed over the target only once {@link #commit}
 * is called; closing without a commit deletes it, so a failed or interrupted write leaves no output
 * (and never a half-written one). The temporary file is created like any new file, with the umask's
 * mode (not {@code createTempFile}'s owner-only one), so every output is readable like any other file.
 */
public final class AtomicOutput implements AutoCloseable {
    private final Path target;
    private final Path tmp;
    private final FileChannel channel;
    private boolean committed;

    private AtomicOutput(Path target, Path tmp, FileChannel channel) {
        this.target = target;
        this.tmp = tmp;
        this.channel = channel;
    }

    /** Something that writes the whole content to a stream. */
    @FunctionalInterface
    public interface Writer {
        void write(OutputStream out) throws IOException;
    }

    /** Writes {@code target} through a temp file, then renames it into place. */
    public static void write(Path target, Writer writer) throws IOException {
        try (AtomicOutput file = open(target)) {
            try (OutputStream out = new BufferedOutputStream(Channels.newOutputStream(file.channel()), 1 << 20)) {
                writer.write(out);
            }
            file.commit();
        }
    }

    /** Creates the temporary file for {@code target} (and any missing parent folders), open for writing. */
    public static AtomicOutput open(Path target) throws IOException {
        Path abs = target.toAbsolutePath();
        Files.createDirectories(abs.getParent());
        Path tmp = Files.createFile(abs.resolveSibling("." + abs.getFileName() + "." + UUID.randomUUID() + ".tmp"));
        try {
            return new AtomicOutput(abs, tmp, FileChannel.open(tmp, StandardOpenOption.WRITE));
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
    }

    /** The temporary file; writes may be positional (a header filled in last). */
    public FileChannel channel() {
        return channel;
    }

    /** Closes the temporary file and renames it over the target. */
    public void commit() throws IOException {
        channel.close();
        try {
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
        }
        committed = true;
    }

    /** Without a {@link #commit}: closes and deletes the temporary file. */
    @Override
    public void close() throws IOException {
        if (committed) return;
        try {
            channel.close();
        } finally {
            Files.deleteIfExists(tmp);
        }
    }
}
