package jquant.formats.jqw;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.formats.AtomicOutput;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * Streams a jquant packed file: layers are written one after another (only the current tensor's
 * bytes need be in memory), the JSON metadata goes after the data, and the header is filled in last.
 * Everything goes through an {@link AtomicOutput}, renamed into place by {@link #finish}; a writer
 * closed without {@code finish} deletes it, so a failed pack leaves no output.
 */
public final class JqwWriter implements AutoCloseable {
    private final AtomicOutput file;
    private final FileChannel ch;
    private final List<JqwLayer> layers = new ArrayList<>();
    private String layerName;
    private long layerStart;
    private CRC32C layerCrc;
    private List<JqwTensor> layerTensors;

    public JqwWriter(Path target) throws IOException {
        this.file = AtomicOutput.open(target);
        this.ch = file.channel();
        write(ByteBuffer.allocate(JqwHeader.SIZE), 0);
        ch.position(JqwHeader.SIZE);
    }

    /** Starts a layer; tensors added until the next call belong to it. */
    public void beginLayer(String name) throws IOException {
        endLayer();
        layerName = name;
        layerStart = ch.position();
        layerCrc = new CRC32C();
        layerTensors = new ArrayList<>();
    }

    /**
     * Adds a tensor to the current layer: each part's bytes are written 64-byte aligned, in the given
     * order.
     */
    public void addTensor(String name, String encoding, long[] shape, Map<String, ByteBuffer> parts, Map<String, Object> attrs) throws IOException {
        if (layerName == null) throw new IllegalStateException("addTensor before beginLayer");
        Map<String, long[]> ranges = new LinkedHashMap<>();
        for (Map.Entry<String, ByteBuffer> part : parts.entrySet()) {
            padTo(JqwHeader.ALIGNMENT, layerCrc);
            long offset = ch.position();
            ByteBuffer b = part.getValue().duplicate();
            layerCrc.update(b.duplicate());
            write(b);
            ranges.put(part.getKey(), new long[]{offset, ch.position() - offset});
        }
        layerTensors.add(new JqwTensor(name, encoding, shape, ranges, attrs));
    }

    private void endLayer() throws IOException {
        if (layerName == null) return;
        // Layers tile the data area exactly (trailing padding included), so every byte is checksummed.
        padTo(JqwHeader.ALIGNMENT, layerCrc);
        layers.add(new JqwLayer(layerName, layerStart, ch.position() - layerStart, layerCrc.getValue(), layerTensors));
        layerName = null;
    }

    private void padTo(int alignment, CRC32C crc) throws IOException {
        int pad = (int) (-ch.position() & (alignment - 1));
        if (pad > 0) {
            ByteBuffer zeros = ByteBuffer.allocate(pad);
            if (crc != null) crc.update(zeros.duplicate());
            write(zeros);
        }
    }

    /**
     * Writes the metadata ({@code model}, {@code tokenizer}, {@code quantization}, … as given, plus the
     * layer directory), the header, and renames the file into place.
     */
    public void finish(ObjectNode metadata) throws IOException {
        endLayer();
        ObjectMapper json = new ObjectMapper();
        ObjectNode meta = metadata.deepCopy();
        ArrayNode dir = meta.putArray("layers");
        for (JqwLayer l : layers) dir.add(json.valueToTree(l));
        byte[] metaBytes = json.writeValueAsBytes(meta);
        long metaOffset = ch.position();
        write(ByteBuffer.wrap(metaBytes));
        long fileLength = ch.position();
        CRC32C metaCrc = new CRC32C();
        metaCrc.update(metaBytes);
        ByteBuffer h = ByteBuffer.allocate(JqwHeader.SIZE).order(ByteOrder.LITTLE_ENDIAN);
        h.put(JqwHeader.MAGIC);
        h.putInt(JqwHeader.OFF_VERSION, JqwHeader.FORMAT.current()).putInt(JqwHeader.OFF_HEADER_SIZE, JqwHeader.SIZE)
                .putLong(JqwHeader.OFF_META_OFFSET, metaOffset).putLong(JqwHeader.OFF_META_LENGTH, metaBytes.length)
                .putInt(JqwHeader.OFF_META_CRC, (int) metaCrc.getValue()).putLong(JqwHeader.OFF_FILE_LENGTH, fileLength);
        h.position(0);
        write(h, 0);
        try {
            ch.force(true);
        } catch (IOException e) {
            throw file.failure(e);
        }
        file.commit();
    }

    private void write(ByteBuffer b) throws IOException {
        try {
            while (b.hasRemaining()) ch.write(b);
        } catch (IOException e) {
            throw file.failure(e);
        }
    }

    private void write(ByteBuffer b, long position) throws IOException {
        try {
            while (b.hasRemaining()) position += ch.write(b, position);
        } catch (IOException e) {
            throw file.failure(e);
        }
    }

    @Override
    public void close() throws IOException {
        file.close();
    }
}
