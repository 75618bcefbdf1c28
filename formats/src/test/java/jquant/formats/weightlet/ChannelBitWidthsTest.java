package jquant.formats.weightlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Random;
import org.junit.jupiter.api.Test;

class ChannelBitWidthsTest {

    @Test
    void codesAreThreeBitsLittleEndianFirstChannelLowest() {
        // [1, 8, 3] -> codes 0, 7, 2 -> 0 | 7<<3 | 2<<6 = 0xB8, bit 8 = 0.
        assertThat(ChannelBitWidths.encode(new int[] {1, 8, 3})).containsExactly((byte) 0xB8, (byte) 0x00);
        // [8, 8, 8] -> 9 ones.
        assertThat(ChannelBitWidths.encode(new int[] {8, 8, 8})).containsExactly((byte) 0xFF, (byte) 0x01);
    }

    @Test
    void roundTripsRandomWidths() {
        Random random = new Random(3);
        for (int channels = 1; channels < 40; channels++) {
            int[] bits = random.ints(channels, 1, 9).toArray();
            byte[] table = ChannelBitWidths.encode(bits);
            assertThat(table).hasSize((3 * channels + 7) / 8);
            assertThat(ChannelBitWidths.decode(table, channels)).containsExactly(bits);
        }
    }

    @Test
    void rejectsBadInput() {
        assertThatThrownBy(() -> ChannelBitWidths.encode(new int[] {0})).hasMessageContaining("bit width 0");
        assertThatThrownBy(() -> ChannelBitWidths.decode(new byte[1], 3)).hasMessageContaining("3 channels need 2");
    }
}
