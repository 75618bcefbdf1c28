package jquant.formats.weightlet;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * A weight tensor of {@code channels} output channels × {@code length} weights, each channel packed
 * with its own bit width, channels back to back in {@code data} (channel c at {@link #channelOffset}).
 * The file writer prepends {@link ChannelBitWidths#encode(int[])} of {@link #bits()}.
 */
public record PackedTensor(int channels, int length, int[] bits, long[] channelOffsets, MemorySegment data) {

    public PackedTensor {
        if (channels <= 0 || length <= 0) {
            throw new IllegalArgumentException("tensor shape " + channels + "×" + length + " must be positive");
        }
        if (bits.length != channels || channelOffsets.length != channels + 1) {
            throw new IllegalArgumentException(channels + " channels but " + bits.length + " bit widths and "
                    + channelOffsets.length + " offsets");
        }
        bits = bits.clone();
        channelOffsets = channelOffsets.clone();
        if (channelOffsets[channels] != data.byteSize()) {
            throw new IllegalArgumentException("channels end at byte " + channelOffsets[channels] + ", data has "
                    + data.byteSize());
        }
    }

    /**
     * Packs a row-major [channels, length] array of unsigned fields, channel c with {@code bits[c]}
     * bits, in the format of {@code packer}. Data is off-heap, 64-byte aligned.
     */
    public static PackedTensor pack(ChannelPacker packer, byte[] fields, int channels, int length, int[] bits) {
        Objects.requireNonNull(packer);
        if (bits.length != channels) {
            throw new IllegalArgumentException(channels + " channels but " + bits.length + " bit widths");
        }
        if ((long) channels * length != fields.length) {
            throw new IllegalArgumentException(fields.length + " fields for a " + channels + "×" + length + " tensor");
        }
        long[] offsets = new long[channels + 1];
        for (int c = 0; c < channels; c++) offsets[c + 1] = offsets[c] + packer.channelBytes(bits[c], length);
        MemorySegment data = Arena.ofAuto().allocate(offsets[channels], 64);
        for (int c = 0; c < channels; c++) {
            packer.packChannel(fields, c * length, bits[c], length, data, offsets[c]);
        }
        return new PackedTensor(channels, length, bits, offsets, data);
    }

    @Override
    public int[] bits() { return bits.clone(); }

    @Override
    public long[] channelOffsets() { return channelOffsets.clone(); }

    public int bits(int channel) { return bits[channel]; }

    public long channelOffset(int channel) { return channelOffsets[channel]; }

    /** Packed bytes of all channels (without the bit-width table). */
    public long byteSize() { return data.byteSize(); }
}
