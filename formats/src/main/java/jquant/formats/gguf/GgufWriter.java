package jquant.formats.gguf;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.HashSet;
import java.util.SequencedMap;
import java.util.Set;
import jquant.formats.AtomicOutput;
import jquant.formats.DType;
import jquant.formats.Tensor;

/**
 * Writes a GGUF version 3 file (layout on {@link GgufFile}): the metadata in the given order with the
 * given types, then the tensor table and the tensor data, each tensor starting on a multiple of
 * {@code general.alignment} (32 if absent) and zero-padded to the next one, as ggml writes it.
 *
 * <p>The file is written through an {@link AtomicOutput}, so readers never see a half-written file.
 * {@link #writePending} streams: each tensor's bytes are produced only when the writer reaches it.
 */
public final class GgufWriter {
    public static final int VERSION = 3;
    /** Bytes copied per write call; keeps each ByteBuffer view of a large mapped tensor below 2 GB. */
    private static final long COPY_CHUNK = 1L << 26;

    private GgufWriter() {}

    /** Bytes of one tensor, produced when the writer reaches it, so that only one tensor is in memory at a time. */
    @FunctionalInterface
    public interface TensorBytes {
        /** Writes the tensor's bytes, exactly its table size, to {@code out}. */
        void writeTo(WritableByteChannel out) throws IOException;
    }

    /**
     * One entry of the tensor table, whose data is computed only when written.
     *
     * @param shape row-major, outermost first (reversed into GGUF dims)
     */
    public record PendingTensor(String name, long[] shape, DType dtype, TensorBytes bytes) {
        public PendingTensor {
            shape = shape.clone();
        }

        @Override
        public long[] shape() { return shape.clone(); }

        public long byteSize() {
            long n = 1;
            for (long d : shape) n = Math.multiplyExact(n, d);
            return dtype.byteSize(n, shape[shape.length - 1]);
        }

        /** A tensor already in memory or mapped, written as it is. */
        public static PendingTensor of(Tensor t) {
            return new PendingTensor(t.name(), t.shape(), t.dtype(), out -> {
                for (long at = 0; at < t.byteSize(); at += COPY_CHUNK) {
                    writeFully(out, t.data().asSlice(at, Math.min(COPY_CHUNK, t.byteSize() - at)).asByteBuffer());
                }
            });
        }
    }

    /**
     * Writes {@code tensors} (GGUF names = {@link Tensor#name()}; row-major shapes are reversed into GGUF
     * dims) with {@code metadata} to {@code target}.
     *
     * @throws IllegalArgumentException for a DType GGUF has no id for, duplicate tensor names, or a
     *                                  non-UINT32 / non-power-of-two {@code general.alignment}
     */
    public static void write(Path target, SequencedMap<String, GgufValue> metadata, Collection<Tensor> tensors) throws IOException {
        writePending(target, metadata, tensors.stream().map(PendingTensor::of).toList());
    }

    /**
     * Writes the header, then asks each tensor for its bytes in turn, checking that it gives exactly its
     * table size.
     *
     * @throws IllegalStateException when a tensor writes another number of bytes than its table entry says
     */
    public static void writePending(Path target, SequencedMap<String, GgufValue> metadata, List<PendingTensor> tensors) throws IOException {
        try (Stream out = new Stream(target, metadata, tensors)) {
            for (PendingTensor t : tensors) out.write(t.bytes());
            out.finish(metadata);
        }
    }

    /**
     * A GGUF file written tensor by tensor when its metadata is known only at the end (a stats file whose
     * per-layer values come as each layer is calibrated): the header goes out first with placeholder
     * metadata of the final size, the tensors follow in table order, and {@link #finish} writes the final
     * metadata over the placeholder. Placeholder and final metadata must encode to the same number of
     * bytes (the same keys and types, arrays of the same lengths, strings of the same byte length). The
     * file appears at its target only when finished ({@link AtomicOutput}); closed unfinished, it never does.
     */
    public static final class Stream implements AutoCloseable {
        private final Path target;
        private final List<PendingTensor> table;
        private final long alignment;
        private final int headerBytes;
        private final AtomicOutput file;
        private int next;
        private long position;
        private boolean finished;

        public Stream(Path target, SequencedMap<String, GgufValue> placeholder, List<PendingTensor> table) throws IOException {
            this.target = target;
            this.table = List.copyOf(table);
            this.alignment = alignment(placeholder);
            byte[] header = header(placeholder, this.table, alignment);
            this.headerBytes = header.length;
            this.file = AtomicOutput.open(target);
            try {
                writeFully(file.channel(), ByteBuffer.wrap(header));
            } catch (IOException e) {
                file.close();
                throw file.failure(e);
            }
            this.position = header.length;
        }

        /** The next tensor of the table, by the table entry's {@link PendingTensor#bytes} or these bytes. */
        public void write(TensorBytes bytes) throws IOException {
            if (next == table.size()) throw new IllegalStateException(target + ": every tensor of the table is written");
            PendingTensor t = table.get(next++);
            FileChannel out = file.channel();
            try {
                bytes.writeTo(out);
                long written = out.position() - position;
                if (written != t.byteSize()) {
                    throw new IllegalStateException(target + ": tensor " + t.name() + " wrote " + written + " bytes, its table entry says " + t.byteSize());
                }
                position += written;
                long padded = GgufFile.alignUp(position, alignment);
                writeFully(out, ByteBuffer.allocate((int) (padded - position)));
                position = padded;
            } catch (IOException e) {
                throw file.failure(e);
            }
        }

        /** Writes {@code metadata} over the placeholder and puts the file in place. */
        public void finish(SequencedMap<String, GgufValue> metadata) throws IOException {
            if (next != table.size()) throw new IllegalStateException(target + ": " + (table.size() - next) + " tensors of the table are not written");
            byte[] header = header(metadata, table, alignment);
            if (header.length != headerBytes) {
                throw new IllegalStateException(target + ": the final metadata takes " + header.length + " header bytes, the placeholder " + headerBytes);
            }
            try {
                FileChannel out = file.channel();
                out.position(0);
                writeFully(out, ByteBuffer.wrap(header));
                out.force(true);
            } catch (IOException e) {
                throw file.failure(e);
            }
            file.commit();
            finished = true;
        }

        @Override
        public void close() throws IOException {
            if (!finished) file.close();
        }
    }

    private static long alignment(SequencedMap<String, GgufValue> metadata) {
        GgufValue a = metadata.get(GgufFile.ALIGNMENT_KEY);
        if (a == null) return GgufFile.DEFAULT_ALIGNMENT;
        if (a.type() != GgufType.UINT32 || a.asLong() == 0 || Long.bitCount(a.asLong()) != 1) {
            throw new IllegalArgumentException(GgufFile.ALIGNMENT_KEY + " must be a UINT32 power of two, got " + a);
        }
        return a.asLong();
    }

    /** Everything before the data section, padded to the alignment. */
    private static byte[] header(SequencedMap<String, GgufValue> metadata, List<PendingTensor> tensors, long alignment) {
        Sink out = new Sink();
        out.u32(GgufFile.MAGIC);
        out.u32(VERSION);
        out.u64(tensors.size());
        out.u64(metadata.size());
        metadata.forEach((key, value) -> {
            out.string(key);
            out.u32(value.type().id());
            out.value(value);
        });
        Set<String> names = new HashSet<>();
        long offset = 0;
        for (PendingTensor t : tensors) {
            if (!names.add(t.name())) throw new IllegalArgumentException("duplicate tensor name " + t.name());
            if (t.dtype().ggmlId() < 0) throw new IllegalArgumentException("GGUF has no type id for " + t.dtype() + " (tensor " + t.name() + ")");
            long[] shape = t.shape();
            out.string(t.name());
            out.u32(shape.length);
            for (int d = shape.length - 1; d >= 0; d--) out.u64(shape[d]);
            out.u32(t.dtype().ggmlId());
            out.u64(offset);
            offset = GgufFile.alignUp(offset + t.byteSize(), alignment);
        }
        out.pad(alignment);
        return out.toByteArray();
    }

    /** Writes all of {@code buffer}. */
    public static void writeFully(WritableByteChannel out, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) out.write(buffer);
    }

    /** Little-endian primitive encoder for the header. */
    private static final class Sink extends ByteArrayOutputStream {
        private final ByteBuffer scratch = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);

        private void put(int bytes) {
            write(scratch.array(), 0, bytes);
            scratch.clear();
        }

        void u8(long v) { scratch.put((byte) v); put(1); }
        void u16(long v) { scratch.putShort((short) v); put(2); }
        void u32(long v) { scratch.putInt((int) v); put(4); }
        void u64(long v) { scratch.putLong(v); put(8); }

        void string(String s) {
            byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
            u64(utf8.length);
            write(utf8, 0, utf8.length);
        }

        void value(GgufValue v) {
            switch (v.type()) {
                case UINT8, INT8 -> u8(v.asLong());
                case UINT16, INT16 -> u16(v.asLong());
                case UINT32, INT32 -> u32(v.asLong());
                case UINT64, INT64 -> u64(v.asLong());
                case FLOAT32 -> u32(Float.floatToRawIntBits((Float) v.value()));
                case FLOAT64 -> u64(Double.doubleToRawLongBits((Double) v.value()));
                case BOOL -> u8(v.asBoolean() ? 1 : 0);
                case STRING -> string(v.asString());
                case ARRAY -> {
                    GgufValue.GgufArray array = v.asArray();
                    u32(array.elementType().id());
                    u64(array.elements().size());
                    for (GgufValue e : array.elements()) value(e);
                }
            }
        }

        void pad(long alignment) {
            long padded = GgufFile.alignUp(size(), alignment);
            while (size() < padded) write(0);
        }
    }
}
