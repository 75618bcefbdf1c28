package jquant.formats.quant;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** Byte access shared by the block decoders: fp16/fp32 scales and bytes, little-endian, unaligned. */
final class Blocks {
    private static final ValueLayout.OfShort HALF = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private Blocks() {}

    static float half(MemorySegment src, long offset) {
        return Float.float16ToFloat(src.get(HALF, offset));
    }

    static float f32(MemorySegment src, long offset) {
        return src.get(FLOAT, offset);
    }

    static int unsignedByte(MemorySegment src, long offset) {
        return Byte.toUnsignedInt(src.get(ValueLayout.JAVA_BYTE, offset));
    }

    static byte signedByte(MemorySegment src, long offset) {
        return src.get(ValueLayout.JAVA_BYTE, offset);
    }

    /** Number of whole blocks in {@code count} elements; rejects a partial block. */
    static int blocks(int count, int blockSize, String format) {
        if (count % blockSize != 0) {
            throw new IllegalArgumentException(format + " decodes whole blocks of " + blockSize + " elements, asked for " + count);
        }
        return count / blockSize;
    }
}
