package jquant.formats;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A read-only memory mapping of a whole file. Mapped through {@code java.lang.foreign}, so files
 * larger than 2 GB work and tensors are slices of the mapping, never copies. Closing unmaps.
 */
public final class MappedFile implements AutoCloseable {
    private final Path path;
    private final Arena arena;
    private final MemorySegment segment;

    private MappedFile(Path path, Arena arena, MemorySegment segment) {
        this.path = path;
        this.arena = arena;
        this.segment = segment;
    }

    /** Maps {@code path}, which must be a regular file ({@link InputFiles#requireRegularFile}). */
    public static MappedFile open(Path path) throws CheckpointException {
        InputFiles.requireRegularFile(path);
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            MemorySegment seg = ch.size() == 0 ? MemorySegment.ofArray(new byte[0])
                    : ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), arena);
            return new MappedFile(path, arena, seg);
        } catch (NoSuchFileException e) {
            arena.close();
            throw new CheckpointException(path, "no such file");
        } catch (IOException e) {
            arena.close();
            throw new CheckpointException(path, "cannot read: " + InputFiles.reason(e), e);
        }
    }

    /** Builds something from a file's mapping, or fails with the reason. */
    @FunctionalInterface
    public interface Parser<T> {
        T parse(MappedFile file) throws CheckpointException;
    }

    /**
     * Maps {@code path} and hands it to {@code parser}; if parsing fails the mapping is closed, so a
     * rejected file never leaks one. On success the result owns the mapping.
     */
    public static <T> T parse(Path path, Parser<T> parser) throws CheckpointException {
        MappedFile file = open(path);
        try {
            return parser.parse(file);
        } catch (CheckpointException | RuntimeException e) {
            file.close();
            throw e;
        }
    }

    public Path path() { return path; }

    public MemorySegment segment() { return segment; }

    public long size() { return segment.byteSize(); }

    @Override
    public void close() {
        arena.close();
    }
}
