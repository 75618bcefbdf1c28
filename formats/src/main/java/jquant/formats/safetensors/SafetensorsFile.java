package jquant.formats.safetensors;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import jquant.formats.CheckpointException;
import jquant.formats.MappedFile;
import jquant.formats.DType;
import jquant.formats.Tensor;

/**
 * One {@code .safetensors} file, memory-mapped (so files beyond 2 GB work); tensors are slices of the
 * mapping.
 *
 * <pre>
 * u64 N (little-endian) | N bytes of UTF-8 JSON header | data
 * header = { "__metadata__": {string: string}?,
 *            "&lt;name&gt;": { "dtype": "F32", "shape": [d0, d1, …], "data_offsets": [begin, end] }, … }
 * </pre>
 *
 * Offsets are relative to the start of the data; tensors must lie inside it, not overlap, and span
 * exactly {@code product(shape) × sizeof(dtype)} bytes. Dtypes read: F32, F16, BF16, I8, U8.
 */
public final class SafetensorsFile implements AutoCloseable {
    /** The reference implementation's limit on header size. */
    public static final long MAX_HEADER_BYTES = 100L << 20;
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Path path;
    private final MappedFile file;
    private final SequencedMap<String, Tensor> tensors;
    private final Map<String, String> metadata;

    private record Entry(String name, DType dtype, long[] shape, long begin, long end) {}

    private SafetensorsFile(Path path, MappedFile file) throws CheckpointException {
        this.path = path;
        this.file = file;
        MemorySegment mapped = file.segment();
        if (mapped.byteSize() < 8) throw new CheckpointException(path, "truncated: " + mapped.byteSize() + " bytes, no header length");
        long headerLength = mapped.get(U64, 0);
        if (headerLength < 0 || headerLength > mapped.byteSize() - 8) {
            throw new CheckpointException(path, "header length " + Long.toUnsignedString(headerLength) + " exceeds the file's " + (mapped.byteSize() - 8) + " remaining bytes");
        }
        if (headerLength > MAX_HEADER_BYTES) throw new CheckpointException(path, "header of " + headerLength + " bytes exceeds " + MAX_HEADER_BYTES);
        String json = new String(mapped.asSlice(8, headerLength).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
        JsonNode header;
        try {
            header = new ObjectMapper().readTree(json);
        } catch (IOException e) {
            throw new CheckpointException(path, "header is not valid JSON: " + e.getMessage(), e);
        }
        if (header == null || !header.isObject()) throw new CheckpointException(path, "header is not a JSON object");
        MemorySegment data = mapped.asSlice(8 + headerLength);

        Map<String, String> meta = new LinkedHashMap<>();
        List<Entry> entries = new ArrayList<>();
        for (Map.Entry<String, JsonNode> field : header.properties()) {
            if (field.getKey().equals("__metadata__")) {
                if (!field.getValue().isObject()) throw new CheckpointException(path, "__metadata__ is not an object");
                field.getValue().properties().forEach(m -> meta.put(m.getKey(), m.getValue().asText()));
            } else {
                entries.add(entry(field.getKey(), field.getValue()));
            }
        }
        entries.sort(Comparator.comparingLong(Entry::begin).thenComparingLong(Entry::end));
        long previousEnd = 0;
        String previous = null;
        SequencedMap<String, Tensor> byName = new LinkedHashMap<>();
        for (Entry e : entries) {
            if (e.end() > data.byteSize()) {
                throw new CheckpointException(path, "tensor " + e.name() + " data [" + e.begin() + ", " + e.end() + ") lies beyond the " + data.byteSize() + " data bytes");
            }
            if (e.begin() < previousEnd) throw new CheckpointException(path, "tensor " + e.name() + " overlaps tensor " + previous);
            byName.put(e.name(), new Tensor(e.name(), e.shape(), e.dtype(), data.asSlice(e.begin(), e.end() - e.begin())));
            previousEnd = e.end();
            previous = e.name();
        }
        this.tensors = Collections.unmodifiableSequencedMap(byName);
        this.metadata = Collections.unmodifiableMap(meta);
    }

    /** Maps and validates {@code path}. */
    public static SafetensorsFile open(Path path) throws CheckpointException {
        try {
            return MappedFile.parse(path, file -> new SafetensorsFile(path, file));
        } catch (RuntimeException e) {
            throw new CheckpointException(path, "cannot read as safetensors: " + e.getMessage(), e);
        }
    }

    private Entry entry(String name, JsonNode node) throws CheckpointException {
        if (!node.isObject()) throw new CheckpointException(path, "tensor " + name + " entry is not an object");
        DType dtype = dtype(name, node.path("dtype"));
        JsonNode shapeNode = node.path("shape");
        JsonNode offsets = node.path("data_offsets");
        if (!shapeNode.isArray()) throw new CheckpointException(path, "tensor " + name + " has no shape array");
        if (!offsets.isArray() || offsets.size() != 2 || !offsets.get(0).canConvertToLong() || !offsets.get(1).canConvertToLong()) {
            throw new CheckpointException(path, "tensor " + name + " data_offsets must be [begin, end]");
        }
        long[] shape = new long[shapeNode.size()];
        long elements = 1;
        for (int i = 0; i < shape.length; i++) {
            JsonNode d = shapeNode.get(i);
            if (!d.canConvertToLong() || d.asLong() <= 0) throw new CheckpointException(path, "tensor " + name + " has dimension " + d + " (must be a positive integer)");
            shape[i] = d.asLong();
            if (elements > Long.MAX_VALUE / 8 / shape[i]) throw new CheckpointException(path, "tensor " + name + " shape " + shapeNode + " is too large");
            elements *= shape[i];
        }
        long begin = offsets.get(0).asLong();
        long end = offsets.get(1).asLong();
        if (begin < 0 || end < begin) throw new CheckpointException(path, "tensor " + name + " has data_offsets [" + begin + ", " + end + "]");
        long expected = elements * dtype.blockBytes();
        if (end - begin != expected) {
            throw new CheckpointException(path, "tensor " + name + " spans " + (end - begin) + " bytes but shape " + shapeNode + " × " + dtype + " needs " + expected);
        }
        return new Entry(name, dtype, shape, begin, end);
    }

    private DType dtype(String name, JsonNode node) throws CheckpointException {
        return switch (node.asText()) {
            case "F32" -> DType.F32;
            case "F16" -> DType.F16;
            case "BF16" -> DType.BF16;
            case "I8" -> DType.I8;
            case "U8" -> DType.U8;
            default -> throw new CheckpointException(path, "tensor " + name + " has dtype " + node + ", which jquant does not read (F32, F16, BF16, I8, U8)");
        };
    }

    public Path path() { return path; }

    /** Tensors in data-offset order. */
    public SequencedMap<String, Tensor> tensors() { return tensors; }

    /** The header's {@code __metadata__} strings. */
    public Map<String, String> metadata() { return metadata; }

    @Override
    public void close() { file.close(); }
}
