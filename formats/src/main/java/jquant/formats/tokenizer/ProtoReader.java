package jquant.formats.tokenizer;

import java.nio.charset.StandardCharsets;

/**
 * The few protobuf wire-format primitives a SentencePiece model needs: tags, varints, fixed 32/64-bit
 * values and length-delimited fields, with unknown fields skipped by wire type. Every read is
 * bounds-checked; malformed input throws {@link IllegalArgumentException} naming the problem.
 */
final class ProtoReader {
    static final int VARINT = 0;
    static final int FIXED64 = 1;
    static final int LENGTH_DELIMITED = 2;
    static final int FIXED32 = 5;

    private final byte[] bytes;
    private int position;
    private final int end;

    ProtoReader(byte[] bytes, int start, int end) {
        this.bytes = bytes;
        this.position = start;
        this.end = end;
    }

    boolean hasMore() { return position < end; }

    /** The next field's tag: field number {@code << 3 | wire type}. */
    int tag() {
        long tag = varint();
        if (tag >>> 3 == 0 || tag > Integer.MAX_VALUE) throw new IllegalArgumentException("invalid protobuf tag " + tag + " at byte " + position);
        return (int) tag;
    }

    long varint() {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (position >= end) throw new IllegalArgumentException("protobuf varint runs past the end of its message");
            byte b = bytes[position++];
            value |= (long) (b & 0x7F) << shift;
            if (b >= 0) return value;
        }
        throw new IllegalArgumentException("protobuf varint longer than 10 bytes at byte " + position);
    }

    int fixed32() {
        need(4);
        int v = (bytes[position] & 0xFF) | (bytes[position + 1] & 0xFF) << 8 | (bytes[position + 2] & 0xFF) << 16 | (bytes[position + 3] & 0xFF) << 24;
        position += 4;
        return v;
    }

    /** A length-delimited field's body as a reader over just those bytes. */
    ProtoReader message() {
        int length = length();
        ProtoReader sub = new ProtoReader(bytes, position, position + length);
        position += length;
        return sub;
    }

    String string() {
        int length = length();
        String s = new String(bytes, position, length, StandardCharsets.UTF_8);
        position += length;
        return s;
    }

    void skip(int wireType) {
        switch (wireType) {
            case VARINT -> varint();
            case FIXED64 -> { need(8); position += 8; }
            case LENGTH_DELIMITED -> {
                int length = length(); // read before adding: length() itself advances position
                position += length;
            }
            case FIXED32 -> { need(4); position += 4; }
            default -> throw new IllegalArgumentException("unsupported protobuf wire type " + wireType + " at byte " + position);
        }
    }

    private int length() {
        long length = varint();
        if (length < 0 || length > end - position) {
            throw new IllegalArgumentException("protobuf field of " + length + " bytes overruns its message (" + (end - position) + " bytes left)");
        }
        return (int) length;
    }

    private void need(int n) {
        if (end - position < n) throw new IllegalArgumentException("protobuf fixed field runs past the end of its message");
    }
}
