package jquant.formats;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.attribute.FileTime;
import java.lang.management.ManagementFactory;
import java.util.UUID;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class AtomicOutputTest {

    @Test
    void outputsGetTheModeOfAnyNewFileAndReplaceTheTarget(@TempDir Path dir) throws IOException {
        Path plain = Files.createFile(dir.resolve("plain"));
        Path out = dir.resolve("sub/out.bin");
        AtomicOutput.write(out, s -> s.write(new byte[] {1, 2, 3}));
        AtomicOutput.write(out, s -> s.write(new byte[] {4}));
        assertThat(Files.readAllBytes(out)).containsExactly(4);
        assertThat(Files.getPosixFilePermissions(out)).isEqualTo(Files.getPosixFilePermissions(plain));
        try (var files = Files.list(out.getParent())) {
            assertThat(files).containsExactly(out);
        }
    }

    @Test
    void aFailedOrUncommittedWriteLeavesNothing(@TempDir Path dir) throws IOException {
        Path out = dir.resolve("out.bin");
        assertThatThrownBy(() -> AtomicOutput.write(out, s -> {
            s.write(new byte[100]);
            throw new IOException("disk full");
        })).isInstanceOf(FileSystemException.class).hasMessage(out.toAbsolutePath() + ": disk full");
        try (AtomicOutput file = AtomicOutput.open(out)) {
            file.channel().write(ByteBuffer.wrap(new byte[] {7}), 10);
        }
        try (var files = Files.list(dir)) {
            assertThat(files).isEmpty();
        }
    }

    @Test
    void aRunRemovesOnlyItsOwnOutputsTempFilesLeftByAnEarlierKilledRun(@TempDir Path dir) throws IOException {
        Path out = dir.resolve("out.bin");
        FileTime beforeThisRun = FileTime.fromMillis(ManagementFactory.getRuntimeMXBean().getStartTime() - 60_000);
        Path stale = old(dir.resolve(".out.bin." + UUID.randomUUID() + ".tmp"), beforeThisRun);
        Path otherOutput = old(dir.resolve(".other.bin." + UUID.randomUUID() + ".tmp"), beforeThisRun);
        Path notOurPattern = old(dir.resolve(".out.bin.backup.tmp"), beforeThisRun);
        Path visible = old(dir.resolve("out.bin." + UUID.randomUUID() + ".tmp"), beforeThisRun);
        Path fromThisRun = Files.write(dir.resolve(".out.bin." + UUID.randomUUID() + ".tmp"), new byte[1]);
        AtomicOutput.write(out, s -> s.write(1));
        assertThat(stale).doesNotExist();
        assertThat(otherOutput).exists();
        assertThat(notOurPattern).exists();
        assertThat(visible).exists();
        assertThat(fromThisRun).exists();
    }

    @Test
    void aLiveWritersTempFileIsNeverSweptEvenWhenOld(@TempDir Path dir) throws IOException {
        Path out = dir.resolve("out.bin");
        try (AtomicOutput first = AtomicOutput.open(out)) {
            Path live;
            try (var files = Files.list(dir)) {
                live = files.findFirst().orElseThrow();
            }
            Files.setLastModifiedTime(live, FileTime.fromMillis(0));
            AtomicOutput.write(out, s -> s.write(2));
            assertThat(live).exists();
            first.channel().write(ByteBuffer.wrap(new byte[] {1}));
            first.commit();
        }
        assertThat(Files.readAllBytes(out)).containsExactly(1);
    }

    private static Path old(Path file, FileTime time) throws IOException {
        Files.write(file, new byte[] {9});
        Files.setLastModifiedTime(file, time);
        return file;
    }
}
