package jquant.formats;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.Ptq1Block;
import jquant.formats.quant.Q2_KBlock;
import jquant.formats.quant.Q3_KBlock;
import jquant.formats.quant.Q4_0Block;
import jquant.formats.quant.Q4_1Block;
import jquant.formats.quant.Q4_KBlock;
import jquant.formats.quant.Q5_0Block;
import jquant.formats.quant.Q5_1Block;
import jquant.formats.quant.Q5_KBlock;
import jquant.formats.quant.Q6_KBlock;
import jquant.formats.quant.Q8_0Block;
import jquant.formats.quant.Q8_KBlock;
import jquant.formats.quant.T2pBlock;
import jquant.formats.quant.Tq1Block;
import jquant.formats.quant.Tq2Block;

/**
 * Scalar reference decoding of a stored element type to float32, registered by {@link DType}: each
 * decoder is the format's definition written as a loop (the block formats' own {@code dequantize} in
 * {@code jquant.formats.quant}, which does not know this type); SIMD kernels elsewhere are tested
 * against these.
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
        return type == DType.T2P ? (src, dst, off, n) -> T2pBlock.dequantize(src, dst, off, n, rowLength) : of(type);
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
            case Q8_0 -> Q8_0Block::dequantize;
            case Q4_0 -> Q4_0Block::dequantize;
            case Q4_1 -> Q4_1Block::dequantize;
            case Q5_0 -> Q5_0Block::dequantize;
            case Q5_1 -> Q5_1Block::dequantize;
            case Q2_K -> Q2_KBlock::dequantize;
            case Q3_K -> Q3_KBlock::dequantize;
            case Q4_K -> Q4_KBlock::dequantize;
            case Q5_K -> Q5_KBlock::dequantize;
            case Q6_K -> Q6_KBlock::dequantize;
            case Q8_K -> Q8_KBlock::dequantize;
            case TQ1_0 -> Tq1Block::dequantize;
            case TQ2_0 -> Tq2Block::dequantize;
            case PQ2_0 -> Pq2Block::dequantize;
            case PTQ1_0 -> Ptq1Block::dequantize;
            case Q8_1, IQ2_XXS, IQ2_XS, IQ3_XXS, IQ1_S, IQ4_NL, IQ3_S, IQ2_S, IQ4_XS, I16, I32, I64, F64, IQ1_M, MXFP4 ->
                    throw new UnsupportedOperationException(
                            "jquant has no decoder for ggml type " + type + " (id " + type.ggmlId() + ")");
        };
    }
}
