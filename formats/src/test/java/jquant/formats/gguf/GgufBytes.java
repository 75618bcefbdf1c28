package jquant.formats.gguf;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/** Builds GGUF bytes by hand, field by field, so tests can craft exactly the malformed file they need. */
final class GgufBytes {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    private GgufBytes put(int bytes, long v) {
        ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v);
        out.write(b.array(), 0, bytes);
        return this;
    }

    GgufBytes u8(long v) { return put(1, v); }
    GgufBytes u32(long v) { return put(4, v); }
    GgufBytes u64(long v) { return put(8, v); }
    GgufBytes f32(float v) { return put(4, Float.floatToRawIntBits(v)); }

    GgufBytes string(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        u64(b.length);
        out.write(b, 0, b.length);
        return this;
    }

    GgufBytes header(long version, long tensors, long kvs) {
        return u32(GgufFile.MAGIC).u32(version).u64(tensors).u64(kvs);
    }

    /** A tensor table entry. */
    GgufBytes tensor(String name, long[] dims, int type, long offset) {
        string(name).u32(dims.length);
        for (long d : dims) u64(d);
        return u32(type).u64(offset);
    }

    GgufBytes padTo(int alignment) {
        while (out.size() % alignment != 0) out.write(0);
        return this;
    }

    GgufBytes zeros(int n) {
        out.write(new byte[n], 0, n);
        return this;
    }

    byte[] bytes() { return out.toByteArray(); }
}
