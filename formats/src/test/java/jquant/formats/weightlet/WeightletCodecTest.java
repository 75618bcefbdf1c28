package jquant.formats.weightlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Packer, scalar reference and SIMD unpacker against each other and against the input fields. */
class WeightletCodecTest {

    static final int[] LENGTHS = {1, 15, 16, 17, 127, 128, 129, 172, 256, 300, 1000};
    /** Both SIMD kernels, whichever this machine's INSTANCE uses. */
    static final VectorWeightletUnpacker[] KERNELS = {VectorWeightletUnpacker.STRIPE_KERNEL,
            VectorWeightletUnpacker.HALF_GROUP_KERNEL};

    private static byte[] expectedInt8(byte[] fields, int[] bits, int length) {
        byte[] out = new byte[fields.length];
        for (int i = 0; i < fields.length; i++) out[i] = WeightletLayout.toInt8(fields[i] & 0xFF, bits[i / length]);
        return out;
    }

    /** Plane widths per bit width, most significant first (the layout's table, written out again). */
    private static final int[][] PLANES = {{}, {1}, {2}, {1, 2}, {4}, {1, 4}, {2, 4}, {1, 2, 4}, {4, 4}};

    /** 16·B bytes a whole group; a short last group of S stripes 16·ceil(S·b/8) bytes a plane of width b. */
    private static long packedBytes(int bits, int length) {
        long bytes = (long) (length / 128) * 16 * bits;
        int stripes = (length % 128 + 15) / 16;
        if (stripes > 0) for (int b : PLANES[bits]) bytes += 16L * ((stripes * b + 7) / 8);
        return bytes;
    }

    @Test
    void everyWidthLengthAndPatternRoundTripsAndBothUnpackersAgree() {
        Random random = new Random(42);
        for (int bits = 1; bits <= 8; bits++) {
            for (int length : LENGTHS) {
                for (FieldPatterns pattern : FieldPatterns.values()) {
                    byte[] fields = pattern.fields(bits, length, random);
                    int[] widths = {bits};
                    PackedTensor t = PackedTensor.pack(WeightletPacker.INSTANCE, fields, 1, length, widths);
                    String what = bits + " bits, length " + length + ", " + pattern;
                    assertThat(t.byteSize()).as(what).isEqualTo(packedBytes(bits, length));
                    byte[] expected = expectedInt8(fields, widths, length);
                    assertThat(ScalarWeightletUnpacker.INSTANCE.unpackTensor(t)).as(what).containsExactly(expected);
                    for (VectorWeightletUnpacker kernel : KERNELS) {
                        assertThat(kernel.unpackTensor(t)).as(what).containsExactly(expected);
                    }
                }
            }
        }
    }

    @Test
    void unpackingWritesOnlyItsRangeOfTheDestination() {
        Random random = new Random(5);
        for (int bits = 1; bits <= 8; bits++) {
            for (int length : LENGTHS) {
                byte[] fields = FieldPatterns.RANDOM.fields(bits, length, random);
                PackedTensor t = PackedTensor.pack(WeightletPacker.INSTANCE, fields, 1, length, new int[] {bits});
                for (ChannelUnpacker u : new ChannelUnpacker[] {ScalarWeightletUnpacker.INSTANCE, KERNELS[0],
                        KERNELS[1]}) {
                    byte[] dst = new byte[length + 40];
                    Arrays.fill(dst, (byte) 0x5A);
                    u.unpackChannel(t.data(), 0, bits, length, dst, 7);
                    assertThat(Arrays.copyOfRange(dst, 7, 7 + length))
                            .containsExactly(expectedInt8(fields, new int[] {bits}, length));
                    for (int i = 0; i < dst.length; i++) {
                        if (i < 7 || i >= 7 + length) assertThat(dst[i]).as("guard byte %d", i).isEqualTo((byte) 0x5A);
                    }
                }
            }
        }
    }

    @Test
    void mixedWidthTensorAgreesAndChannelsAreContiguous() {
        Random random = new Random(7);
        for (int length : new int[] {1, 129, 172, 300, 512}) {
            int channels = 37;
            int[] bits = random.ints(channels, 1, 9).toArray();
            byte[] fields = new byte[channels * length];
            for (int c = 0; c < channels; c++) {
                FieldPatterns pattern = FieldPatterns.values()[c % FieldPatterns.values().length];
                System.arraycopy(pattern.fields(bits[c], length, random), 0, fields, c * length, length);
            }
            PackedTensor t = PackedTensor.pack(WeightletPacker.INSTANCE, fields, channels, length, bits);
            long expectedBytes = 0;
            for (int c = 0; c < channels; c++) {
                assertThat(t.channelOffset(c)).isEqualTo(expectedBytes);
                expectedBytes += packedBytes(bits[c], length);
            }
            assertThat(t.byteSize()).isEqualTo(expectedBytes);
            byte[] expected = expectedInt8(fields, bits, length);
            assertThat(ScalarWeightletUnpacker.INSTANCE.unpackTensor(t)).containsExactly(expected);
            for (VectorWeightletUnpacker kernel : KERNELS) assertThat(kernel.unpackTensor(t)).containsExactly(expected);
        }
    }

    @Test
    void scaledFloatUnpackIsBitExactBetweenScalarAndVector() {
        Random random = new Random(11);
        for (int bits = 1; bits <= 8; bits++) {
            for (int length : LENGTHS) {
                byte[] fields = FieldPatterns.RANDOM.fields(bits, length, random);
                PackedTensor t = PackedTensor.pack(WeightletPacker.INSTANCE, fields, 1, length, new int[] {bits});
                float scale = 0.001f + random.nextFloat();
                float[] scalar = new float[length + 3];
                ScalarWeightletUnpacker.INSTANCE.unpackChannel(t.data(), 0, bits, length, scale, scalar, 3);
                for (VectorWeightletUnpacker kernel : KERNELS) {
                    float[] vector = new float[length + 3];
                    kernel.unpackChannel(t.data(), 0, bits, length, scale, vector, 3);
                    assertThat(vector).containsExactly(scalar);
                }
                for (int i = 0; i < length; i++) {
                    assertThat(scalar[3 + i]).isEqualTo(WeightletLayout.toInt8(fields[i] & 0xFF, bits) * scale);
                }
            }
        }
    }

    @Test
    void rejectsFieldsWiderThanTheChannelWidth() {
        byte[] fields = new byte[10];
        fields[6] = 8;
        assertThatThrownBy(() -> PackedTensor.pack(WeightletPacker.INSTANCE, fields, 1, 10, new int[] {3}))
                .hasMessageContaining("field 8 at index 6 is not a valid 3-bit field (0..7)");
    }

    @Test
    void rejectsTruncatedSourceAndShortDestination() {
        MemorySegment src = MemorySegment.ofArray(new byte[47]);
        assertThatThrownBy(() -> VectorWeightletUnpacker.INSTANCE.unpackChannel(src, 0, 3, 128, new byte[128], 0))
                .isInstanceOf(IndexOutOfBoundsException.class);
        MemorySegment full = MemorySegment.ofArray(new byte[48]);
        assertThatThrownBy(() -> ScalarWeightletUnpacker.INSTANCE.unpackChannel(full, 0, 3, 128, new byte[100], 0))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> VectorWeightletUnpacker.INSTANCE.unpackChannel(full, 0, 9, 128, new byte[128], 0))
                .hasMessageContaining("bit width 9");
    }

    @Test
    void rejectsMismatchedTensorShape() {
        assertThatThrownBy(() -> PackedTensor.pack(WeightletPacker.INSTANCE, new byte[10], 2, 4, new int[] {1, 2}))
                .hasMessageContaining("10 fields for a 2×4 tensor");
        assertThatThrownBy(() -> PackedTensor.pack(WeightletPacker.INSTANCE, new byte[8], 2, 4, new int[] {1}))
                .hasMessageContaining("2 channels but 1 bit widths");
    }
}
