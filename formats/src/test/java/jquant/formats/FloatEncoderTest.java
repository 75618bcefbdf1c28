package jquant.formats;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Every encoder by DType in one loop, and Q8_0 / BF16 against transcriptions of ggml's reference code. */
class FloatEncoderTest {

    /** Random values, exact ties at q = ±0.5, zeros, a block of zeros, extremes. */
    static float[] values(int n) {
        SplittableRandom r = new SplittableRandom(3);
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = (float) (r.nextGaussian() * 0.05);
        for (int i = 32; i < 64; i++) v[i] = 0f;
        v[64] = 127f;
        v[65] = 0.5f;
        v[66] = -0.5f;
        v[67] = 1.5f;
        v[68] = -126.5f;
        v[100] = 1e-30f;
        v[101] = -3.4e38f;
        return v;
    }

    static Stream<DType> encodableTypes() {
        return Arrays.stream(DType.values()).filter(DType::isEncodable);
    }

    @Test
    void theTypesConvertWritesAreTheEncodableOnes() {
        assertThat(encodableTypes()).containsExactly(DType.F32, DType.F16, DType.BF16, DType.Q8_0);
        assertThatThrownBy(() -> FloatEncoder.of(DType.Q4_0))
                .hasMessage("jquant does not encode floats as Q4_0 (F32, F16, BF16, Q8_0)");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("encodableTypes")
    void decodesBackWithinItsRounding(DType type) {
        float[] v = values(32 * 9);
        ByteBuffer b = ByteBuffer.allocate((int) type.byteSize(v.length, v.length)).order(ByteOrder.LITTLE_ENDIAN);
        FloatEncoder.of(type).encode(v, 0, v.length, b);
        assertThat(b.remaining()).isZero();
        float[] back = new float[v.length];
        Dequantizer.of(type).dequantize(MemorySegment.ofArray(b.array()), back, 0, back.length);
        for (int i = 0; i < v.length; i++) {
            if (type == DType.F32) assertThat(back[i]).isEqualTo(v[i]);
            if (type == DType.F16) assertThat(back[i]).isEqualTo(Float.float16ToFloat(Float.floatToFloat16(v[i])));
        }
        // re-encoding the decoded values of a float type gives the same bytes
        if (type != DType.Q8_0) {
            ByteBuffer again = ByteBuffer.allocate(b.capacity()).order(ByteOrder.LITTLE_ENDIAN);
            FloatEncoder.of(type).encode(back, 0, back.length, again);
            assertThat(again.array()).isEqualTo(b.array());
        }
    }

    /** ggml's quantize_row_q8_0_ref, transcribed: d = amax/127, id = 1/d, qs = roundf(x·id) (halves away from zero). */
    @Test
    void q8_0IsGgmlsReferenceQuantizer() {
        float[] x = values(32 * 9);
        ByteBuffer ours = ByteBuffer.allocate(34 * 9).order(ByteOrder.LITTLE_ENDIAN);
        FloatEncoder.of(DType.Q8_0).encode(x, 0, x.length, ours);
        ByteBuffer ref = ByteBuffer.allocate(34 * 9).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 9; i++) {
            float amax = 0f;
            for (int j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[i * 32 + j]));
            float d = amax / ((1 << 7) - 1);
            float id = d != 0 ? 1.0f / d : 0.0f;
            ref.putShort(Float.floatToFloat16(d));
            for (int j = 0; j < 32; j++) {
                float x0 = x[i * 32 + j] * id;
                ref.put((byte) (x0 >= 0 ? Math.floor(x0 + 0.5) : -Math.floor(-x0 + 0.5)));   // roundf, in double: exact for floats
            }
        }
        assertThat(ours.array()).isEqualTo(ref.array());
        // a tie is rounded away from zero: block 2 holds 127 (its amax) and ±0.5, which scale to ±0.5 exactly
        assertThat(ours.get(2 * 34 + 2 + 1)).isEqualTo((byte) 1);
        assertThat(ours.get(2 * 34 + 2 + 2)).isEqualTo((byte) -1);
    }

    /** gguf-py's __quantize_bf16_array / ggml_compute_fp32_to_bf16: round to nearest even, NaN forced quiet. */
    @Test
    void bf16RoundsToNearestEvenAndKeepsNaNQuiet() {
        assertThat(FloatEncoder.toBf16(Float.intBitsToFloat(0x3f808000))).isEqualTo((short) 0x3f80);   // tie, even stays
        assertThat(FloatEncoder.toBf16(Float.intBitsToFloat(0x3f818000))).isEqualTo((short) 0x3f82);   // tie, odd rounds up
        assertThat(FloatEncoder.toBf16(Float.intBitsToFloat(0x3f808001))).isEqualTo((short) 0x3f81);
        assertThat(FloatEncoder.toBf16(Float.intBitsToFloat(0x7f800001))).isEqualTo((short) 0x7fc0);   // signalling NaN made quiet
        assertThat(FloatEncoder.toBf16(Float.POSITIVE_INFINITY)).isEqualTo((short) 0x7f80);
    }
}
