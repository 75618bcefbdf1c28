package jquant.bench.baseline;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.ValueLayout;
import java.util.Random;
import jquant.formats.weightlet.ChannelPacker;
import jquant.formats.weightlet.ChannelUnpacker;
import jquant.formats.weightlet.PackedTensor;
import jquant.formats.weightlet.WeightletLayout;
import org.junit.jupiter.api.Test;

/** The two Figure-13 baselines: round trip, scalar vs SIMD, sizes, and hand-placed bits. */
class BaselineCodecTest {

    private static final int[] LENGTHS = {1, 15, 17, 127, 128, 129, 172, 300};

    private static void roundTrip(ChannelPacker packer, ChannelUnpacker scalar, ChannelUnpacker vector) {
        Random random = new Random(13);
        for (int bits = 1; bits <= 8; bits++) {
            for (int length : LENGTHS) {
                for (int pattern = 0; pattern < 4; pattern++) {
                    int max = WeightletLayout.maxField(bits);
                    byte[] fields = new byte[3 * length];
                    for (int i = 0; i < fields.length; i++) {
                        fields[i] = (byte) switch (pattern) {
                            case 0 -> random.nextInt(max + 1);
                            case 1 -> 0;
                            case 2 -> max;
                            default -> (i & 1) == 0 ? 0x55 & max : 0xAA & max;
                        };
                    }
                    int[] widths = {bits, bits, bits};
                    PackedTensor t = PackedTensor.pack(packer, fields, 3, length, widths);
                    byte[] expected = new byte[fields.length];
                    for (int i = 0; i < fields.length; i++) expected[i] = WeightletLayout.toInt8(fields[i] & 0xFF, bits);
                    String what = bits + " bits, length " + length + ", pattern " + pattern;
                    assertThat(t.byteSize()).as(what).isEqualTo(3 * packer.channelBytes(bits, length));
                    assertThat(scalar.unpackTensor(t)).as(what).containsExactly(expected);
                    assertThat(vector.unpackTensor(t)).as(what).containsExactly(expected);
                }
            }
        }
    }

    @Test
    void splitPlanesRoundTripAndDecodersAgree() {
        roundTrip(SplitPlanePacker.INSTANCE, ScalarSplitPlaneUnpacker.INSTANCE, VectorSplitPlaneUnpacker.INSTANCE);
    }

    @Test
    void paddedRoundTripAndDecodersAgree() {
        roundTrip(PaddedInt4Int8Packer.INSTANCE, ScalarPaddedUnpacker.INSTANCE, VectorPaddedUnpacker.INSTANCE);
    }

    @Test
    void splitPlanesKeepWeightletSizeButNaturalOrder() {
        // 3 bits: 1-bit plane bytes 0..15, 2-bit plane bytes 16..47, natural order, low slot first.
        // w9 = 0b110: MSB -> byte 9/8 = 1, bit 1 -> 0x02; low 10 -> byte 16 + 9/4 = 18, bits 3..2 -> 0x08.
        byte[] fields = new byte[128];
        fields[9] = 0b110;
        byte[] bytes = PackedTensor.pack(SplitPlanePacker.INSTANCE, fields, 1, 128, new int[] {3}).data()
                .toArray(ValueLayout.JAVA_BYTE);
        byte[] expected = new byte[48];
        expected[1] = 0x02;
        expected[18] = 0x08;
        assertThat(bytes).containsExactly(expected);
    }

    @Test
    void paddedUsesNibblesUpToFourBitsAndBytesAbove() {
        assertThat(PaddedInt4Int8Packer.INSTANCE.channelBytes(3, 300)).isEqualTo(3 * 64);
        assertThat(PaddedInt4Int8Packer.INSTANCE.channelBytes(4, 128)).isEqualTo(64);
        assertThat(PaddedInt4Int8Packer.INSTANCE.channelBytes(5, 129)).isEqualTo(2 * 128);
        // 2 bits: a nibble holds the field; w70 = field 3 in the high half of byte 6, w1 = field 2 in the low half of byte 1.
        byte[] fields = new byte[128];
        fields[70] = 3;
        fields[1] = 2;
        byte[] bytes = PackedTensor.pack(PaddedInt4Int8Packer.INSTANCE, fields, 1, 128, new int[] {2}).data()
                .toArray(ValueLayout.JAVA_BYTE);
        // every other weight is field 0, so bytes are zero except byte 6 = 0x30 and byte 1 = 0x02.
        for (int j = 0; j < 64; j++) assertThat(bytes[j]).as("byte %d", j).isEqualTo((byte) (j == 6 ? 0x30 : j == 1 ? 0x02 : 0));
    }
}
