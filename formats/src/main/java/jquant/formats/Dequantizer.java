package jquant.formats;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Scalar reference decoding of a stored element type to float32. Each implementation is the
 * format's definition written as a loop; SIMD kernels elsewhere are tested against these.
 */
public interface Dequantizer {

    /** Decodes {@code count} elements (a whole number of blocks) from {@code src} into {@code dst[offset..]}. */
    void dequantize(MemorySegment src, float[] dst, int offset, int count);

    ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    static Dequantizer of(DType type) {
        return switch (type) {
            case F32 -> (src, dst, off, n) -> MemorySegment.copy(src, F32, 0, dst, off, n);
            case F16 -> (src, dst, off, n) -> {
                for (int i = 0; i < n; i++) dst[off + i] = Float.float16ToFloat(src.get(I16, 2L * i));
            };
            case BF16 -> (src, dst, off, n) -> {
                for (int i = 0; i < n; i++) dst[off + i] = Float.intBitsToFloat(src.get(I16, 2L * i) << 16);
            };
            case I8 -> (src, dst, off, n) -> {
                for (int i = 0; i < n; i++) dst[off + i] = src.get(ValueLayout.JAVA_BYTE, i);
            };
            case U8 -> (src, dst, off, n) -> {
                for (int i = 0; i < n; i++) dst[off + i] = Byte.toUnsignedInt(src.get(ValueLayout.JAVA_BYTE, i));
            };
            default -> throw new UnsupportedOperationException("no dequantizer for " + type + " yet");
        };
    }
}
