package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.RandomAccessFile;
import java.nio.file.Path;
import jquant.core.Memory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The kernels' copies (weightlet lanes, T2P's sixteen-row tiles) are made only for a file that fits in half the memory available; sparse files stand in for large models. */
class CopiesFitTest {

    @Test
    void aFileOverHalfTheMemoryAvailableRunsAsStored(@TempDir Path dir) throws Exception {
        long half = Memory.systemAvailable() / 2;
        Path small = sparse(dir.resolve("small.jqw"), Math.min(half, 1L << 20));
        Path large = sparse(dir.resolve("large.jqw"), half + (1L << 30));
        assertThat(LoadedModel.copiesFit(small)).isTrue();
        assertThat(LoadedModel.copiesFit(large)).isFalse();
    }

    private static Path sparse(Path path, long size) throws Exception {
        try (RandomAccessFile f = new RandomAccessFile(path.toFile(), "rw")) {
            f.setLength(size);
        }
        return path;
    }
}
