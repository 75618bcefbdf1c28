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
        })).isInstanceOf(FileSystemException.class).hasMessage(out + ": disk full");
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

    /** Any name of up to 255 bytes is written, though {@code .<name>.<uuid>.tmp} would be longer; a killed run's temporary file of it is swept. */
    @Test
    void namesUpTo255BytesAreWrittenAndTheirStaleTempFilesSwept(@TempDir Path dir) throws IOException {
        String ascii = "m".repeat(250) + ".json", multibyte = "é".repeat(125) + ".json";
        for (String name : new String[] {ascii, multibyte}) {
            assertThat(name.getBytes(java.nio.charset.StandardCharsets.UTF_8).length).isBetween(214, 255);
            Path out = dir.resolve(name);
            AtomicOutput.checkWritable(out);
            try (AtomicOutput file = AtomicOutput.open(out)) {
                try (var files = Files.list(dir)) {
                    Path tmp = files.filter(f -> f.getFileName().toString().endsWith(".tmp")).findFirst().orElseThrow();
                    assertThat(tmp.getFileName().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8).length).isLessThanOrEqualTo(255);
                    assertThat(tmp.getFileName().toString()).startsWith("." + name.substring(0, 90));
                }
                file.channel().write(ByteBuffer.wrap(new byte[] {5}));
                file.commit();
            }
            assertThat(Files.readAllBytes(out)).containsExactly(5);
        }
        FileTime beforeThisRun = FileTime.fromMillis(ManagementFactory.getRuntimeMXBean().getStartTime() - 60_000);
        Path stale = old(dir.resolve("." + AtomicOutput.tempStem(ascii) + "." + UUID.randomUUID() + ".tmp"), beforeThisRun);
        AtomicOutput.write(dir.resolve(ascii), s -> s.write(6));
        assertThat(stale).doesNotExist();
        assertThat(AtomicOutput.tempStem("m".repeat(250) + ".a")).isNotEqualTo(AtomicOutput.tempStem("m".repeat(250) + ".b"));
        assertThatThrownBy(() -> AtomicOutput.checkWritable(dir.resolve("m".repeat(256))))
                .isInstanceOf(FileSystemException.class).hasMessageEndingWith("file name too long (over 255 bytes)");
    }

    /**
     * A place that cannot be written is refused up front, and errors name the output as given, never the
     * temporary file. {@code /sys} takes no new files, even from root.
     */
    @Test
    void unwritablePlacesAreFoundUpFrontAndNamedAsGiven(@TempDir Path dir) throws IOException {
        for (Path out : new Path[] {Path.of("/sys/jquant-out.bin"), Path.of("/sys/no-such-folder/jquant-out.bin")}) {
            assertThatThrownBy(() -> AtomicOutput.checkWritable(out)).isInstanceOf(FileSystemException.class).hasMessage(out + ": permission denied");
            assertThatThrownBy(() -> AtomicOutput.write(out, s -> s.write(1))).isInstanceOf(FileSystemException.class)
                    .hasMessageStartingWith(out + ": ").hasMessageNotContaining(".tmp");
        }
        Files.writeString(dir.resolve("file"), "x");
        assertThatThrownBy(() -> AtomicOutput.checkWritable(dir.resolve("file/out.bin"))).hasMessageContaining("is not a folder");
        Path relative = Path.of("").toAbsolutePath().relativize(dir.resolve("out.bin"));
        assertThat(relative.isAbsolute()).isFalse();
        assertThatThrownBy(() -> AtomicOutput.write(relative, s -> { throw new IOException("No space left on device"); }))
                .isInstanceOf(FileSystemException.class).hasMessage(relative + ": no space left on device");
        try (var files = Files.list(dir)) {
            assertThat(files).containsExactly(dir.resolve("file"));
        }
    }

    private static Path old(Path file, FileTime time) throws IOException {
        Files.write(file, new byte[] {9});
        Files.setLastModifiedTime(file, time);
        return file;
    }
}
