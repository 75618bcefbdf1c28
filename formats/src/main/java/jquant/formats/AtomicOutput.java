package jquant.formats;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * The one way jquant writes an output file, so that it appears complete or not at all: the bytes go to
 * a temporary file {@code .<name>.<uuid>.tmp} in the target's folder, which is renamed over the target
 * only once {@link #commit} is called; closing without a commit deletes it, so a failed write leaves no
 * output (and never a half-written one). The temporary file is created like any new file, with the
 * umask's mode (not {@code createTempFile}'s owner-only one), so every output is readable like any other.
 *
 * <p>Nothing is left behind by an interrupted run either: a shutdown hook (SIGINT, SIGTERM) deletes
 * the temporary files still open, and since a SIGKILL runs no hook, opening an output first deletes
 * the temporary files of that same output that an earlier run left: only names of exactly this
 * pattern, last modified before this JVM started, and not locked, because a live writer holds a lock
 * on its temporary file for as long as it writes (so a concurrent run's file is never touched).
 */
public final class AtomicOutput implements AutoCloseable {
    private static final Set<Path> OPEN = ConcurrentHashMap.newKeySet();
    private static final String UUID_PATTERN = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> OPEN.forEach(tmp -> {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException e) {
                // the JVM is going away; a file that cannot be deleted now is deleted by the next run's sweep
            }
        }), "jquant-temp-cleanup"));
    }

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
            } catch (IOException e) {
                throw file.failure(e);
            }
            file.commit();
        }
    }

    /**
     * Creates the temporary file for {@code target} (and any missing parent folders), open for writing,
     * after deleting the ones an earlier killed run left for the same target.
     */
    public static AtomicOutput open(Path target) throws IOException {
        Path abs = target.toAbsolutePath();
        try {
            Files.createDirectories(abs.getParent());
            removeStale(abs);
        } catch (IOException e) {
            throw named(abs, e);
        }
        Path tmp = abs.resolveSibling("." + abs.getFileName() + "." + UUID.randomUUID() + ".tmp");
        FileChannel channel = null;
        try {
            Files.createFile(tmp);
            OPEN.add(tmp);
            channel = FileChannel.open(tmp, StandardOpenOption.WRITE);
            channel.lock();
            return new AtomicOutput(abs, tmp, channel);
        } catch (IOException | RuntimeException e) {
            if (channel != null) channel.close();
            Files.deleteIfExists(tmp);
            OPEN.remove(tmp);
            if (e instanceof IOException io) throw named(abs, io);
            throw e;
        }
    }

    /**
     * Deletes {@code .<name>.<uuid>.tmp} files beside {@code target} that are older than this run and
     * that no live writer holds locked.
     */
    private static void removeStale(Path target) throws IOException {
        Pattern ours = Pattern.compile("\\." + Pattern.quote(target.getFileName().toString()) + "\\." + UUID_PATTERN + "\\.tmp");
        FileTime runStart = FileTime.fromMillis(ManagementFactory.getRuntimeMXBean().getStartTime());
        try (DirectoryStream<Path> siblings = Files.newDirectoryStream(target.getParent(), p -> ours.matcher(p.getFileName().toString()).matches())) {
            for (Path stale : siblings) {
                if (!Files.isRegularFile(stale) || Files.getLastModifiedTime(stale).compareTo(runStart) >= 0 || OPEN.contains(stale)) continue;
                try (FileChannel ch = FileChannel.open(stale, StandardOpenOption.WRITE); FileLock lock = ch.tryLock()) {
                    if (lock != null) Files.deleteIfExists(stale);
                } catch (OverlappingFileLockException e) {
                    // held by a writer in this JVM: live
                }
            }
        }
    }

    /** The temporary file; writes may be positional (a header filled in last). */
    public FileChannel channel() {
        return channel;
    }

    /**
     * What a failed write of this output should throw: a bare I/O error (a full disk, a quota) names
     * the target, since the platform's message ("No space left on device") does not.
     */
    public IOException failure(IOException e) {
        return named(target, e);
    }

    private static IOException named(Path target, IOException e) {
        if (e instanceof FileSystemException || e instanceof CheckpointException) return e;
        FileSystemException named = new FileSystemException(target.toString(), null, InputFiles.reason(e));
        named.initCause(e);
        return named;
    }

    /** Closes the temporary file and renames it over the target. */
    public void commit() throws IOException {
        try {
            channel.close();
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException e) {
            throw failure(e);
        }
        OPEN.remove(tmp);
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
            OPEN.remove(tmp);
        }
    }
}
