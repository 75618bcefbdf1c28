package jquant.formats.gguf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import jquant.formats.CheckpointException;

/**
 * Reads GGUF's little-endian primitives from a mapped file, checking every length and count against the
 * bytes that remain before it allocates anything, so a corrupt header fails with a message, not an OOM.
 */
final class GgufCursor {
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Real files nest at most two deep; a deeper file is corrupt, and unbounded recursion would overflow the stack. */
    static final int MAX_ARRAY_NESTING = 16;

    private final Path file;
    private final MemorySegment bytes;
    private long position;

    GgufCursor(Path file, MemorySegment bytes) {
        this.file = file;
        this.bytes = bytes;
    }

    long position() { return position; }

    long remaining() { return bytes.byteSize() - position; }

    CheckpointException error(String problem) {
        return new CheckpointException(file, problem + " (at byte " + position + ")");
    }

    private void need(long n, String what) throws CheckpointException {
        if (n < 0 || n > remaining()) {
            throw error("truncated: " + what + " needs " + (n < 0 ? Long.toUnsignedString(n) : n) + " bytes, " + remaining() + " remain");
        }
    }

    int u8(String what) throws CheckpointException {
        need(1, what);
        return Byte.toUnsignedInt(bytes.get(ValueLayout.JAVA_BYTE, position++));
    }

    int u16(String what) throws CheckpointException {
        need(2, what);
        int v = Short.toUnsignedInt(bytes.get(U16, position));
        position += 2;
        return v;
    }

    /** An unsigned 32-bit value as a long. */
    long u32(String what) throws CheckpointException {
        need(4, what);
        long v = Integer.toUnsignedLong(bytes.get(U32, position));
        position += 4;
        return v;
    }

    long u64(String what) throws CheckpointException {
        need(8, what);
        long v = bytes.get(U64, position);
        position += 8;
        return v;
    }

    /** A count that must fit in the rest of the file when each item takes at least {@code minItemBytes}. */
    long count(String what, long minItemBytes) throws CheckpointException {
        long n = u64(what);
        if (n < 0 || (minItemBytes > 0 && n > remaining() / minItemBytes)) {
            throw error("truncated or corrupt: " + what + " " + Long.toUnsignedString(n) + " cannot fit in the " + remaining() + " bytes left");
        }
        return n;
    }

    String string(String what) throws CheckpointException {
        long length = count(what + " length", 1);
        if (length > Integer.MAX_VALUE - 8) throw error(what + " of " + length + " bytes is too long");
        byte[] utf8 = bytes.asSlice(position, length).toArray(ValueLayout.JAVA_BYTE);
        position += length;
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(java.nio.ByteBuffer.wrap(utf8)).toString();
        } catch (CharacterCodingException e) {
            throw error(what + " is not valid UTF-8");
        }
    }

    GgufType type(String what) throws CheckpointException {
        long id = u32(what);
        GgufType t = id > Integer.MAX_VALUE ? null : GgufType.fromId((int) id);
        if (t == null) throw error("unknown GGUF value type id " + id + " for " + what);
        return t;
    }

    GgufValue value(GgufType type, String what) throws CheckpointException {
        return value(type, what, 0);
    }

    private GgufValue value(GgufType type, String what, int depth) throws CheckpointException {
        return switch (type) {
            case UINT8 -> GgufValue.of(type, u8(what));
            case INT8 -> GgufValue.of(type, (byte) u8(what));
            case UINT16 -> GgufValue.of(type, u16(what));
            case INT16 -> GgufValue.of(type, (short) u16(what));
            case UINT32 -> GgufValue.of(type, u32(what));
            case INT32 -> GgufValue.of(type, (int) u32(what));
            case UINT64, INT64 -> GgufValue.of(type, u64(what));
            case FLOAT32 -> {
                need(4, what);
                float f = bytes.get(F32, position);
                position += 4;
                yield GgufValue.float32(f);
            }
            case FLOAT64 -> {
                need(8, what);
                double d = bytes.get(F64, position);
                position += 8;
                yield new GgufValue(type, d);
            }
            case BOOL -> {
                int b = u8(what);
                if (b > 1) throw error(what + " is a BOOL holding " + b);
                yield GgufValue.bool(b == 1);
            }
            case STRING -> GgufValue.string(string(what));
            case ARRAY -> {
                if (depth == MAX_ARRAY_NESTING) throw error(what + " nests arrays more than " + MAX_ARRAY_NESTING + " deep");
                GgufType elementType = type(what + " element type");
                long n = count(what + " element count", elementType.minBytes());
                List<GgufValue> elements = new ArrayList<>((int) Math.min(n, 1 << 16));
                for (long i = 0; i < n; i++) elements.add(value(elementType, what, depth + 1));
                yield GgufValue.array(elementType, elements);
            }
        };
    }
}
