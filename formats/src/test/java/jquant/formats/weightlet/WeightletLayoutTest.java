package jquant.formats.weightlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** Byte and bit positions worked out by hand from the WeightletLayout diagram, not from the code. */
class WeightletLayoutTest {

    private static byte[] packedGroup(int bits, int[] weights, int[] fields) {
        byte[] channel = new byte[128];
        for (int k = 0; k < weights.length; k++) channel[weights[k]] = (byte) fields[k];
        PackedTensor t = PackedTensor.pack(WeightletPacker.INSTANCE, channel, 1, 128, new int[] {bits});
        return t.data().toArray(ValueLayout.JAVA_BYTE);
    }

    private static void assertOnlyNonZeroBytes(byte[] bytes, int[] at, int[] values) {
        byte[] expected = new byte[bytes.length];
        for (int k = 0; k < at.length; k++) expected[at[k]] = (byte) values[k];
        assertThat(bytes).containsExactly(expected);
    }

    @Test
    void threeBitGroupPutsTheMsbInTheOneBitPlaneAndTheLowBitsInTheTwoBitPlane() {
        // w0 = 0b101: stripe 0, j 0 -> MSB at byte 0 bit 7; low bits 01 at 2-bit block 0 slot 0 (bits 7..6) of byte 16.
        // w17 = 0b110: stripe 1, j 1 -> MSB at byte 1 bit 6; low 10 at block 0 slot 1 (bits 5..4) of byte 17.
        // w127 = 0b011: stripe 7, j 15 -> MSB 0; low 11 at 2-bit block 1 slot 3 (bits 1..0) of byte 16+16+15 = 47.
        byte[] bytes = packedGroup(3, new int[] {0, 17, 127}, new int[] {0b101, 0b110, 0b011});
        assertThat(bytes).hasSize(48);
        assertOnlyNonZeroBytes(bytes, new int[] {0, 16, 1, 17, 47}, new int[] {0x80, 0x40, 0x40, 0x20, 0x03});
    }

    @Test
    void sevenBitGroupUsesOnePlusTwoPlusFourPlanes() {
        // w100 = 0b1011010: stripe 6, j 4. Bit 6 = 1 -> 1-bit plane byte 4, slot 6 = bit 1 -> 0x02.
        // Bits 5..4 = 01 -> 2-bit plane (byte 16), block 1 (stripes 4..7), slot 2 = bits 3..2, byte 36 -> 0x04.
        // Bits 3..0 = 1010 -> 4-bit plane (byte 48), block 3 (stripes 6,7), slot 0 = high nibble, byte 100 -> 0xA0.
        byte[] bytes = packedGroup(7, new int[] {100}, new int[] {0b1011010});
        assertThat(bytes).hasSize(112);
        assertOnlyNonZeroBytes(bytes, new int[] {4, 36, 100}, new int[] {0x02, 0x04, 0xA0});
    }

    @Test
    void eightBitGroupIsTwoNibblePlanesHighFirst() {
        // w37 = 0xA7: stripe 2, j 5 -> block 1 slot 0 (high nibble) of byte 16+5 = 21 in each plane.
        // w48 = 0x3C: stripe 3, j 0 -> block 1 slot 1 (low nibble) of byte 16.
        byte[] bytes = packedGroup(8, new int[] {37, 48}, new int[] {0xA7, 0x3C});
        assertThat(bytes).hasSize(128);
        assertOnlyNonZeroBytes(bytes, new int[] {21, 64 + 21, 16, 64 + 16}, new int[] {0xA0, 0x70, 0x03, 0x0C});
    }

    @Test
    void oneBitGroupIsEightStripesOfOneBlock() {
        // w16·t + j at byte j, bit 7 - t: w18 -> byte 2 bit 6; w113 -> byte 1 bit 0.
        byte[] bytes = packedGroup(1, new int[] {18, 113}, new int[] {1, 1});
        assertThat(bytes).hasSize(16);
        assertOnlyNonZeroBytes(bytes, new int[] {2, 1}, new int[] {0x40, 0x01});
    }

    @Test
    void handExampleUnpacksToTheMidRiseGrid() {
        byte[] bytes = packedGroup(3, new int[] {0, 17, 127}, new int[] {0b101, 0b110, 0b011});
        for (ChannelUnpacker unpacker : new ChannelUnpacker[] {ScalarWeightletUnpacker.INSTANCE,
                VectorWeightletUnpacker.STRIPE_KERNEL, VectorWeightletUnpacker.HALF_GROUP_KERNEL}) {
            byte[] out = new byte[128];
            unpacker.unpackChannel(bytes, 0, 3, 128, out, 0);
            assertThat(out[0]).isEqualTo((byte) 3);
            assertThat(out[17]).isEqualTo((byte) 5);
            assertThat(out[127]).isEqualTo((byte) -1);
            assertThat(out[1]).isEqualTo((byte) -7);
        }
    }

    @Test
    void fieldsMapOneToOneOntoASymmetricIncreasingInt8Grid() {
        for (int bits = 1; bits <= 8; bits++) {
            int maxField = WeightletLayout.maxField(bits);
            assertThat(maxField).isEqualTo(bits == 8 ? 254 : (1 << bits) - 1);
            int previous = Integer.MIN_VALUE;
            for (int f = 0; f <= maxField; f++) {
                int v = WeightletLayout.toInt8(f, bits);
                assertThat(v).isBetween(-127, 127).isGreaterThan(previous);
                assertThat(WeightletLayout.toInt8(maxField - f, bits)).isEqualTo((byte) -v);
                assertThat(WeightletLayout.toField(v, bits)).isEqualTo(f);
                if (bits < 8) assertThat(v & 1).as("mid-rise levels are odd").isEqualTo(1);
                previous = v;
            }
        }
        assertThat(WeightletLayout.toInt8(0, 8)).isEqualTo((byte) -127);
        assertThat(WeightletLayout.toInt8(127, 8)).isZero();
        assertThat(WeightletLayout.toInt8(254, 8)).isEqualTo((byte) 127);
        assertThat(WeightletLayout.toInt8(0, 1)).isEqualTo((byte) -1);
        assertThat(WeightletLayout.toInt8(1, 1)).isEqualTo((byte) 1);
        assertThat(WeightletLayout.toInt8(3, 2)).isEqualTo((byte) 3);
        assertThat(WeightletLayout.toInt8(7, 3)).isEqualTo((byte) 7);
        assertThat(WeightletLayout.toInt8(0, 7)).isEqualTo((byte) -127);
        assertThatThrownBy(() -> WeightletLayout.toInt8(255, 8)).hasMessageContaining("255 is not a valid 8-bit field");
        assertThatThrownBy(() -> WeightletLayout.toInt8(8, 3)).hasMessageContaining("not a valid 3-bit field");
        assertThatThrownBy(() -> WeightletLayout.toField(4, 3)).hasMessageContaining("not on the 3-bit grid");
        assertThatThrownBy(() -> WeightletLayout.toField(-9, 3)).hasMessageContaining("not on the 3-bit grid");
        assertThatThrownBy(() -> WeightletLayout.toField(-128, 8)).hasMessageContaining("not on the 8-bit grid");
        assertThatThrownBy(() -> WeightletLayout.maxField(9)).hasMessageContaining("outside 1..8");
    }

    @Test
    void planeTableCoversEveryWidthWithoutWaste() {
        for (int bits = 1; bits <= 8; bits++) {
            int sum = 0;
            for (int p = 0; p < WeightletLayout.planeCount(bits); p++) {
                int w = WeightletLayout.planeWidth(bits, p);
                assertThat(w).isIn(1, 2, 4);
                assertThat(WeightletLayout.planeByteOffset(bits, p)).isEqualTo(16 * sum);
                sum += w;
                assertThat(WeightletLayout.planeShift(bits, p)).isEqualTo(bits - sum);
            }
            assertThat(sum).isEqualTo(bits);
        }
    }

    @Test
    void aShortLastGroupKeepsOnlyTheBlocksItsStripesFill() {
        // 64 weights = 4 stripes: 1-bit plane 1 block (slots 0..3), 2-bit plane 1 block, 4-bit plane 2 of its 4
        int[] expected = {0, 16, 16, 32, 32, 48, 48, 64, 64};
        for (int bits = 1; bits <= 8; bits++) assertThat(WeightletLayout.channelBytes(bits, 64)).as("%d bits", bits).isEqualTo(expected[bits]);
        // 172 = a whole group and 44 weights (3 stripes): at 4 bits 64 + 2 blocks, at 7 bits 112 + (1 + 1 + 2) blocks
        assertThat(WeightletLayout.channelBytes(4, 172)).isEqualTo(64 + 32);
        assertThat(WeightletLayout.channelBytes(7, 172)).isEqualTo(112 + 64);
        assertThat(WeightletLayout.channelBytes(5, 250)).isEqualTo(2 * 80);   // 122 weights: 8 stripes, a whole group
        // 7 bits, 64 weights: the 2-bit plane starts at 16, the 4-bit plane at 32 (whole group: 16 and 48).
        // w63 = 0b1011011: stripe 3, j 15 -> MSB 1 at byte 15 bit 4; 01 at 2-bit block 0 slot 3, byte 16+15 bits 1..0;
        // 1011 at 4-bit block 1 slot 1, byte 32+16+15 = 63 bits 3..0.
        byte[] channel = new byte[64];
        channel[63] = 0b1011011;
        byte[] bytes = PackedTensor.pack(WeightletPacker.INSTANCE, channel, 1, 64, new int[] {7}).data().toArray(ValueLayout.JAVA_BYTE);
        assertThat(bytes).hasSize(64);
        assertOnlyNonZeroBytes(bytes, new int[] {15, 31, 63}, new int[] {0x10, 0x01, 0x0B});
        byte[] back = new byte[64];
        VectorWeightletUnpacker.INSTANCE.unpackChannel(MemorySegment.ofArray(bytes), 0, 7, 64, back, 0);
        assertThat(back[63]).isEqualTo(WeightletLayout.toInt8(0b1011011, 7));
        assertThat(back[0]).isEqualTo(WeightletLayout.toInt8(0, 7));
    }

    @Test
    void rejectsUnsupportedWidths() {
        assertThatThrownBy(() -> WeightletLayout.groupBytes(0)).hasMessageContaining("bit width 0");
        assertThatThrownBy(() -> WeightletLayout.groupBytes(9)).hasMessageContaining("bit width 9");
    }
}
