package jquant.bench.baseline;

import static jquant.formats.weightlet.WeightletLayout.BLOCK_BYTES;
import static jquant.formats.weightlet.WeightletLayout.GROUP_WEIGHTS;
import static jquant.formats.weightlet.WeightletLayout.STRIPES_PER_GROUP;
import static jquant.formats.weightlet.WeightletLayout.STRIPE_WEIGHTS;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;
import jquant.formats.weightlet.ChannelUnpacker;
import jquant.formats.weightlet.WeightletLayout;

/**
 * SIMD decoder of {@link SplitPlanePacker}, on the same 128-bit registers as the weightlet decoder:
 * per stripe of 16 weights and per plane, one table shuffle spreads the plane's 2b source bytes over
 * the 16 lanes ({@code rearrange}), a per-lane variable shift brings each weight's slot to bit 0, then
 * mask, shift to the plane's position and OR. The shuffle and the per-lane shift are the extra work the
 * interleaved weightlet layout avoids. Below 8 bits each plane is shifted one bit further than its
 * position in the field, which doubles the field for the int8 map ({@code 2f − (2^B − 1)},
 * {@link jquant.formats.weightlet.WeightletLayout#toInt8}) at no cost; then one subtract per stripe.
 */
public final class VectorSplitPlaneUnpacker implements ChannelUnpacker {

    public static final VectorSplitPlaneUnpacker INSTANCE = new VectorSplitPlaneUnpacker();

    private static final VectorSpecies<Byte> STRIPE = ByteVector.SPECIES_128;
    private static final ByteOrder ORDER = ByteOrder.nativeOrder();
    /** SPREAD[b][start] (start a multiple of 2b): lane i takes block byte {@code start + i / (8/b)}. */
    @SuppressWarnings("unchecked")
    private static final VectorShuffle<Byte>[][] SPREAD = new VectorShuffle[5][BLOCK_BYTES];
    /** LANE_SHIFT[b]: lane i shifts right by {@code b·(i % (8/b))}. */
    private static final ByteVector[] LANE_SHIFT = new ByteVector[5];

    static {
        for (int width : new int[] {1, 2, 4}) {
            for (int start = 0; start < BLOCK_BYTES; start += 2 * width) {
                int[] lanes = new int[STRIPE_WEIGHTS];
                for (int i = 0; i < STRIPE_WEIGHTS; i++) lanes[i] = start + i / (8 / width);
                SPREAD[width][start] = VectorShuffle.fromArray(STRIPE, lanes, 0);
            }
            byte[] shifts = new byte[STRIPE_WEIGHTS];
            for (int i = 0; i < STRIPE_WEIGHTS; i++) shifts[i] = (byte) (width * (i % (8 / width)));
            LANE_SHIFT[width] = ByteVector.fromArray(STRIPE, shifts, 0);
        }
    }

    private VectorSplitPlaneUnpacker() {}

    @Override
    public void unpackChannel(MemorySegment src, long srcOffset, int bits, int length, byte[] dst, int dstOffset) {
        ChannelUnpacker.checkChannel(src, srcOffset, SplitPlanePacker.INSTANCE.channelBytes(bits, length), length, dst.length,
                dstOffset);
        int groupBytes = WeightletLayout.groupBytes(bits);
        int full = length / GROUP_WEIGHTS;
        WeightletLayout.checkBits(bits);
        RUNS[bits].unpack(src, srcOffset, full, dst, dstOffset);
        int rest = length - full * GROUP_WEIGHTS;
        if (rest > 0) {
            byte[] group = new byte[GROUP_WEIGHTS];
            RUNS[bits].unpack(src, srcOffset + (long) full * groupBytes, 1, group, 0);
            System.arraycopy(group, 0, dst, dstOffset + full * GROUP_WEIGHTS, rest);
        }
    }

    /** Whole groups of one width; one implementation per width, as in the weightlet SIMD decoder. */
    private interface GroupRun {
        void unpack(MemorySegment src, long at, int groups, byte[] dst, int d);
    }

    private static final GroupRun[] RUNS = {null,
            VectorSplitPlaneUnpacker::stripes1,
            VectorSplitPlaneUnpacker::stripes2,
            VectorSplitPlaneUnpacker::stripes3,
            VectorSplitPlaneUnpacker::stripes4,
            VectorSplitPlaneUnpacker::stripes5,
            VectorSplitPlaneUnpacker::stripes6,
            VectorSplitPlaneUnpacker::stripes7,
            VectorSplitPlaneUnpacker::stripes8};

    /** Stripe {@code stripe}'s share of the natural-order plane at {@code planeAt}: shuffle, shift, mask, align. */
    private static ByteVector plane(MemorySegment src, long planeAt, int width, int planeShift, int stripe) {
        int firstByte = 2 * width * stripe;  // 16 weights of b bits start at byte 16·stripe·b/8 of the plane
        ByteVector block = ByteVector.fromMemorySegment(STRIPE, src,
                planeAt + firstByte / BLOCK_BYTES * BLOCK_BYTES, ORDER);
        return block.rearrange(SPREAD[width][firstByte % BLOCK_BYTES])
                .lanewise(VectorOperators.LSHR, LANE_SHIFT[width])
                .and((byte) ((1 << width) - 1))
                .lanewise(VectorOperators.LSHL, planeShift);
    }

    private static void stripes1(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 16, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                plane(src, at, 1, 1, s)
                        .sub((byte) 1).intoArray(dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    private static void stripes2(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 32, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                plane(src, at, 2, 1, s)
                        .sub((byte) 3).intoArray(dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    private static void stripes3(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 48, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                plane(src, at, 1, 3, s)
                        .or(plane(src, at + 16, 2, 1, s))
                        .sub((byte) 7).intoArray(dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    private static void stripes4(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 64, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                plane(src, at, 4, 1, s)
                        .sub((byte) 15).intoArray(dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    private static void stripes5(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 80, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                plane(src, at, 1, 5, s)
                        .or(plane(src, at + 16, 4, 1, s))
                        .sub((byte) 31).intoArray(dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    private static void stripes6(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 96, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                plane(src, at, 2, 5, s)
                        .or(plane(src, at + 32, 4, 1, s))
                        .sub((byte) 63).intoArray(dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    private static void stripes7(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 112, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                plane(src, at, 1, 7, s)
                        .or(plane(src, at + 16, 2, 5, s))
                        .or(plane(src, at + 48, 4, 1, s))
                        .sub((byte) 127).intoArray(dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    private static void stripes8(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 128, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                plane(src, at, 4, 4, s)
                        .or(plane(src, at + 64, 4, 0, s))
                        .sub((byte) 127).intoArray(dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }
}
