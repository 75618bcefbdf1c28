package jquant.formats.jqw;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.formats.CheckpointException;
import jquant.formats.FileFormat;
import jquant.formats.JsonRecords;
import jquant.formats.MappedFile;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A jquant packed file opened for reading: memory-mapped, header and metadata validated, and every
 * layer's CRC-32C checked on open, so a corrupted file fails to load with the layer named.
 */
public final class JqwFile implements AutoCloseable {
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Path path;
    private final int version;
    private final MappedFile file;
    private final ObjectNode metadata;
    private final List<JqwLayer> layers;
    private final Map<String, JqwTensor> tensors = new LinkedHashMap<>();

    private JqwFile(Path path, int version, MappedFile file, ObjectNode metadata, List<JqwLayer> layers) {
        this.path = path;
        this.version = version;
        this.file = file;
        this.metadata = metadata;
        this.layers = layers;
        for (JqwLayer l : layers) for (JqwTensor t : l.tensors()) tensors.put(t.name(), t);
    }

    /** True if {@code head} starts with the packed-file magic. */
    public static boolean looksLike(MemorySegment head) {
        return head.byteSize() >= JqwHeader.MAGIC.length
                && Arrays.equals(head.asSlice(0, JqwHeader.MAGIC.length).toArray(ValueLayout.JAVA_BYTE), JqwHeader.MAGIC);
    }

    public static JqwFile open(Path path) throws CheckpointException {
        return open(path, true);
    }

    /**
     * Opens a file whose header, metadata and layer directory are valid but whose layer checksums are
     * not checked, for a verifier that compares every byte itself and names the first wrong tensor and
     * channel (a layer checksum only names the layer); it checks {@link #layerChecksumMatches} after.
     * A loader that pages layers in checks each with {@link #checkLayerChecksum} as it goes.
     */
    public static JqwFile openWithoutLayerChecksums(Path path) throws CheckpointException {
        return open(path, false);
    }

    private static JqwFile open(Path path, boolean checkLayers) throws CheckpointException {
        return MappedFile.parse(path, file -> read(path, file, checkLayers));
    }

    /** The layer directory of the metadata ({@link JqwWriter#finish}). */
    @JsonIgnoreProperties(ignoreUnknown = true)
    record LayerDirectory(@JsonProperty(required = true) List<JqwLayer> layers) {}

    private static JqwFile read(Path path, MappedFile file, boolean checkLayers) throws CheckpointException {
        try {
            return read(path, file.segment(), file, checkLayers);
        } catch (IllegalArgumentException e) {   // the FileFormat checks
            throw new CheckpointException(path, e.getMessage(), e);
        }
    }

    private static JqwFile read(Path path, MemorySegment seg, MappedFile file, boolean checkLayers) throws CheckpointException {
        long size = seg.byteSize();
        if (size < JqwHeader.SIZE || !looksLike(seg)) throw JqwHeader.FORMAT.notThisFormat("bad magic or too short");
        int version = JqwHeader.FORMAT.checkVersion(Integer.toUnsignedLong(seg.get(I32, JqwHeader.OFF_VERSION)));
        if (seg.get(I32, JqwHeader.OFF_HEADER_SIZE) != JqwHeader.SIZE) throw new CheckpointException(path, "bad header size");
        for (long off : new long[]{JqwHeader.OFF_META_CRC + 4, 48, 52, 56, 60}) {
            if (seg.get(I32, off) != 0) throw new CheckpointException(path, "reserved header bytes at " + off + " are not zero");
        }
        long fileLength = seg.get(I64, JqwHeader.OFF_FILE_LENGTH);
        if (fileLength != size) throw new CheckpointException(path, "file is " + size + " bytes but its header says " + fileLength + " (truncated or appended to)");
        long metaOffset = seg.get(I64, JqwHeader.OFF_META_OFFSET);
        long metaLength = seg.get(I64, JqwHeader.OFF_META_LENGTH);
        if (metaOffset < JqwHeader.SIZE || metaLength <= 0 || metaLength > Integer.MAX_VALUE || metaOffset + metaLength != size) {
            throw new CheckpointException(path, "metadata range " + metaOffset + "+" + metaLength + " is outside the file");
        }
        MemorySegment meta = seg.asSlice(metaOffset, metaLength);
        FileFormat.checkChecksum("the metadata", Integer.toUnsignedLong(seg.get(I32, JqwHeader.OFF_META_CRC)), FileFormat.crc32c(meta));
        ObjectNode root;
        List<JqwLayer> layers;
        try {
            JsonNode node = JsonRecords.MAPPER.readTree(new String(meta.toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8));
            if (!(node instanceof ObjectNode o)) throw new CheckpointException(path, "metadata is not a JSON object");
            root = o;
        } catch (JsonProcessingException e) {
            throw new CheckpointException(path, "metadata is not valid: " + e.getOriginalMessage());
        }
        layers = JsonRecords.convert("metadata", root, LayerDirectory.class).layers();
        if (layers.isEmpty()) throw new CheckpointException(path, "no layers in the layer directory");
        long prevEnd = JqwHeader.SIZE;
        for (JqwLayer l : layers) {
            if (l.offset() != prevEnd || l.length() < 0 || l.offset() + l.length() > metaOffset) {
                throw new CheckpointException(path, "layer " + l.name() + " range " + l.offset() + "+" + l.length() + " does not follow the previous layer inside the data");
            }
            prevEnd = l.offset() + l.length();
            for (JqwTensor t : l.tensors()) {
                for (Map.Entry<String, long[]> p : t.parts().entrySet()) {
                    long[] r = p.getValue();
                    if (r.length != 2 || r[0] < l.offset() || r[1] < 0 || r[0] + r[1] > l.offset() + l.length()) {
                        throw new CheckpointException(path, "tensor " + t.name() + " part " + p.getKey() + " lies outside layer " + l.name());
                    }
                }
            }
            if (checkLayers) checkLayerChecksum(path, seg, l);
        }
        if (prevEnd != metaOffset) throw new CheckpointException(path, "layers end at " + prevEnd + " but metadata starts at " + metaOffset);
        return new JqwFile(path, version, file, root, layers);
    }

    private static void checkLayerChecksum(Path path, MemorySegment seg, JqwLayer layer) throws CheckpointException {
        try {
            FileFormat.checkChecksum("layer " + layer.name(), layer.crc32c(), FileFormat.crc32c(seg.asSlice(layer.offset(), layer.length())));
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(path, e.getMessage(), e);
        }
    }

    public Path path() { return path; }

    /** The format version the file was written in. */
    public int version() { return version; }

    /** Recomputes one layer's CRC-32C and compares it with the directory's. */
    public boolean layerChecksumMatches(JqwLayer layer) {
        return FileFormat.crc32c(file.segment().asSlice(layer.offset(), layer.length())) == layer.crc32c();
    }

    /** Recomputes one layer's CRC-32C; a mismatch is a {@link CheckpointException} naming the file and the layer. */
    public void checkLayerChecksum(JqwLayer layer) throws CheckpointException {
        checkLayerChecksum(path, file.segment(), layer);
    }

    /** The whole metadata object (model, tokenizer, quantization, layers, …). */
    public ObjectNode metadata() { return metadata; }

    /**
     * The metadata object {@code name} as a {@code type} ({@link JsonRecords}); a file without it, or with
     * one of another shape, is a {@link CheckpointException} naming the file, the section and the field.
     */
    public <T> T section(String name, Class<T> type) throws CheckpointException {
        JsonNode node = metadata.get(name);
        if (node == null || !node.isObject()) throw new CheckpointException(path, "metadata has no '" + name + "' object");
        try {
            return JsonRecords.convert("metadata " + name, node, type);
        } catch (IllegalArgumentException e) {
            throw new CheckpointException(path, e.getMessage(), e);
        }
    }

    public List<JqwLayer> layers() { return layers; }

    /** Tensors by name, in file order. */
    public Map<String, JqwTensor> tensors() { return tensors; }

    /** The bytes of one part of a tensor, as a slice of the mapping. */
    public MemorySegment part(JqwTensor t, String part) {
        long[] r = t.part(part);
        return file.segment().asSlice(r[0], r[1]);
    }

    public long size() { return file.size(); }

    /** Drops the file's pages from the process's resident memory (re-read when used): a layer-by-layer reader calls it after each layer. */
    public void unload() {
        if (file.segment().isMapped()) file.segment().unload();
    }

    @Override
    public void close() {
        file.close();
    }
}
