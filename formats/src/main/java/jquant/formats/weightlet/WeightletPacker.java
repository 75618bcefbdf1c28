package jquant.formats.weightlet;

import static jquant.formats.weightlet.WeightletLayout.GROUP_WEIGHTS;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/** Writes channels in the weightlet layout of {@link WeightletLayout}. */
public final class WeightletPacker implements ChannelPacker {

    public static final WeightletPacker INSTANCE = new WeightletPacker();

    private WeightletPacker() {}

    @Override
    public long channelBytes(int bits, int length) {
        return WeightletLayout.channelBytes(bits, length);
    }

    @Override
    public void packChannel(byte[] fields, int fieldsOffset, int bits, int length, MemorySegment dst, long dstOffset) {
        ChannelPacker.checkFields(fields, fieldsOffset, bits, length);
        Objects.checkFromIndexSize(dstOffset, channelBytes(bits, length), dst.byteSize());
        int planes = WeightletLayout.planeCount(bits);
        for (int g = 0; g < WeightletLayout.groups(length); g++) {
            int stripes = WeightletLayout.groupStripes(length, g);
            byte[] group = new byte[WeightletLayout.groupBytes(bits, stripes)];
            int inGroup = Math.min(GROUP_WEIGHTS, length - g * GROUP_WEIGHTS);
            for (int w = 0; w < inGroup; w++) {
                int field = fields[fieldsOffset + g * GROUP_WEIGHTS + w] & 0xFF;
                for (int p = 0; p < planes; p++) {
                    int width = WeightletLayout.planeWidth(bits, p);
                    int part = (field >>> WeightletLayout.planeShift(bits, p)) & ((1 << width) - 1);
                    int at = WeightletLayout.planeByteOffset(bits, p, stripes) + WeightletLayout.byteInPlane(width, w);
                    group[at] |= (byte) (part << WeightletLayout.slotShift(width, w));
                }
            }
            // every group but the last is whole, so group g starts g whole groups in
            MemorySegment.copy(group, 0, dst, ValueLayout.JAVA_BYTE, dstOffset + (long) g * WeightletLayout.groupBytes(bits), group.length);
        }
    }
}
