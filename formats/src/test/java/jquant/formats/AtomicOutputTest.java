package jquant.formats;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
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
        })).hasMessage("disk full");
        try (AtomicOutput file = AtomicOutput.open(out)) {
            file.channel().write(ByteBuffer.wrap(new byte[] {7}), 10);
        }
        try (var files = Files.list(dir)) {
            assertThat(files).isEmpty();
        }
    }
}
