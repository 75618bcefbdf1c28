package jquant.formats.weightlet;

import static jquant.formats.weightlet.WeightletLayout.BLOCK_BYTES;
import static jquant.formats.weightlet.WeightletLayout.GROUP_WEIGHTS;
import static jquant.formats.weightlet.WeightletLayout.STRIPES_PER_GROUP;
import static jquant.formats.weightlet.WeightletLayout.STRIPE_WEIGHTS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The SIMD weightlet decoder (paper Figure 8). Per stripe of 16 weights and per plane: one AND (Mask
 * the slot), one shift (Align it to the plane's bit position in the field), one OR (Merge the planes);
 * then, per stripe, the field → int8 map of {@link WeightletLayout#toInt8}: below 8 bits one shift left
 * by 1 and one subtract of {@code 2^B − 1}, at 8 bits one subtract of 127.
 *
 * <p>Two kernels, same arithmetic:
 * <ul>
 * <li><em>stripe</em> kernel, the paper's: one 16-byte block per 128-bit register, one stripe per step;
 * <li><em>half-group</em> kernel, used when 512-bit vectors are native: four stripes per step. The plane
 * blocks those four stripes need are loaded once and repeated across the four 128-bit lanes (one
 * lane permute), and each lane shifts by its own slot (one variable shift), so a step does the work of
 * four stripe steps with about the same instruction count.
 * </ul>
 * Registers are handled as 64-bit lanes (x86 has no byte shifts): the slot is first shifted to the top
 * of its byte, where the mask drops whatever came in from the byte below, and the final right shift of a
 * masked byte cannot leave it, so whole-lane shifts give the bytes per-byte shifts would. Each bit width
 * has a small method naming its planes, small enough for C2 to inline every Vector API call (a fully
 * unrolled stripe kernel hit the inlining node limit and boxed its vectors, far slower; see
 * {@code GroupRun} for the same hazard across widths).
 *
 * <p>Output is bit-identical to {@link ScalarWeightletUnpacker}; a partial last group is decoded into a
 * scratch group and copied.
 */
public final class VectorWeightletUnpacker implements ChannelUnpacker {

    /** The paper's kernel: one stripe per 128-bit step. */
    public static final VectorWeightletUnpacker STRIPE_KERNEL = new VectorWeightletUnpacker(false);
    /** Four stripes per 512-bit step; only fast where 512-bit vectors are native. */
    public static final VectorWeightletUnpacker HALF_GROUP_KERNEL = new VectorWeightletUnpacker(true);
    /** The kernel suited to this machine: half-group where 512-bit vectors are native, else stripe. */
    public static final VectorWeightletUnpacker INSTANCE =
            LongVector.SPECIES_PREFERRED.vectorBitSize() >= 512 ? HALF_GROUP_KERNEL : STRIPE_KERNEL;

    private static final VectorSpecies<Long> BLOCK = LongVector.SPECIES_128;
    private static final VectorSpecies<Long> TWO_BLOCKS = LongVector.SPECIES_256;
    private static final VectorSpecies<Long> FOUR_LANES = LongVector.SPECIES_512;
    private static final VectorSpecies<Byte> STRIPE = ByteVector.SPECIES_128;
    /** Widest float species that one 16-byte stripe fills whole (16 lanes or fewer). */
    private static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_PREFERRED.length() > STRIPE_WEIGHTS
            ? FloatVector.SPECIES_512 : FloatVector.SPECIES_PREFERRED;
    private static final ByteOrder ORDER = ByteOrder.nativeOrder();
    /** 0x01 in every byte of a lane: spreads a one-byte mask over the lane. */
    private static final long EVERY_BYTE = 0x0101010101010101L;
    private static final int HALF_GROUP_BYTES = GROUP_WEIGHTS / 2;

    /** One 16-byte block (two longs) into all four 128-bit lanes. */
    private static final VectorShuffle<Long> REPEAT_BLOCK =
            VectorShuffle.fromValues(FOUR_LANES, 0, 1, 0, 1, 0, 1, 0, 1);
    /** Two blocks into lanes (first, first, second, second). */
    private static final VectorShuffle<Long> REPEAT_EACH_OF_TWO =
            VectorShuffle.fromValues(FOUR_LANES, 0, 1, 0, 1, 2, 3, 2, 3);
    /** Per 64-bit element: the left shift that lifts stripe (4·half + lane)'s slot to the top of its byte. */
    private static final LongVector ONE_BIT_FIRST_HALF = longs(0, 0, 1, 1, 2, 2, 3, 3);
    private static final LongVector ONE_BIT_SECOND_HALF = longs(4, 4, 5, 5, 6, 6, 7, 7);
    private static final LongVector TWO_BIT_EITHER_HALF = longs(0, 0, 2, 2, 4, 4, 6, 6);
    private static final LongVector FOUR_BIT_EITHER_HALF = longs(0, 0, 4, 4, 0, 0, 4, 4);

    private final boolean halfGroups;

    private VectorWeightletUnpacker(boolean halfGroups) {
        this.halfGroups = halfGroups;
    }

    private static LongVector longs(long... values) {
        return LongVector.fromArray(FOUR_LANES, values, 0);
    }

    @Override
    public void unpackChannel(MemorySegment src, long srcOffset, int bits, int length, byte[] dst, int dstOffset) {
        ChannelUnpacker.checkChannel(src, srcOffset, WeightletLayout.channelBytes(bits, length), length, dst.length,
                dstOffset);
        int full = length / GROUP_WEIGHTS;
        unpackGroups(bits, src, srcOffset, full, dst, dstOffset);
        int rest = length - full * GROUP_WEIGHTS;
        if (rest > 0) {
            byte[] group = new byte[GROUP_WEIGHTS];
            unpackLastGroup(bits, src, srcOffset, length, group);
            System.arraycopy(group, 0, dst, dstOffset + full * GROUP_WEIGHTS, rest);
        }
    }

    /** A thread's whole group, where a short last group is spread out for the group kernels. */
    private static final ThreadLocal<MemorySegment> WHOLE_GROUP =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(WeightletLayout.groupBytes(WeightletLayout.MAX_BITS), 64));

    /**
     * The last group of a channel of {@code length} weights into {@code group[0..128)}. A short one has
     * dropped its planes' unused blocks; its blocks go back to a whole group's places, the others zero,
     * and the group kernels decode that.
     */
    private void unpackLastGroup(int bits, MemorySegment src, long srcOffset, int length, byte[] group) {
        int last = WeightletLayout.groups(length) - 1, stripes = WeightletLayout.groupStripes(length, last);
        long at = srcOffset + (long) last * WeightletLayout.groupBytes(bits);
        if (stripes == STRIPES_PER_GROUP) {
            unpackGroups(bits, src, at, 1, group, 0);
            return;
        }
        MemorySegment whole = WHOLE_GROUP.get();
        whole.fill((byte) 0);
        for (int p = 0; p < WeightletLayout.planeCount(bits); p++) {
            MemorySegment.copy(src, at + WeightletLayout.planeByteOffset(bits, p, stripes), whole, WeightletLayout.planeByteOffset(bits, p),
                    (long) BLOCK_BYTES * WeightletLayout.planeBlocks(WeightletLayout.planeWidth(bits, p), stripes));
        }
        unpackGroups(bits, whole, 0, 1, group, 0);
    }

    /** Unpacks and dequantizes: {@code dst[dstOffset + i] = int8_i · scale}, equal to the scalar twin. */
    public void unpackChannel(MemorySegment src, long srcOffset, int bits, int length, float scale, float[] dst,
                              int dstOffset) {
        ChannelUnpacker.checkChannel(src, srcOffset, WeightletLayout.channelBytes(bits, length), length, dst.length,
                dstOffset);
        int groupBytes = WeightletLayout.groupBytes(bits);
        byte[] group = new byte[GROUP_WEIGHTS];
        int groups = WeightletLayout.groups(length);
        for (int g = 0; g < groups; g++) {
            if (g == groups - 1) unpackLastGroup(bits, src, srcOffset, length, group);
            else unpackGroups(bits, src, srcOffset + (long) g * groupBytes, 1, group, 0);
            int base = dstOffset + g * GROUP_WEIGHTS;
            int inGroup = Math.min(GROUP_WEIGHTS, length - g * GROUP_WEIGHTS);
            int i = 0;
            for (; i + STRIPE_WEIGHTS <= inGroup; i += STRIPE_WEIGHTS) {
                ByteVector stripe = ByteVector.fromArray(STRIPE, group, i);
                for (int part = 0; part < STRIPE_WEIGHTS / FLOATS.length(); part++) {
                    ((FloatVector) stripe.convertShape(VectorOperators.B2F, FLOATS, part)).mul(scale)
                            .intoArray(dst, base + i + part * FLOATS.length());
                }
            }
            for (; i < inGroup; i++) dst[base + i] = group[i] * scale;
        }
    }

    /**
     * Decodes {@code groups} whole groups of one bit width. One implementation per width, called through
     * this interface: with several widths in use the call is megamorphic, so C2 compiles each width's
     * loop on its own instead of inlining all of them into one method, where the inlining node limit
     * would leave Vector API calls out-of-line and box every vector.
     */
    private interface GroupRun {
        void unpack(MemorySegment src, long at, int groups, byte[] dst, int d);
    }

    private static final GroupRun[] STRIPE_RUNS = {null,
            VectorWeightletUnpacker::stripes1,
            VectorWeightletUnpacker::stripes2,
            VectorWeightletUnpacker::stripes3,
            VectorWeightletUnpacker::stripes4,
            VectorWeightletUnpacker::stripes5,
            VectorWeightletUnpacker::stripes6,
            VectorWeightletUnpacker::stripes7,
            VectorWeightletUnpacker::stripes8};
    private static final GroupRun[] HALF_GROUP_RUNS = {null,
            VectorWeightletUnpacker::halves1,
            VectorWeightletUnpacker::halves2,
            VectorWeightletUnpacker::halves3,
            VectorWeightletUnpacker::halves4,
            VectorWeightletUnpacker::halves5,
            VectorWeightletUnpacker::halves6,
            VectorWeightletUnpacker::halves7,
            VectorWeightletUnpacker::halves8};

    private void unpackGroups(int bits, MemorySegment src, long at, int groups, byte[] dst, int d) {
        WeightletLayout.checkBits(bits);
        // two call sites, so that one kernel's widths do not make the other's call polymorphic
        if (halfGroups) {
            HALF_GROUP_RUNS[bits].unpack(src, at, groups, dst, d);
        } else {
            STRIPE_RUNS[bits].unpack(src, at, groups, dst, d);
        }
    }

    /** Bring the slot at the top of each byte down to bit {@code planeShift}, after masking the rest. */
    private static LongVector maskAndAlign(LongVector lifted, int width, int planeShift) {
        long topBits = (0xFFL << (8 - width) & 0xFF) * EVERY_BYTE;
        return lifted.and(topBits).lanewise(VectorOperators.LSHR, 8 - width - planeShift);
    }

    /**
     * Field → int8 ({@link WeightletLayout#toInt8}) and store. Below 8 bits a field is at most 127, so
     * doubling it as a 64-bit lane carries nothing into the next byte; {@code bits} is a constant in each
     * caller, so the branch folds away.
     */
    private static void store(LongVector fields, int bits, byte[] dst, int at) {
        if (bits < WeightletLayout.MAX_BITS) {
            fields.lanewise(VectorOperators.LSHL, 1).reinterpretAsBytes().sub((byte) ((1 << bits) - 1)).intoArray(dst, at);
        } else {
            fields.reinterpretAsBytes().sub((byte) WeightletLayout.INT8_MAX).intoArray(dst, at);
        }
    }

    /** Stripe kernel: stripe {@code stripe}'s share of the plane at {@code planeAt}. */
    private static LongVector stripePlane(MemorySegment src, long planeAt, int width, int planeShift, int stripe) {
        int slotsPerByte = 8 / width;
        LongVector block = LongVector.fromMemorySegment(BLOCK, src,
                planeAt + (long) BLOCK_BYTES * (stripe / slotsPerByte), ORDER);
        return maskAndAlign(block.lanewise(VectorOperators.LSHL, width * (stripe % slotsPerByte)), width, planeShift);
    }

    /** Half-group kernel: stripes 4·half .. 4·half+3 of the plane at {@code planeAt}, one per 128-bit lane. */
    private static LongVector halfGroupPlane(MemorySegment src, long planeAt, int width, int planeShift, int half) {
        LongVector lanes;
        LongVector slotShifts;
        if (width == 4) {
            // blocks 2·half and 2·half+1 hold stripes (4h, 4h+1) and (4h+2, 4h+3)
            LongVector two = LongVector.fromMemorySegment(TWO_BLOCKS, src, planeAt + 2L * BLOCK_BYTES * half, ORDER);
            lanes = ((LongVector) two.reinterpretShape(FOUR_LANES, 0)).rearrange(REPEAT_EACH_OF_TWO);
            slotShifts = FOUR_BIT_EITHER_HALF;
        } else {
            // a 2-bit block holds four stripes, so it is block `half`; the 1-bit block holds all eight
            long blockAt = planeAt + (width == 2 ? (long) BLOCK_BYTES * half : 0);
            LongVector one = LongVector.fromMemorySegment(BLOCK, src, blockAt, ORDER);
            lanes = ((LongVector) one.reinterpretShape(FOUR_LANES, 0)).rearrange(REPEAT_BLOCK);
            slotShifts = width == 2 ? TWO_BIT_EITHER_HALF : half == 0 ? ONE_BIT_FIRST_HALF : ONE_BIT_SECOND_HALF;
        }
        return maskAndAlign(lanes.lanewise(VectorOperators.LSHL, slotShifts), width, planeShift);
    }

    /** 1 bit = 1-bit plane, one stripe per step. */
    private static void stripes1(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 16, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                store(stripePlane(src, at, 1, 0, s), 1, dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    /** 1 bit = 1-bit plane, four stripes per step. */
    private static void halves1(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 16, d += GROUP_WEIGHTS) {
            for (int h = 0; h < 2; h++) {
                store(halfGroupPlane(src, at, 1, 0, h), 1, dst, d + h * HALF_GROUP_BYTES);
            }
        }
    }

    /** 2 bits = 2-bit plane, one stripe per step. */
    private static void stripes2(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 32, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                store(stripePlane(src, at, 2, 0, s), 2, dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    /** 2 bits = 2-bit plane, four stripes per step. */
    private static void halves2(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 32, d += GROUP_WEIGHTS) {
            for (int h = 0; h < 2; h++) {
                store(halfGroupPlane(src, at, 2, 0, h), 2, dst, d + h * HALF_GROUP_BYTES);
            }
        }
    }

    /** 3 bits = 1-bit + 2-bit planes, one stripe per step. */
    private static void stripes3(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 48, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                store(stripePlane(src, at, 1, 2, s)
                        .or(stripePlane(src, at + 16, 2, 0, s)), 3, dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    /** 3 bits = 1-bit + 2-bit planes, four stripes per step. */
    private static void halves3(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 48, d += GROUP_WEIGHTS) {
            for (int h = 0; h < 2; h++) {
                store(halfGroupPlane(src, at, 1, 2, h)
                        .or(halfGroupPlane(src, at + 16, 2, 0, h)), 3, dst, d + h * HALF_GROUP_BYTES);
            }
        }
    }

    /** 4 bits = 4-bit plane, one stripe per step. */
    private static void stripes4(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 64, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                store(stripePlane(src, at, 4, 0, s), 4, dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    /** 4 bits = 4-bit plane, four stripes per step. */
    private static void halves4(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 64, d += GROUP_WEIGHTS) {
            for (int h = 0; h < 2; h++) {
                store(halfGroupPlane(src, at, 4, 0, h), 4, dst, d + h * HALF_GROUP_BYTES);
            }
        }
    }

    /** 5 bits = 1-bit + 4-bit planes, one stripe per step. */
    private static void stripes5(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 80, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                store(stripePlane(src, at, 1, 4, s)
                        .or(stripePlane(src, at + 16, 4, 0, s)), 5, dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    /** 5 bits = 1-bit + 4-bit planes, four stripes per step. */
    private static void halves5(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 80, d += GROUP_WEIGHTS) {
            for (int h = 0; h < 2; h++) {
                store(halfGroupPlane(src, at, 1, 4, h)
                        .or(halfGroupPlane(src, at + 16, 4, 0, h)), 5, dst, d + h * HALF_GROUP_BYTES);
            }
        }
    }

    /** 6 bits = 2-bit + 4-bit planes, one stripe per step. */
    private static void stripes6(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 96, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                store(stripePlane(src, at, 2, 4, s)
                        .or(stripePlane(src, at + 32, 4, 0, s)), 6, dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    /** 6 bits = 2-bit + 4-bit planes, four stripes per step. */
    private static void halves6(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 96, d += GROUP_WEIGHTS) {
            for (int h = 0; h < 2; h++) {
                store(halfGroupPlane(src, at, 2, 4, h)
                        .or(halfGroupPlane(src, at + 32, 4, 0, h)), 6, dst, d + h * HALF_GROUP_BYTES);
            }
        }
    }

    /** 7 bits = 1-bit + 2-bit + 4-bit planes, one stripe per step. */
    private static void stripes7(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 112, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                store(stripePlane(src, at, 1, 6, s)
                        .or(stripePlane(src, at + 16, 2, 4, s))
                        .or(stripePlane(src, at + 48, 4, 0, s)), 7, dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    /** 7 bits = 1-bit + 2-bit + 4-bit planes, four stripes per step. */
    private static void halves7(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 112, d += GROUP_WEIGHTS) {
            for (int h = 0; h < 2; h++) {
                store(halfGroupPlane(src, at, 1, 6, h)
                        .or(halfGroupPlane(src, at + 16, 2, 4, h))
                        .or(halfGroupPlane(src, at + 48, 4, 0, h)), 7, dst, d + h * HALF_GROUP_BYTES);
            }
        }
    }

    /** 8 bits = 4-bit + 4-bit planes, one stripe per step. */
    private static void stripes8(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 128, d += GROUP_WEIGHTS) {
            for (int s = 0; s < STRIPES_PER_GROUP; s++) {
                store(stripePlane(src, at, 4, 4, s)
                        .or(stripePlane(src, at + 64, 4, 0, s)), 8, dst, d + s * STRIPE_WEIGHTS);
            }
        }
    }

    /** 8 bits = 4-bit + 4-bit planes, four stripes per step. */
    private static void halves8(MemorySegment src, long at, int groups, byte[] dst, int d) {
        for (int g = 0; g < groups; g++, at += 128, d += GROUP_WEIGHTS) {
            for (int h = 0; h < 2; h++) {
                store(halfGroupPlane(src, at, 4, 4, h)
                        .or(halfGroupPlane(src, at + 64, 4, 0, h)), 8, dst, d + h * HALF_GROUP_BYTES);
            }
        }
    }
}
