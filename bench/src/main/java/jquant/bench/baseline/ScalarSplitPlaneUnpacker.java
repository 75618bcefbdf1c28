package jquant.bench.baseline;

import static jquant.formats.weightlet.WeightletLayout.GROUP_WEIGHTS;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import jquant.formats.weightlet.ChannelUnpacker;
import jquant.formats.weightlet.WeightletLayout;

/** Reference decoder of {@link SplitPlanePacker}: one weight at a time. */
public final class ScalarSplitPlaneUnpacker implements ChannelUnpacker {

    public static final ScalarSplitPlaneUnpacker INSTANCE = new ScalarSplitPlaneUnpacker();

    private ScalarSplitPlaneUnpacker() {}

    @Override
    public void unpackChannel(MemorySegment src, long srcOffset, int bits, int length, byte[] dst, int dstOffset) {
        ChannelUnpacker.checkChannel(src, srcOffset, SplitPlanePacker.INSTANCE.channelBytes(bits, length), length, dst.length,
                dstOffset);
        for (int i = 0; i < length; i++) {
            long group = srcOffset + (long) (i / GROUP_WEIGHTS) * WeightletLayout.groupBytes(bits);
            int w = i % GROUP_WEIGHTS;
            int field = 0;
            for (int p = 0; p < WeightletLayout.planeCount(bits); p++) {
                int width = WeightletLayout.planeWidth(bits, p);
                long at = group + WeightletLayout.planeByteOffset(bits, p) + SplitPlanePacker.byteInPlane(width, w);
                int part = ((src.get(ValueLayout.JAVA_BYTE, at) & 0xFF) >>> SplitPlanePacker.slotShift(width, w))
                        & ((1 << width) - 1);
                field |= part << WeightletLayout.planeShift(bits, p);
            }
            dst[dstOffset + i] = WeightletLayout.toInt8(field, bits);
        }
    }
}
