package jquant.formats.jqw;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.formats.CheckpointException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class JqwFileTest {

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static Path write(Path dir) throws IOException {
        Path f = dir.resolve("m.jqw");
        try (JqwWriter w = new JqwWriter(f)) {
            w.beginLayer("embedding");
            w.addTensor("token_embd", "f32", new long[]{4, 3}, Map.of("data", ByteBuffer.wrap(random(48, 1))), Map.of());
            w.beginLayer("layer.0");
            Map<String, ByteBuffer> parts = new LinkedHashMap<>();
            parts.put("scales", ByteBuffer.wrap(random(20, 2)));
            parts.put("data", ByteBuffer.wrap(random(333, 3)));
            w.addTensor("blk.0.attn_q", "weightlet", new long[]{5, 130}, parts, Map.of("activationScale", 0.5));
            ObjectNode meta = new ObjectMapper().createObjectNode();
            meta.put("format", "test");
            w.finish(meta);
        }
        return f;
    }

    @Test
    void roundTripsPartsAlignedAndInOrder(@TempDir Path dir) throws IOException {
        Path f = write(dir);
        try (JqwFile j = JqwFile.open(f)) {
            assertThat(j.metadata().get("format").asText()).isEqualTo("test");
            assertThat(j.layers()).extracting(JqwLayer::name).containsExactly("embedding", "layer.0");
            JqwTensor q = j.tensors().get("blk.0.attn_q");
            assertThat(q.shape()).containsExactly(5, 130);
            assertThat(q.attrs()).containsEntry("activationScale", 0.5);
            assertThat(j.part(q, "data").toArray(ValueLayout.JAVA_BYTE)).isEqualTo(random(333, 3));
            assertThat(j.part(q, "scales").toArray(ValueLayout.JAVA_BYTE)).isEqualTo(random(20, 2));
            for (JqwTensor t : j.tensors().values()) {
                for (long[] r : t.parts().values()) assertThat(r[0] % 64).isZero();
            }
        }
        // Same input, same bytes.
        byte[] first = Files.readAllBytes(f);
        assertThat(Files.readAllBytes(write(dir))).isEqualTo(first);
    }

    @Test
    void everyFlippedByteIsCaught(@TempDir Path dir) throws IOException {
        Path f = write(dir);
        long size = Files.size(f);
        for (long pos = 0; pos < size; pos += 7) {
            flip(f, pos);
            assertThatThrownBy(() -> JqwFile.open(f).close()).as("byte %d", pos).isInstanceOf(CheckpointException.class);
            flip(f, pos);
        }
        JqwFile.open(f).close();
    }

    @Test
    void anotherVersionOrMagicIsRefusedNamingIt(@TempDir Path dir) throws IOException {
        Path f = write(dir);
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
            raf.seek(8);
            raf.write(2);
        }
        assertThatThrownBy(() -> JqwFile.open(f)).isInstanceOf(CheckpointException.class)
                .hasMessage(f + ": jquant packed file version 2 is not supported (only 1 is)");
        flip(f, 0);
        assertThatThrownBy(() -> JqwFile.open(f)).hasMessage(f + ": not a jquant packed file (bad magic or too short)");
    }

    @Test
    void corruptLayerIsNamed(@TempDir Path dir) throws IOException {
        Path f = write(dir);
        long dataPos;
        try (JqwFile j = JqwFile.open(f)) {
            dataPos = j.tensors().get("blk.0.attn_q").part("data")[0] + 100;
        }
        flip(f, dataPos);
        assertThatThrownBy(() -> JqwFile.open(f)).hasMessageStartingWith(f + ": checksum mismatch in layer layer.0: the file says ");
    }

    @Test
    void unfinishedWriterLeavesNothing(@TempDir Path dir) throws IOException {
        try (JqwWriter w = new JqwWriter(dir.resolve("x.jqw"))) {
            w.beginLayer("embedding");
        }
        try (var files = Files.list(dir)) {
            assertThat(files).isEmpty();
        }
    }

    private static void flip(Path f, long pos) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
            raf.seek(pos);
            int b = raf.read();
            raf.seek(pos);
            raf.write(b ^ 0x5A);
        }
    }
}
