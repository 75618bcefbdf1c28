package jquant.pack.baseline;

import static jquant.pack.WeightletLayout.BLOCK_BYTES;
import static jquant.pack.WeightletLayout.GROUP_WEIGHTS;
import static jquant.pack.WeightletLayout.STRIPES_PER_GROUP;
import static jquant.pack.WeightletLayout.STRIPE_WEIGHTS;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import jquant.pack.ChannelUnpacker;
import jquant.pack.WeightletLayout;

/**
 * SIMD decoder of {@link SplitPlanePacker}, on the same 128-bit registers as the weightlet decoder:
 * per stripe of 16 weights and per plane, one table shuffle spreads the plane's 2b source bytes over
 * the 16 lanes ({@code selectFrom}), a per-lane variable shift brings each weight's slot to bit 0, then
 * mask, shift to the plane's position and OR. The shuffle and the per-lane shift are the extra work the
 * interleaved weightlet layout avoids.
 */
public final class VectorSplitPlaneUnpacker implements ChannelUnpacker {

    public static final VectorSplitPlaneUnpacker INSTANCE = new VectorSplitPlaneUnpacker();

    private static final VectorSpecies<Byte> STRIPE = ByteVector.SPECIES_128;
    private static final ByteOrder ORDER = ByteOrder.nativeOrder();
    /** SPREAD[b] row {@code start} (a multiple of 2b): lane i reads block byte {@code start + i / (8/b)}. */
    private static final byte[][][] SPREAD = new byte[5][BLOCK_BYTES][STRIPE_WEIGHTS];
    /** LANE_SHIFT[b]: lane i shifts right by {@code b·(i % (8/b))}. */
    private static final byte[][] LANE_SHIFT = new byte[5][STRIPE_WEIGHTS];

    static {
        for (int width : new int[] {1, 2, 4}) {
            for (int start = 0; start < BLOCK_BYTES; start += 2 * width) {
                for (int i = 0; i < STRIPE_WEIGHTS; i++) {
                    SPREAD[width][start][i] = (byte) (start + i / (8 / width));
                }
            }
            for (int i = 0; i < STRIPE_WEIGHTS; i++) LANE_SHIFT[width][i] = (byte) (width * (i % (8 / width)));
        }
    }

    private VectorSplitPlaneUnpacker() {}

    @Override
    public void unpackChannel(MemorySegment src, long srcOffset, int bits, int length, byte[] dst, int dstOffset) {
        ChannelUnpacker.checkChannel(src, srcOffset, WeightletLayout.channelBytes(bits, length), length, dst.length,
                dstOffset);
        int groupBytes = WeightletLayout.groupBytes(bits);
        int full = length / GROUP_WEIGHTS;
        for (int g = 0; g < full; g++) {
            unpackGroup(bits, src, srcOffset + (long) g * groupBytes, dst, dstOffset + g * GROUP_WEIGHTS);
        }
        int rest = length - full * GROUP_WEIGHTS;
        if (rest > 0) {
            byte[] group = new byte[GROUP_WEIGHTS];
            unpackGroup(bits, src, srcOffset + (long) full * groupBytes, group, 0);
            System.arraycopy(group, 0, dst, dstOffset + full * GROUP_WEIGHTS, rest);
        }
    }

    private static void unpackGroup(int bits, MemorySegment src, long at, byte[] dst, int d) {
        int planes = WeightletLayout.planeCount(bits);
        byte offset = (byte) -(1 << (bits - 1));
        for (int s = 0; s < STRIPES_PER_GROUP; s++) {
            ByteVector field = ByteVector.zero(STRIPE);
            for (int p = 0; p < planes; p++) {
                int width = WeightletLayout.planeWidth(bits, p);
                int firstByte = 2 * width * s;  // 16 weights of b bits start at byte 16·s·b/8 of the plane
                ByteVector block = ByteVector.fromMemorySegment(STRIPE, src,
                        at + WeightletLayout.planeByteOffset(bits, p) + firstByte / BLOCK_BYTES * BLOCK_BYTES, ORDER);
                ByteVector spread = ByteVector.fromArray(STRIPE, SPREAD[width][firstByte % BLOCK_BYTES], 0)
                        .selectFrom(block);
                ByteVector part = spread.lanewise(VectorOperators.LSHR, ByteVector.fromArray(STRIPE, LANE_SHIFT[width], 0))
                        .and((byte) ((1 << width) - 1))
                        .lanewise(VectorOperators.LSHL, WeightletLayout.planeShift(bits, p));
                field = field.or(part);
            }
            field.add(offset).intoArray(dst, d + s * STRIPE_WEIGHTS);
        }
    }
}
