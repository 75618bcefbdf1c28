package jquant.formats;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * How jquant opens an input file: only a regular file is opened at all (a named pipe would block the
 * open forever, a device would be read without end, a folder fails with the platform's words), and
 * text is strict UTF-8 whose error names the byte.
 */
public final class InputFiles {
    private InputFiles() {}

    /** Refuses anything but an existing regular file (symbolic links followed), in words naming the file. */
    public static void requireRegularFile(Path file) throws CheckpointException {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(file, BasicFileAttributes.class);
        } catch (IOException e) {
            String missing = whyMissing(file, null);
            if (missing != null) throw new CheckpointException(file, missing);
            throw new CheckpointException(file, e instanceof NoSuchFileException ? "no such file" : "cannot read: " + reason(e));
        }
        if (a.isDirectory()) throw new CheckpointException(file, "is a folder, not a file");
        if (!a.isRegularFile()) throw new CheckpointException(file, "is not a regular file (a named pipe, device or socket)");
    }

    /**
     * Why {@code path}, which cannot be reached, cannot: a symbolic link in a loop, or one to a missing
     * file (naming where it points), or {@code otherwise} when the path itself is missing.
     */
    public static String whyMissing(Path path, String otherwise) {
        if (!Files.isSymbolicLink(path)) return otherwise;
        try {
            path.toRealPath();
            return otherwise;
        } catch (NoSuchFileException e) {
            try {
                return "a symbolic link to a missing file (" + Files.readSymbolicLink(path) + ")";
            } catch (IOException unreadable) {
                return "a symbolic link to a missing file";
            }
        } catch (IOException e) {
            return "a symbolic link loop (too many levels of symbolic links)";
        }
    }

    /** The whole file's bytes, after {@link #requireRegularFile}. */
    public static byte[] readAllBytes(Path file) throws CheckpointException {
        requireRegularFile(file);
        try {
            return Files.readAllBytes(file);
        } catch (OutOfMemoryError e) {
            throw new CheckpointException(file, "too large to read into memory");
        } catch (IOException e) {
            throw new CheckpointException(file, "cannot read: " + reason(e));
        }
    }

    /** SHA-256 of the file's bytes (64 hex digits), read in chunks: a stats file of a 70B model is tens of gigabytes. */
    public static String sha256(Path file) throws CheckpointException {
        requireRegularFile(file);
        java.security.MessageDigest sha;
        try {
            sha = java.security.MessageDigest.getInstance("SHA-256");
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
        ByteBuffer chunk = ByteBuffer.allocateDirect(1 << 23);
        try (java.nio.channels.FileChannel in = java.nio.channels.FileChannel.open(file)) {
            while (in.read(chunk.clear()) >= 0) sha.update(chunk.flip());
        } catch (IOException e) {
            throw new CheckpointException(file, "cannot read: " + reason(e));
        }
        return java.util.HexFormat.of().formatHex(sha.digest());
    }

    /** The whole file as strict UTF-8 ({@link #decodeText}); an empty file is an error. */
    public static String readText(Path file) throws CheckpointException {
        byte[] bytes = readAllBytes(file);
        if (bytes.length == 0) throw new CheckpointException(file, "the text file is empty");
        return decodeText(file, bytes);
    }

    /** {@code bytes} read from {@code file} as strict UTF-8: a malformed byte is an error naming its offset, never a replacement character. */
    public static String decodeText(Path file, byte[] bytes) throws CheckpointException {
        var decoder = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(bytes);
        try {
            return decoder.decode(in).toString();
        } catch (CharacterCodingException e) {
            throw new CheckpointException(file, "not valid UTF-8 text near byte " + in.position());
        }
    }

    /**
     * An I/O failure's reason in words: the platform's reason without the file name the JDK puts
     * before it (the caller names the file once).
     */
    public static String reason(IOException e) {
        if (e instanceof java.nio.file.FileSystemException f) {
            if (f instanceof NoSuchFileException) return "no such file";
            if (f instanceof java.nio.file.AccessDeniedException) return "permission denied";
            if (f.getReason() != null) return f.getReason().toLowerCase(java.util.Locale.ROOT);
        }
        String m = e.getMessage();
        return m == null ? "input/output error" : m.substring(0, 1).toLowerCase(java.util.Locale.ROOT) + m.substring(1);
    }
}
