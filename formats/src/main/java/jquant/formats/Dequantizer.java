package jquant.formats;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
/**
 * Scalar reference decoding of a stored element type to float32, as the {@link DType} table registers
 * it: each decoder is the format's definition written as a loop (the block formats' own
 * {@code dequantize} in {@code jquant.formats.quant}, which does not know the table); SIMD kernels
 * elsewhere are tested against these.
 */
public interface Dequantizer {

    /** Decodes {@code count} elements (a whole number of blocks) from {@code src} into {@code dst[offset..]}. */
    void dequantize(MemorySegment src, float[] dst, int offset, int count);

    /**
     * The decoder of {@code type} for rows of {@code rowLength} elements: the same as {@link #of(DType)}
     * except for types whose blocks span several rows ({@link DType#rowGroup()} &gt; 1), whose decoders
     * need the row length and decode whole row groups.
     */
    static Dequantizer of(DType type, int rowLength) {
        DType.RowGroupDecoder group = type.groupDecoder();
        return group == null ? of(type) : (src, dst, off, n) -> group.dequantize(src, dst, off, n, rowLength);
    }

    ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * The decoder of {@code type}.
     *
     * @throws UnsupportedOperationException for a type that is not {@link DType#isDecodable() decodable}
     */
    static Dequantizer of(DType type) {
        if (type.groupDecoder() != null) {
            throw new UnsupportedOperationException(type + " interleaves " + type.rowGroup()
                    + " rows per block: its decoder needs the row length (Dequantizer.of(type, rowLength))");
        }
        if (type.decoder() == null) {
            throw new UnsupportedOperationException("jquant has no decoder for ggml type " + type + " (id " + type.ggmlId() + ")");
        }
        return type.decoder();
    }
}
