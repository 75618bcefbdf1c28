package jquant.formats.gguf;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import jquant.formats.CheckpointException;
import jquant.formats.MappedFile;
import jquant.formats.DType;
import jquant.formats.Tensor;

/**
 * A GGUF file (version 2 or 3, little-endian), memory-mapped; tensors are slices of the mapping.
 *
 * <pre>
 * "GGUF" | u32 version | u64 tensor_count | u64 kv_count
 * kv_count × { string key | u32 value_type | value }          string = u64 length + UTF-8 bytes
 *                                                              array  = u32 elem_type + u64 count + elems
 * tensor_count × { string name | u32 n_dims | n_dims × u64 ne (innermost first) | u32 ggml_type | u64 offset }
 * zero padding to general.alignment (default 32)
 * data section: tensor bytes at their offsets, each offset a multiple of the alignment
 * </pre>
 *
 * The mapping lives until {@link #close()}; tensors obtained from this file must not be used after it.
 * A file opens whenever every tensor type id is a ggml type (decodable or not); an id ggml does not
 * define is refused.
 */
public final class GgufFile implements AutoCloseable {
    public static final int MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
    public static final String ALIGNMENT_KEY = "general.alignment";
    public static final int DEFAULT_ALIGNMENT = 32;
    /** ggml's GGML_MAX_DIMS. */
    public static final int MAX_DIMS = 4;
    /** 2^60 elements: beyond any real file, and small enough that byte sizes cannot overflow a long. */
    private static final long MAX_ELEMENTS = 1L << 60;

    private final Path path;
    private final MappedFile file;
    private final int version;
    private final SequencedMap<String, GgufValue> metadata;
    private final List<GgufTensorInfo> tensorInfos;
    private final long alignment;
    private final long dataOffset;
    private final SequencedMap<String, Tensor> tensors;

    private GgufFile(Path path, MappedFile file) throws CheckpointException {
        this.path = path;
        this.file = file;
        MemorySegment mapped = file.segment();
        GgufCursor in = new GgufCursor(path, mapped);
        if (mapped.byteSize() < 4 || (int) in.u32("magic") != MAGIC) throw in.error("not a GGUF file (bad magic)");
        long v = in.u32("version");
        if (v != 2 && v != 3) {
            throw in.error("unsupported GGUF version " + v + " (jquant reads versions 2 and 3"
                    + (Integer.reverseBytes((int) v) == 3 || Integer.reverseBytes((int) v) == 2 ? "; this looks like a big-endian file)" : ")"));
        }
        this.version = (int) v;
        long tensorCount = in.count("tensor count", 24);
        long kvCount = in.count("metadata count", 13);

        SequencedMap<String, GgufValue> kv = new LinkedHashMap<>();
        for (long i = 0; i < kvCount; i++) {
            String key = in.string("metadata key");
            GgufType type = in.type("metadata " + key);
            if (kv.put(key, in.value(type, "metadata " + key)) != null) throw in.error("duplicate metadata key " + key);
        }
        this.metadata = Collections.unmodifiableSequencedMap(kv);
        this.alignment = alignmentOf(kv, in);

        List<GgufTensorInfo> infos = new ArrayList<>();
        for (long i = 0; i < tensorCount; i++) infos.add(readTensorInfo(in));
        this.tensorInfos = List.copyOf(infos);

        this.dataOffset = alignUp(in.position(), alignment);
        if (dataOffset > mapped.byteSize() && !infos.isEmpty()) throw in.error("file ends before its data section");
        long dataSize = Math.max(0, mapped.byteSize() - dataOffset);

        SequencedMap<String, Tensor> byName = new LinkedHashMap<>();
        for (GgufTensorInfo t : infos) {
            if (t.offset() % alignment != 0) {
                throw new CheckpointException(path, "tensor " + t.name() + " offset " + t.offset() + " is not a multiple of the alignment " + alignment);
            }
            long size = t.byteSize();
            if (t.offset() < 0 || t.offset() > dataSize || size > dataSize - t.offset()) {
                throw new CheckpointException(path, "tensor " + t.name() + " data [" + t.offset() + ", +" + size
                        + ") lies outside the " + dataSize + "-byte data section");
            }
            Tensor tensor = new Tensor(t.name(), t.shape(), t.type(), mapped.asSlice(dataOffset + t.offset(), size));
            if (byName.put(t.name(), tensor) != null) throw new CheckpointException(path, "duplicate tensor name " + t.name());
        }
        this.tensors = Collections.unmodifiableSequencedMap(byName);
        checkPacking(path, infos, alignment, dataSize);
    }

    /**
     * Tensors must not overlap, and between one tensor's end (its type's byte size) and the next one's
     * start there may be only the alignment padding ggml writes. This catches a tensor table whose
     * offsets or types were edited: a type that takes more bytes overlaps its neighbour or runs past the
     * end, and one that takes at least {@code alignment} bytes fewer leaves a gap. A change between two
     * types of the same size per row (F16 and BF16, for instance) or one shrinking a tensor by less than
     * the alignment cannot be seen in the layout and is not caught. The gap after the last tensor is not
     * checked: writers differ in whether they pad the file's end.
     */
    private static void checkPacking(Path path, List<GgufTensorInfo> infos, long alignment, long dataSize) throws CheckpointException {
        List<GgufTensorInfo> byOffset = new ArrayList<>(infos);
        byOffset.sort(java.util.Comparator.comparingLong(GgufTensorInfo::offset));
        for (int i = 0; i + 1 < byOffset.size(); i++) {
            GgufTensorInfo t = byOffset.get(i);
            GgufTensorInfo next = byOffset.get(i + 1);
            long end = t.offset() + t.byteSize();
            if (end > next.offset()) {
                throw new CheckpointException(path, "tensor " + t.name() + " (" + t.type() + ", bytes " + t.offset() + ".." + end
                        + " of the data section) overlaps tensor " + next.name() + " at " + next.offset());
            }
            if (next.offset() - end >= alignment) {
                throw new CheckpointException(path, "unexplained gap of " + (next.offset() - end) + " bytes after tensor " + t.name()
                        + ": as " + t.type() + " it takes " + t.byteSize() + " bytes but the next tensor starts " + (next.offset() - t.offset())
                        + " bytes after it (a wrong tensor type or offset)");
            }
        }
    }

    /** Maps and parses {@code path}. */
    public static GgufFile open(Path path) throws CheckpointException {
        try {
            return MappedFile.parse(path, file -> new GgufFile(path, file));
        } catch (RuntimeException e) {
            throw new CheckpointException(path, "cannot read as GGUF: " + e.getMessage(), e);
        }
    }

    private static long alignmentOf(SequencedMap<String, GgufValue> kv, GgufCursor in) throws CheckpointException {
        GgufValue a = kv.get(ALIGNMENT_KEY);
        if (a == null) return DEFAULT_ALIGNMENT;
        if (a.type() != GgufType.UINT32) throw in.error(ALIGNMENT_KEY + " must be UINT32, is " + a.type());
        long value = a.asLong();
        if (value == 0 || Long.bitCount(value) != 1) throw in.error(ALIGNMENT_KEY + " " + value + " is not a power of two");
        return value;
    }

    private static GgufTensorInfo readTensorInfo(GgufCursor in) throws CheckpointException {
        String name = in.string("tensor name");
        long nDims = in.u32("dimension count of " + name);
        if (nDims < 1 || nDims > MAX_DIMS) throw in.error("tensor " + name + " has " + nDims + " dimensions (1.." + MAX_DIMS + " allowed)");
        long[] dims = new long[(int) nDims];
        long elements = 1;
        for (int d = 0; d < nDims; d++) {
            dims[d] = in.u64("dimension of " + name);
            if (dims[d] <= 0) throw in.error("tensor " + name + " has dimension " + Long.toUnsignedString(dims[d]));
            if (elements > Long.MAX_VALUE / dims[d]) throw in.error("tensor " + name + " element count overflows");
            elements *= dims[d];
        }
        if (elements > MAX_ELEMENTS) throw in.error("tensor " + name + " has " + elements + " elements, more than any file can hold");
        long typeId = in.u32("type of " + name);
        DType type = typeId > Integer.MAX_VALUE ? null : DType.fromGgmlId((int) typeId);
        if (type == null) throw in.error("tensor " + name + " has ggml type id " + typeId + ", which is not a ggml tensor type");
        if (dims[0] % type.blockSize() != 0) {
            throw in.error("tensor " + name + " row of " + dims[0] + " elements is not a whole number of " + type + " blocks of " + type.blockSize());
        }
        long offset = in.u64("offset of " + name);
        return new GgufTensorInfo(name, dims, type, offset);
    }

    static long alignUp(long n, long alignment) {
        return (n + alignment - 1) / alignment * alignment;
    }

    public Path path() { return path; }

    public int version() { return version; }

    /** Every metadata entry in file order, with its exact type. */
    public SequencedMap<String, GgufValue> metadata() { return metadata; }

    /** The tensor table in file order. */
    public List<GgufTensorInfo> tensorInfos() { return tensorInfos; }

    public long alignment() { return alignment; }

    /** Absolute file offset of the data section. */
    public long dataOffset() { return dataOffset; }

    /**
     * Tensors in file order, with row-major shapes (GGUF dims reversed), as slices of the mapping. A
     * tensor of a ggml type jquant cannot decode is listed with its true size; only asking for its
     * values fails (see {@link DType#isDecodable()}).
     */
    public SequencedMap<String, Tensor> tensors() { return tensors; }

    @Override
    public void close() {
        file.close();
    }
}
