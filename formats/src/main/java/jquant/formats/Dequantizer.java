package jquant.formats;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jquant.formats.quant.PQ2_0Dequantizer;
import jquant.formats.quant.PTQ1_0Dequantizer;
import jquant.formats.quant.Q2_KDequantizer;
import jquant.formats.quant.Q3_KDequantizer;
import jquant.formats.quant.Q4_0Dequantizer;
import jquant.formats.quant.Q4_1Dequantizer;
import jquant.formats.quant.Q4_KDequantizer;
import jquant.formats.quant.Q5_0Dequantizer;
import jquant.formats.quant.Q5_1Dequantizer;
import jquant.formats.quant.Q5_KDequantizer;
import jquant.formats.quant.Q6_KDequantizer;
import jquant.formats.quant.Q8_0Dequantizer;
import jquant.formats.quant.Q8_KDequantizer;
import jquant.formats.quant.T2PDequantizer;
import jquant.formats.quant.TQ1_0Dequantizer;
import jquant.formats.quant.TQ2_0Dequantizer;

/**
 * Scalar reference decoding of a stored element type to float32. Each implementation is the
 * format's definition written as a loop; SIMD kernels elsewhere are tested against these.
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
        return type == DType.T2P ? new T2PDequantizer(rowLength) : of(type);
    }

    ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * The decoder of {@code type}.
     *
     * @throws UnsupportedOperationException for a type that is not {@link DType#isDecodable() decodable}
     */
    static Dequantizer of(DType type) {
        return switch (type) {
            case T2P -> throw new UnsupportedOperationException(
                    "T2P interleaves 4 rows per block: its decoder needs the row length (Dequantizer.of(type, rowLength))");
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
            case Q8_0 -> new Q8_0Dequantizer();
            case Q4_0 -> new Q4_0Dequantizer();
            case Q4_1 -> new Q4_1Dequantizer();
            case Q5_0 -> new Q5_0Dequantizer();
            case Q5_1 -> new Q5_1Dequantizer();
            case Q2_K -> new Q2_KDequantizer();
            case Q3_K -> new Q3_KDequantizer();
            case Q4_K -> new Q4_KDequantizer();
            case Q5_K -> new Q5_KDequantizer();
            case Q6_K -> new Q6_KDequantizer();
            case Q8_K -> new Q8_KDequantizer();
            case TQ1_0 -> new TQ1_0Dequantizer();
            case TQ2_0 -> new TQ2_0Dequantizer();
            case PQ2_0 -> new PQ2_0Dequantizer();
            case PTQ1_0 -> new PTQ1_0Dequantizer();
            case Q8_1, IQ2_XXS, IQ2_XS, IQ3_XXS, IQ1_S, IQ4_NL, IQ3_S, IQ2_S, IQ4_XS, I16, I32, I64, F64, IQ1_M, MXFP4 ->
                    throw new UnsupportedOperationException(
                            "jquant has no decoder for ggml type " + type + " (id " + type.ggmlId() + ")");
        };
    }
}
