package jquant.formats;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
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
import java.util.zip.CRC32;
import java.util.regex.Pattern;

/**
 * The one way jquant writes an output file, so that it appears complete or not at all: the bytes go to
 * a temporary file {@code .<name>.<uuid>.tmp} in the target's folder, which is renamed over the target
 * only once {@link #commit} is called; closing without a commit deletes it, so a failed write leaves no
 * output (and never a half-written one). The temporary file is created like any new file, with the
 * umask's mode (not {@code createTempFile}'s owner-only one), so every output is readable like any other.
 *
 * <p>A name the filesystem takes, jquant takes: when {@code .<name>.<uuid>.tmp} would pass the usual
 * 255-byte limit on a file name, the temporary file's name holds the output name's first bytes and a
 * CRC-32 of the whole name instead ({@link #tempStem}). Errors name the output as the caller gave it,
 * never the temporary file.
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
    /** The longest file name (in bytes) Linux's common filesystems (ext4, XFS, Btrfs, tmpfs) and macOS's APFS take. */
    static final int MAX_NAME_BYTES = 255;
    /** What the temporary file's name adds to its stem: the leading dot, {@code .<uuid>} and {@code .tmp}. */
    private static final int TEMP_NAME_OVERHEAD = 1 + 1 + 36 + 4;
    /** What a shortened stem ends with: {@code ~} and eight hex digits of the CRC-32 of the whole name. */
    private static final int CRC_SUFFIX = 1 + 8;

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
    /** The target as the caller named it, for messages. */
    private final Path shown;
    private final Path tmp;
    private final FileChannel channel;
    private boolean committed;

    private AtomicOutput(Path target, Path shown, Path tmp, FileChannel channel) {
        this.target = target;
        this.shown = shown;
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
            throw named(target, e);
        }
        Path tmp = tempFile(abs.getParent(), abs);
        FileChannel channel = null;
        try {
            Files.createFile(tmp);
            OPEN.add(tmp);
            channel = FileChannel.open(tmp, StandardOpenOption.WRITE);
            channel.lock();
            return new AtomicOutput(abs, target, tmp, channel);
        } catch (IOException | RuntimeException e) {
            if (channel != null) channel.close();
            Files.deleteIfExists(tmp);
            OPEN.remove(tmp);
            if (e instanceof IOException io) throw named(target, io);
            throw e;
        }
    }

    /**
     * Refuses, before any work, an output that could not be written: its name is longer than a file
     * name may be, the nearest existing folder on its path is not a folder or cannot be written to (a
     * read-only filesystem, no permission), or that filesystem has no space left. Tried by creating
     * and deleting a temporary file of the output's own pattern there (a killed run's is swept by the
     * next); missing folders are left to the write, which creates them.
     */
    public static void checkWritable(Path target) throws IOException {
        Path abs = target.toAbsolutePath();
        if (abs.getFileName().toString().getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
            throw new FileSystemException(target.toString(), null, "file name too long (over " + MAX_NAME_BYTES + " bytes)");
        }
        Path folder = abs.getParent();
        while (folder != null && !Files.exists(folder)) folder = folder.getParent();
        if (folder == null) return;
        if (!Files.isDirectory(folder)) throw new FileSystemException(target.toString(), null, folder + " is not a folder");
        Path probe = tempFile(folder, abs);
        try {
            Files.createFile(probe);
            OPEN.add(probe);
        } catch (IOException e) {
            throw named(target, e);
        } finally {
            Files.deleteIfExists(probe);
            OPEN.remove(probe);
        }
        if (Files.getFileStore(folder).getUsableSpace() == 0) throw new FileSystemException(target.toString(), null, "no space left on device");
    }

    /** A new temporary file's path in {@code folder} for the output {@code abs}. */
    private static Path tempFile(Path folder, Path abs) {
        return folder.resolve("." + tempStem(abs.getFileName().toString()) + "." + UUID.randomUUID() + ".tmp");
    }

    /**
     * The part of the temporary file's name that stands for the output's name: the name itself, or when
     * that would make the temporary name too long, as many of its first bytes as fit (whole characters)
     * and {@code ~} with the CRC-32 of the whole name, so two long names sharing a beginning differ.
     */
    static String tempStem(String name) {
        byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
        int room = MAX_NAME_BYTES - TEMP_NAME_OVERHEAD;
        if (utf8.length <= room) return name;
        int end = 0, bytes = 0;
        while (end < name.length()) {
            int cp = name.codePointAt(end);
            int n = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8).length;
            if (bytes + n > room - CRC_SUFFIX) break;
            bytes += n;
            end += Character.charCount(cp);
        }
        CRC32 crc = new CRC32();
        crc.update(utf8);
        return name.substring(0, end) + "~" + String.format("%08x", crc.getValue());
    }

    /**
     * Deletes {@code .<name>.<uuid>.tmp} files beside {@code target} that are older than this run and
     * that no live writer holds locked.
     */
    private static void removeStale(Path target) throws IOException {
        Pattern ours = Pattern.compile("\\." + Pattern.quote(tempStem(target.getFileName().toString())) + "\\." + UUID_PATTERN + "\\.tmp");
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
     * What a failed write of this output should throw: the error naming the output as the caller gave
     * it, since the platform's message names the temporary file ("read-only file system") or nothing
     * ("No space left on device").
     */
    public IOException failure(IOException e) {
        return named(shown, e);
    }

    private static IOException named(Path shown, IOException e) {
        if (e instanceof CheckpointException) return e;
        FileSystemException named = new FileSystemException(shown.toString(), null, InputFiles.reason(e));
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
