package jquant.formats;

import java.nio.ByteBuffer;
import jquant.formats.quant.Q8_0Block;

/**
 * Encoding of float32 values into a stored element type, as the {@link DType} table registers it beside
 * {@link Dequantizer}: the types {@code jquant convert} writes. Each is the rounding the reference
 * writer uses, so that a file jquant writes holds the bytes llama.cpp's tools would write:
 * <ul>
 *   <li>F16: round to nearest even (numpy's {@code astype(float16)}, ggml's fp32→fp16);</li>
 *   <li>BF16: round to nearest even, NaN kept quiet (gguf-py's {@code __quantize_bf16_array}, ggml's
 *       {@code ggml_compute_fp32_to_bf16});</li>
 *   <li>Q8_0: ggml's {@code quantize_row_q8_0_ref} ({@link Q8_0Block#quantize}).</li>
 * </ul>
 * Every value decodes back through {@link Dequantizer#of} (F32, F16 and BF16 sources re-encoded to their
 * own type are unchanged).
 */
@FunctionalInterface
public interface FloatEncoder {

    /** Encodes {@code count} values (whole blocks) from {@code src[offset..]} into {@code dst}, which must be little-endian. */
    void encode(float[] src, int offset, int count, ByteBuffer dst);

    /**
     * The encoder of {@code type}.
     *
     * @throws UnsupportedOperationException for a type jquant does not encode floats into
     */
    static FloatEncoder of(DType type) {
        if (!type.isEncodable()) {
            throw new UnsupportedOperationException("jquant does not encode floats as " + type + " ("
                    + java.util.Arrays.stream(DType.values()).filter(DType::isEncodable).map(DType::name)
                            .collect(java.util.stream.Collectors.joining(", ")) + ")");
        }
        return type.encoder();
    }

    /** float32 → bfloat16 bits: round to nearest even; a NaN stays a NaN, made quiet. */
    static short toBf16(float x) {
        int bits = Float.floatToRawIntBits(x);
        if ((bits & 0x7fffffff) > 0x7f800000) return (short) ((bits >>> 16) | 64);
        return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
    }
}
