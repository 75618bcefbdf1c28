package jquant.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;
import java.util.Random;
import java.util.Set;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link StorageReads}: {@code /proc/self/io}'s format, and on Linux with a disk-backed file system the
 * real count: a mapped file dropped from the page cache ({@link PageCache#evict}) and then read counts
 * its bytes, as a model's weights read from disk while a benchmark is timed would.
 */
class StorageReadsTest {

    @Test
    void readsTheReadBytesLineOfProcIo() {
        String io = "rchar: 5128\nwchar: 94\nsyscr: 12\nsyscw: 3\nread_bytes: 254382080\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n";
        assertThat(StorageReads.parse(io)).hasValue(254382080L);
        assertThat(StorageReads.parse("rchar: 5\n")).isEmpty();
        assertThat(StorageReads.parse("read_bytes: many\n")).isEmpty();
    }

    @Test
    void notesOnlyReadsAboveAMegabyte() {
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(buffer, true);
        StorageReads.note(out, StorageReads.NOTABLE_BYTES - 1);
        assertThat(buffer.toString()).isEmpty();
        StorageReads.note(out, 812_000_000L);
        assertThat(buffer.toString()).contains("812 MB read from storage while timed");
    }

    @Test
    void aMappedFileReadFromDiskIsCounted(@TempDir Path dir) throws Exception {
        assumeThat(PageCache.supported()).as("Linux").isTrue();
        assumeThat(Set.of("ext4", "xfs", "btrfs")).as("a disk-backed file system").contains(Files.getFileStore(dir).type());
        Path file = dir.resolve("weights.bin");
        byte[] bytes = new byte[8 << 20];
        new Random(1).nextBytes(bytes);
        Files.write(file, bytes);
        try (FileChannel ch = FileChannel.open(file)) {
            ch.force(true);   // written back, so that eviction can drop the pages
        }
        PageCache.evict(file);
        OptionalLong before = StorageReads.bytes();
        assertThat(before).isPresent();
        long sum = 0;
        try (Arena arena = Arena.ofConfined(); FileChannel ch = FileChannel.open(file)) {
            MemorySegment m = ch.map(FileChannel.MapMode.READ_ONLY, 0, bytes.length, arena);
            for (long at = 0; at < bytes.length; at += 4096) sum += m.get(ValueLayout.JAVA_BYTE, at);
        }
        assertThat(sum).isNotZero();
        assertThat(StorageReads.since(before)).isGreaterThanOrEqualTo(bytes.length / 2);
    }
}
