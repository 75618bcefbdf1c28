package jquant.formats.weightlet;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Round trips over generated inputs (jqwik): the bit-width table and weightlet pack → unpack, both unpackers. */
class WeightletPropertyTest {

    @Property
    void bitWidthTablesRoundTrip(@ForAll @Size(max = 300) List<@IntRange(min = 1, max = 8) Integer> widths) {
        int[] bits = widths.stream().mapToInt(Integer::intValue).toArray();
        byte[] table = ChannelBitWidths.encode(bits);
        assertThat(table).hasSize(ChannelBitWidths.encodedBytes(bits.length));
        assertThat(ChannelBitWidths.decode(table, bits.length)).containsExactly(bits);
    }

    /** A channel: its width and fields in [0, maxField(width)]. */
    record Channel(int bits, byte[] fields) {}

    @Provide
    Arbitrary<Channel> channels() {
        return Combinators.combine(Arbitraries.integers().between(1, 8), Arbitraries.integers().between(1, 700))
                .flatAs((bits, length) -> Arbitraries.integers().between(0, WeightletLayout.maxField(bits))
                        .array(int[].class).ofSize(length)
                        .map(f -> {
                            byte[] b = new byte[f.length];
                            for (int i = 0; i < f.length; i++) b[i] = (byte) f[i];
                            return new Channel(bits, b);
                        }));
    }

    @Property
    void everyChannelUnpacksToItsInt8LevelsWithEitherUnpacker(@ForAll("channels") Channel c) {
        int length = c.fields().length;
        PackedTensor t = PackedTensor.pack(WeightletPacker.INSTANCE, c.fields(), 1, length, new int[] {c.bits()});
        byte[] expected = new byte[length];
        for (int i = 0; i < length; i++) expected[i] = WeightletLayout.toInt8(c.fields()[i] & 0xFF, c.bits());
        assertThat(t.byteSize()).isEqualTo(WeightletLayout.channelBytes(c.bits(), length));
        assertThat(ScalarWeightletUnpacker.INSTANCE.unpackTensor(t)).containsExactly(expected);
        assertThat(VectorWeightletUnpacker.INSTANCE.unpackTensor(t)).containsExactly(expected);
    }
}
