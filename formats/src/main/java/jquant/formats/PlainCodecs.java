package jquant.formats;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;

/**
 * The decoders and encoders of the plain types (one element per block), as the {@link DType} table
 * names them; the block types' live in their codec classes ({@code jquant.formats.quant}). The encoders'
 * rounding is the reference writer's ({@link FloatEncoder}).
 */
final class PlainCodecs {
    private PlainCodecs() {}

    static void decodeF32(MemorySegment src, float[] dst, int offset, int count) {
        MemorySegment.copy(src, Dequantizer.F32, 0, dst, offset, count);
    }

    static void decodeF16(MemorySegment src, float[] dst, int offset, int count) {
        for (int i = 0; i < count; i++) dst[offset + i] = Float.float16ToFloat(src.get(Dequantizer.I16, 2L * i));
    }

    static void decodeBf16(MemorySegment src, float[] dst, int offset, int count) {
        for (int i = 0; i < count; i++) dst[offset + i] = Float.intBitsToFloat(src.get(Dequantizer.I16, 2L * i) << 16);
    }

    static void decodeI8(MemorySegment src, float[] dst, int offset, int count) {
        for (int i = 0; i < count; i++) dst[offset + i] = src.get(ValueLayout.JAVA_BYTE, i);
    }

    static void decodeU8(MemorySegment src, float[] dst, int offset, int count) {
        for (int i = 0; i < count; i++) dst[offset + i] = Byte.toUnsignedInt(src.get(ValueLayout.JAVA_BYTE, i));
    }

    static void encodeF32(float[] src, int offset, int count, ByteBuffer dst) {
        for (int i = 0; i < count; i++) dst.putFloat(src[offset + i]);
    }

    static void encodeF16(float[] src, int offset, int count, ByteBuffer dst) {
        for (int i = 0; i < count; i++) dst.putShort(Float.floatToFloat16(src[offset + i]));
    }

    static void encodeBf16(float[] src, int offset, int count, ByteBuffer dst) {
        for (int i = 0; i < count; i++) dst.putShort(FloatEncoder.toBf16(src[offset + i]));
    }
}
