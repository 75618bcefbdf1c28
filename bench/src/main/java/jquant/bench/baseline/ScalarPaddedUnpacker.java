package jquant.bench.baseline;

import static jquant.formats.weightlet.WeightletLayout.GROUP_WEIGHTS;

import jquant.formats.weightlet.WeightletLayout;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import jquant.formats.weightlet.ChannelUnpacker;

/** Reference decoder of {@link PaddedInt4Int8Packer}: one weight at a time. */
public final class ScalarPaddedUnpacker implements ChannelUnpacker {

    public static final ScalarPaddedUnpacker INSTANCE = new ScalarPaddedUnpacker();

    private ScalarPaddedUnpacker() {}

    @Override
    public void unpackChannel(MemorySegment src, long srcOffset, int bits, int length, byte[] dst, int dstOffset) {
        ChannelUnpacker.checkChannel(src, srcOffset, PaddedInt4Int8Packer.INSTANCE.channelBytes(bits, length), length,
                dst.length, dstOffset);
        int groupBytes = PaddedInt4Int8Packer.groupBytes(bits);
        for (int i = 0; i < length; i++) {
            long group = srcOffset + (long) (i / GROUP_WEIGHTS) * groupBytes;
            int w = i % GROUP_WEIGHTS;
            if (bits > PaddedInt4Int8Packer.NIBBLE_MAX_BITS) {
                dst[dstOffset + i] = src.get(ValueLayout.JAVA_BYTE, group + w);
            } else {
                int half = GROUP_WEIGHTS / 2;
                int b = src.get(ValueLayout.JAVA_BYTE, group + w % half) & 0xFF;
                int nibble = (w < half ? b : b >>> 4) & 0x0F;
                dst[dstOffset + i] = WeightletLayout.toInt8(nibble, bits);
            }
        }
    }
}
