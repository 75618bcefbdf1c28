package jquant.bench.baseline;

import static jquant.formats.weightlet.WeightletLayout.GROUP_WEIGHTS;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;
import jquant.formats.weightlet.ChannelPacker;
import jquant.formats.weightlet.WeightletLayout;

/**
 * Baseline "INT4/INT8 mixed format" (paper §3 and Figure 13): a channel of B ≤ 4 bits is padded to
 * 4-bit nibbles, B > 4 to int8 bytes, so unpacking is trivial but the file grows. Groups of 128 weights
 * as in {@link WeightletLayout} (last one padded with zeros):
 * <pre>
 *   B ≤ 4: 64 bytes per group; byte j (0..63) = | field of w j+64 | field of w j |  (nibbles)
 *   B > 4: 128 bytes per group; byte j = int8 of w j
 * </pre>
 * The int8 value is {@link WeightletLayout#toInt8} of the field, as for weightlets (a nibble holds the
 * field: the 4-bit grid's levels ±1..±15 are not int4 values).
 */
public final class PaddedInt4Int8Packer implements ChannelPacker {

    public static final PaddedInt4Int8Packer INSTANCE = new PaddedInt4Int8Packer();
    /** Widths stored as nibbles; wider ones are stored as int8. */
    public static final int NIBBLE_MAX_BITS = 4;

    private PaddedInt4Int8Packer() {}

    public static int groupBytes(int bits) {
        return WeightletLayout.checkBits(bits) <= NIBBLE_MAX_BITS ? GROUP_WEIGHTS / 2 : GROUP_WEIGHTS;
    }

    @Override
    public long channelBytes(int bits, int length) {
        if (length < 0) throw new IllegalArgumentException("negative channel length " + length);
        return (long) WeightletLayout.groups(length) * groupBytes(bits);
    }

    @Override
    public void packChannel(byte[] fields, int fieldsOffset, int bits, int length, MemorySegment dst, long dstOffset) {
        ChannelPacker.checkFields(fields, fieldsOffset, bits, length);
        Objects.checkFromIndexSize(dstOffset, channelBytes(bits, length), dst.byteSize());
        byte[] group = new byte[groupBytes(bits)];
        for (int g = 0; g < WeightletLayout.groups(length); g++) {
            java.util.Arrays.fill(group, (byte) 0);
            int inGroup = Math.min(GROUP_WEIGHTS, length - g * GROUP_WEIGHTS);
            for (int w = 0; w < inGroup; w++) {
                int field = fields[fieldsOffset + g * GROUP_WEIGHTS + w] & 0xFF;
                if (bits > NIBBLE_MAX_BITS) {
                    group[w] = WeightletLayout.toInt8(field, bits);
                } else {
                    int half = GROUP_WEIGHTS / 2;
                    group[w % half] |= (byte) (field << (w < half ? 0 : 4));
                }
            }
            MemorySegment.copy(group, 0, dst, ValueLayout.JAVA_BYTE, dstOffset + (long) g * group.length, group.length);
        }
    }
}
