package jquant.formats.jqw;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.formats.CheckpointException;
import jquant.formats.weightlet.ScalarWeightletUnpacker;
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
            raf.write(3);
        }
        assertThatThrownBy(() -> JqwFile.open(f)).isInstanceOf(CheckpointException.class)
                .hasMessage(f + ": jquant packed file version 3 is not supported (1 to 2 are)");
        flip(f, 0);
        assertThatThrownBy(() -> JqwFile.open(f)).hasMessage(f + ": not a jquant packed file (bad magic or too short)");
    }

    /**
     * Version 1 stored each row's last group whole: a tensor of 40-weight rows read from such a file is
     * the same tensor as version 2 stores it (the short group), and only its data part differs.
     */
    @Test
    void versionOneWeightletRowsPaddedToWholeGroupsReadAsTheTensorTheyStore(@TempDir Path dir) throws IOException {
        int rows = 3, cols = 40;
        byte[] bits = {3, 8, 5};
        byte[] values = new byte[rows * cols];
        Random random = new Random(7);
        for (int r = 0; r < rows; r++) {
            int top = bits[r] == 8 ? 127 : (1 << bits[r]) - 1;
            for (int j = 0; j < cols; j++) values[r * cols + j] = (byte) (bits[r] == 8 ? random.nextInt(-top, top + 1) : 2 * random.nextInt(top + 1) - top);
        }
        float[] scales = {0.5f, 0.25f, 2f};
        TensorEncoding.Parts now = TensorEncoding.weightlet(rows, cols, bits, values, scales);
        // version 1's bytes: the rows padded with zero fields to 128 weights, which are the levels −(2^B − 1) (−127 at 8 bits)
        byte[] padded = new byte[rows * 128];
        for (int r = 0; r < rows; r++) {
            java.util.Arrays.fill(padded, r * 128, (r + 1) * 128, (byte) (bits[r] == 8 ? -127 : -((1 << bits[r]) - 1)));
            System.arraycopy(values, r * cols, padded, r * 128, cols);
        }
        Map<String, ByteBuffer> old = new LinkedHashMap<>(TensorEncoding.weightlet(rows, 128, bits, padded, scales).bytes());
        Path v1 = dir.resolve("v1.jqw"), v2 = dir.resolve("v2.jqw");
        for (Path f : new Path[] {v1, v2}) {
            try (JqwWriter w = new JqwWriter(f)) {
                w.beginLayer("layer.0");
                w.addTensor("blk.0.attn_q", TensorEncoding.WEIGHTLET, new long[]{rows, cols}, f == v1 ? old : now.bytes(), Map.of());
                w.finish(new ObjectMapper().createObjectNode());
            }
        }
        try (RandomAccessFile raf = new RandomAccessFile(v1.toFile(), "rw")) {
            raf.seek(8);
            raf.write(1);
        }
        try (JqwFile a = JqwFile.open(v1); JqwFile b = JqwFile.open(v2)) {
            assertThat(a.version()).isEqualTo(1);
            assertThat(b.version()).isEqualTo(2);
            assertThat(a.part(a.tensors().get("blk.0.attn_q"), TensorEncoding.DATA).byteSize()).isEqualTo(16L * (3 + 8 + 5));
            TensorEncoding.Weightlet x = TensorEncoding.readWeightlet(a, a.tensors().get("blk.0.attn_q"));
            TensorEncoding.Weightlet y = TensorEncoding.readWeightlet(b, b.tensors().get("blk.0.attn_q"));
            assertThat(y.packed().byteSize()).isEqualTo(16L * (2 + 4 + 3));   // 3 stripes: planes 1+2 → 1+1 blocks, 4+4 → 2+2, 1+4 → 1+2
            assertThat(x.packed().data().toArray(ValueLayout.JAVA_BYTE)).isEqualTo(y.packed().data().toArray(ValueLayout.JAVA_BYTE));
            assertThat(x.packed().channelOffsets()).isEqualTo(y.packed().channelOffsets());
            assertThat(ScalarWeightletUnpacker.INSTANCE.unpackTensor(x.packed())).isEqualTo(values);
            assertThat(x.scales()).isEqualTo(scales);
        }
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
