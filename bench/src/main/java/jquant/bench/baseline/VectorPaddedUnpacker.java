package jquant.bench.baseline;

import static jquant.formats.weightlet.WeightletLayout.GROUP_WEIGHTS;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import jquant.formats.weightlet.ChannelUnpacker;

/**
 * SIMD decoder of {@link PaddedInt4Int8Packer} on 128-bit registers: an int8 channel is a copy; a
 * nibble group is, per 16 bytes, one AND (low nibbles) and one shift + AND (high nibbles), each followed
 * by the field → int8 map ({@code 2f − (2^B − 1)}: a lane shift, nibbles cannot carry, and a subtract).
 */
public final class VectorPaddedUnpacker implements ChannelUnpacker {

    public static final VectorPaddedUnpacker INSTANCE = new VectorPaddedUnpacker();

    private static final VectorSpecies<Long> BLOCK = LongVector.SPECIES_128;
    private static final ByteOrder ORDER = ByteOrder.nativeOrder();
    private static final long LOW_NIBBLES = 0x0F0F0F0F0F0F0F0FL;
    private static final int HALF = GROUP_WEIGHTS / 2;

    private VectorPaddedUnpacker() {}

    @Override
    public void unpackChannel(MemorySegment src, long srcOffset, int bits, int length, byte[] dst, int dstOffset) {
        ChannelUnpacker.checkChannel(src, srcOffset, PaddedInt4Int8Packer.INSTANCE.channelBytes(bits, length), length,
                dst.length, dstOffset);
        if (bits > PaddedInt4Int8Packer.NIBBLE_MAX_BITS) {
            MemorySegment.copy(src, ValueLayout.JAVA_BYTE, srcOffset, dst, dstOffset, length);
            return;
        }
        int full = length / GROUP_WEIGHTS;
        for (int g = 0; g < full; g++) {
            unpackNibbleGroup(src, srcOffset + (long) g * HALF, bits, dst, dstOffset + g * GROUP_WEIGHTS);
        }
        int rest = length - full * GROUP_WEIGHTS;
        if (rest > 0) {
            byte[] group = new byte[GROUP_WEIGHTS];
            unpackNibbleGroup(src, srcOffset + (long) full * HALF, bits, group, 0);
            System.arraycopy(group, 0, dst, dstOffset + full * GROUP_WEIGHTS, rest);
        }
    }

    private static void unpackNibbleGroup(MemorySegment src, long at, int bits, byte[] dst, int d) {
        byte top = (byte) ((1 << bits) - 1);
        for (int k = 0; k < HALF; k += 16) {
            LongVector v = LongVector.fromMemorySegment(BLOCK, src, at + k, ORDER);
            v.and(LOW_NIBBLES).lanewise(VectorOperators.LSHL, 1).reinterpretAsBytes().sub(top).intoArray(dst, d + k);
            v.lanewise(VectorOperators.LSHR, 3).and(LOW_NIBBLES << 1).reinterpretAsBytes().sub(top).intoArray(dst, d + HALF + k);
        }
    }
}
