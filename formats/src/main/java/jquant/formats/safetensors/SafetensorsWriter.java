package jquant.formats.safetensors;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Map;
import jquant.formats.AtomicOutput;
import jquant.formats.DType;
import jquant.formats.Tensor;

/**
 * Writes a {@code .safetensors} file ({@link SafetensorsFile} has the layout): an 8-byte little-endian
 * header length, the JSON header (tensors in the given order, {@code data_offsets} back to back, an
 * optional {@code __metadata__} of strings), padded with spaces to a multiple of 8 as Hugging Face's
 * writer does, then the tensors' bytes. Streamed one tensor at a time through {@link AtomicOutput}.
 */
public final class SafetensorsWriter {
    /** Bytes copied per write call: a ByteBuffer view of a mapped tensor stays below 2 GB. */
    private static final long COPY_CHUNK = 1L << 26;

    private SafetensorsWriter() {}

    /** Writes {@code tensors} (F32, F16, BF16, I8 or U8; names as given) with {@code metadata} to {@code target}. */
    public static void write(Path target, Map<String, String> metadata, Collection<Tensor> tensors) throws IOException {
        ObjectNode header = new ObjectMapper().createObjectNode();
        if (!metadata.isEmpty()) {
            ObjectNode meta = header.putObject("__metadata__");
            metadata.forEach(meta::put);
        }
        long offset = 0;
        for (Tensor t : tensors) {
            ObjectNode entry = header.putObject(t.name());
            entry.put("dtype", name(t.dtype()));
            ArrayNode shape = entry.putArray("shape");
            for (long d : t.shape()) shape.add(d);
            entry.putArray("data_offsets").add(offset).add(offset + t.byteSize());
            offset += t.byteSize();
        }
        byte[] json = header.toString().getBytes(StandardCharsets.UTF_8);
        int padded = (json.length + 7) / 8 * 8;
        ByteBuffer head = ByteBuffer.allocate(8 + padded).order(ByteOrder.LITTLE_ENDIAN);
        head.putLong(padded).put(json);
        while (head.hasRemaining()) head.put((byte) ' ');
        try (AtomicOutput out = AtomicOutput.open(target)) {
            FileChannel ch = out.channel();
            writeFully(ch, head.flip());
            for (Tensor t : tensors) {
                for (long at = 0; at < t.byteSize(); at += COPY_CHUNK) {
                    MemorySegment chunk = t.data().asSlice(at, Math.min(COPY_CHUNK, t.byteSize() - at));
                    writeFully(ch, chunk.asByteBuffer());
                }
            }
            out.commit();
        }
    }

    private static String name(DType type) {
        return switch (type) {
            case F32, F16, BF16, I8, U8 -> type.name();
            default -> throw new IllegalArgumentException("safetensors has no dtype for " + type);
        };
    }

    private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) ch.write(b);
    }
}
