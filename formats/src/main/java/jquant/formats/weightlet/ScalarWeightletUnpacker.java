package jquant.formats.weightlet;

import static jquant.formats.weightlet.WeightletLayout.GROUP_WEIGHTS;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The reference weightlet decoder: one weight at a time, straight from the {@link WeightletLayout}
 * formulas. It defines what {@link VectorWeightletUnpacker} must produce.
 */
public final class ScalarWeightletUnpacker implements ChannelUnpacker {

    public static final ScalarWeightletUnpacker INSTANCE = new ScalarWeightletUnpacker();

    private ScalarWeightletUnpacker() {}

    /** The B-bit field of weight {@code i} of the channel of {@code length} weights that starts at {@code src[srcOffset]}. */
    public static int field(MemorySegment src, long srcOffset, int bits, int length, int i) {
        int g = i / GROUP_WEIGHTS;
        long group = srcOffset + (long) g * WeightletLayout.groupBytes(bits);   // the groups before it are whole
        int stripes = WeightletLayout.groupStripes(length, g);
        int w = i % GROUP_WEIGHTS;
        int field = 0;
        for (int p = 0; p < WeightletLayout.planeCount(bits); p++) {
            int width = WeightletLayout.planeWidth(bits, p);
            long at = group + WeightletLayout.planeByteOffset(bits, p, stripes) + WeightletLayout.byteInPlane(width, w);
            int part = ((src.get(ValueLayout.JAVA_BYTE, at) & 0xFF) >>> WeightletLayout.slotShift(width, w))
                    & ((1 << width) - 1);
            field |= part << WeightletLayout.planeShift(bits, p);
        }
        return field;
    }

    @Override
    public void unpackChannel(MemorySegment src, long srcOffset, int bits, int length, byte[] dst, int dstOffset) {
        ChannelUnpacker.checkChannel(src, srcOffset, WeightletLayout.channelBytes(bits, length), length, dst.length,
                dstOffset);
        for (int i = 0; i < length; i++) {
            dst[dstOffset + i] = WeightletLayout.toInt8(field(src, srcOffset, bits, length, i), bits);
        }
    }

    /** Unpacks and dequantizes: {@code dst[dstOffset + i] = int8_i · scale}. */
    public void unpackChannel(MemorySegment src, long srcOffset, int bits, int length, float scale, float[] dst,
                              int dstOffset) {
        ChannelUnpacker.checkChannel(src, srcOffset, WeightletLayout.channelBytes(bits, length), length, dst.length,
                dstOffset);
        for (int i = 0; i < length; i++) {
            dst[dstOffset + i] = WeightletLayout.toInt8(field(src, srcOffset, bits, length, i), bits) * scale;
        }
    }
}
