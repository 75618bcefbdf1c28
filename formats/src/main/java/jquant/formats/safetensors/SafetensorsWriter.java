package jquant.formats.safetensors;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import jquant.formats.AtomicOutput;
import jquant.formats.DType;
import jquant.formats.gguf.GgufWriter;

/**
 * Writes a safetensors file (layout on {@link SafetensorsFile}): the JSON header with each tensor's dtype,
 * shape and data offsets, padded with spaces to a multiple of 8 bytes as Hugging Face's writer pads it,
 * then the tensors back to back. Streamed: each tensor's bytes are produced when the writer reaches it;
 * the file appears only when complete ({@link AtomicOutput}).
 */
public final class SafetensorsWriter {
    private static final int HEADER_ALIGNMENT = 8;

    private SafetensorsWriter() {}

    /** Writes {@code tensors} (F32, F16, BF16, I8, U8) in order, with {@code __metadata__ = {"format": "pt"}}. */
    public static void write(Path target, List<GgufWriter.PendingTensor> tensors) throws IOException {
        ObjectNode header = new ObjectMapper().createObjectNode();
        header.putObject("__metadata__").put("format", "pt");
        long offset = 0;
        for (GgufWriter.PendingTensor t : tensors) {
            if (t.dtype() != DType.F32 && t.dtype() != DType.F16 && t.dtype() != DType.BF16 && t.dtype() != DType.I8 && t.dtype() != DType.U8) {
                throw new IllegalArgumentException(t.name() + ": safetensors has no " + t.dtype());
            }
            ObjectNode e = header.putObject(t.name());
            e.put("dtype", t.dtype().name());
            ArrayNode shape = e.putArray("shape");
            for (long d : t.shape()) shape.add(d);
            e.putArray("data_offsets").add(offset).add(offset + t.byteSize());
            offset += t.byteSize();
        }
        byte[] json = header.toString().getBytes(StandardCharsets.UTF_8);
        int padded = (json.length + HEADER_ALIGNMENT - 1) / HEADER_ALIGNMENT * HEADER_ALIGNMENT;
        ByteBuffer head = ByteBuffer.allocate(8 + padded).order(ByteOrder.LITTLE_ENDIAN);
        head.putLong(padded).put(json);
        while (head.hasRemaining()) head.put((byte) ' ');
        head.flip();
        try (AtomicOutput file = AtomicOutput.open(target)) {
            FileChannel out = file.channel();
            GgufWriter.writeFully(out, head);
            for (GgufWriter.PendingTensor t : tensors) {
                long before = out.position();
                t.bytes().writeTo(out);
                if (out.position() - before != t.byteSize()) {
                    throw new IllegalStateException(target + ": tensor " + t.name() + " wrote " + (out.position() - before) + " bytes, expected " + t.byteSize());
                }
            }
            file.commit();
        }
    }
}
