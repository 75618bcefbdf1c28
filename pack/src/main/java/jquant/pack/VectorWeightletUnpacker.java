package jquant.pack;

import static jquant.pack.WeightletLayout.GROUP_WEIGHTS;
import static jquant.pack.WeightletLayout.STRIPE_WEIGHTS;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The SIMD weightlet decoder (paper Figure 8): each 16-byte block is one 128-bit register; each
 * stripe of 16 weights is, per plane, one AND (Mask the slot), one shift (Align it to the plane's bit
 * position in the field) and one OR (Merge the planes), then one add of {@code −2^(B−1)} to reach int8.
 *
 * <p>The registers are handled as two 64-bit lanes: because the mask is applied before the shift and
 * the shift never moves a slot past either end of its byte, shifting whole lanes gives the same bytes
 * as shifting each byte (x86 has no byte shifts). One method per bit width spells out the eight
 * stripes with constant slots so that masks and shift counts are compile-time constants.
 *
 * <p>Output is bit-identical to {@link ScalarWeightletUnpacker}; a partial last group is decoded into
 * a scratch group and copied.
 */
public final class VectorWeightletUnpacker implements ChannelUnpacker {

    public static final VectorWeightletUnpacker INSTANCE = new VectorWeightletUnpacker();

    private static final VectorSpecies<Long> BLOCK = LongVector.SPECIES_128;
    private static final VectorSpecies<Byte> STRIPE = ByteVector.SPECIES_128;
    /** Widest float species that one 16-byte stripe fills whole (16 lanes or fewer). */
    private static final VectorSpecies<Float> FLOATS =
            FloatVector.SPECIES_PREFERRED.length() > STRIPE_WEIGHTS ? FloatVector.SPECIES_512 : FloatVector.SPECIES_PREFERRED;
    private static final ByteOrder ORDER = ByteOrder.nativeOrder();
    /** 0x01 in every byte of a lane: spreads a one-byte mask over the lane. */
    private static final long EVERY_BYTE = 0x0101010101010101L;

    private VectorWeightletUnpacker() {}

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

    /** Unpacks and dequantizes: {@code dst[dstOffset + i] = int8_i · scale}, equal to the scalar twin. */
    public void unpackChannel(MemorySegment src, long srcOffset, int bits, int length, float scale, float[] dst,
                              int dstOffset) {
        ChannelUnpacker.checkChannel(src, srcOffset, WeightletLayout.channelBytes(bits, length), length, dst.length,
                dstOffset);
        int groupBytes = WeightletLayout.groupBytes(bits);
        byte[] group = new byte[GROUP_WEIGHTS];
        for (int g = 0; g < WeightletLayout.groups(length); g++) {
            unpackGroup(bits, src, srcOffset + (long) g * groupBytes, group, 0);
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

    private static void unpackGroup(int bits, MemorySegment src, long at, byte[] dst, int d) {
        switch (bits) {
            case 1 -> group1(src, at, dst, d);
            case 2 -> group2(src, at, dst, d);
            case 3 -> group3(src, at, dst, d);
            case 4 -> group4(src, at, dst, d);
            case 5 -> group5(src, at, dst, d);
            case 6 -> group6(src, at, dst, d);
            case 7 -> group7(src, at, dst, d);
            case 8 -> group8(src, at, dst, d);
            default -> WeightletLayout.checkBits(bits);
        }
    }

    private static LongVector block(MemorySegment src, long at) {
        return LongVector.fromMemorySegment(BLOCK, src, at, ORDER);
    }

    /** Mask slot {@code slot} of a {@code width}-bit plane block and align it to bit {@code planeShift}. */
    private static LongVector slot(LongVector block, int width, int slot, int planeShift) {
        int low = 8 - width * (slot + 1);
        LongVector masked = block.and((((1L << width) - 1) << low) * EVERY_BYTE);
        if (low > planeShift) return masked.lanewise(VectorOperators.LSHR, low - planeShift);
        if (low < planeShift) return masked.lanewise(VectorOperators.LSHL, planeShift - low);
        return masked;
    }

    /** Offset-binary field → int8 ({@link WeightletLayout#toInt8}) and store one stripe. */
    private static void store(LongVector fields, int bits, byte[] dst, int at) {
        fields.reinterpretAsBytes().add((byte) -(1 << (bits - 1))).intoArray(dst, at);
    }

    private static void group1(MemorySegment src, long at, byte[] dst, int d) {
        // 1-bit plane at byte 0: field bit 0
        LongVector one0 = block(src, at);
        store(slot(one0, 1, 0, 0), 1, dst, d);
        store(slot(one0, 1, 1, 0), 1, dst, d + 16);
        store(slot(one0, 1, 2, 0), 1, dst, d + 32);
        store(slot(one0, 1, 3, 0), 1, dst, d + 48);
        store(slot(one0, 1, 4, 0), 1, dst, d + 64);
        store(slot(one0, 1, 5, 0), 1, dst, d + 80);
        store(slot(one0, 1, 6, 0), 1, dst, d + 96);
        store(slot(one0, 1, 7, 0), 1, dst, d + 112);
    }

    private static void group2(MemorySegment src, long at, byte[] dst, int d) {
        // 2-bit plane at byte 0: field bits 1..0
        LongVector two0 = block(src, at), two1 = block(src, at + 16);
        store(slot(two0, 2, 0, 0), 2, dst, d);
        store(slot(two0, 2, 1, 0), 2, dst, d + 16);
        store(slot(two0, 2, 2, 0), 2, dst, d + 32);
        store(slot(two0, 2, 3, 0), 2, dst, d + 48);
        store(slot(two1, 2, 0, 0), 2, dst, d + 64);
        store(slot(two1, 2, 1, 0), 2, dst, d + 80);
        store(slot(two1, 2, 2, 0), 2, dst, d + 96);
        store(slot(two1, 2, 3, 0), 2, dst, d + 112);
    }

    private static void group3(MemorySegment src, long at, byte[] dst, int d) {
        // 1-bit plane at byte 0: field bit 2
        LongVector one0 = block(src, at);
        // 2-bit plane at byte 16: field bits 1..0
        LongVector two0 = block(src, at + 16), two1 = block(src, at + 32);
        store(slot(one0, 1, 0, 2).or(slot(two0, 2, 0, 0)), 3, dst, d);
        store(slot(one0, 1, 1, 2).or(slot(two0, 2, 1, 0)), 3, dst, d + 16);
        store(slot(one0, 1, 2, 2).or(slot(two0, 2, 2, 0)), 3, dst, d + 32);
        store(slot(one0, 1, 3, 2).or(slot(two0, 2, 3, 0)), 3, dst, d + 48);
        store(slot(one0, 1, 4, 2).or(slot(two1, 2, 0, 0)), 3, dst, d + 64);
        store(slot(one0, 1, 5, 2).or(slot(two1, 2, 1, 0)), 3, dst, d + 80);
        store(slot(one0, 1, 6, 2).or(slot(two1, 2, 2, 0)), 3, dst, d + 96);
        store(slot(one0, 1, 7, 2).or(slot(two1, 2, 3, 0)), 3, dst, d + 112);
    }

    private static void group4(MemorySegment src, long at, byte[] dst, int d) {
        // 4-bit plane at byte 0: field bits 3..0
        LongVector four0 = block(src, at), four1 = block(src, at + 16);
        LongVector four2 = block(src, at + 32), four3 = block(src, at + 48);
        store(slot(four0, 4, 0, 0), 4, dst, d);
        store(slot(four0, 4, 1, 0), 4, dst, d + 16);
        store(slot(four1, 4, 0, 0), 4, dst, d + 32);
        store(slot(four1, 4, 1, 0), 4, dst, d + 48);
        store(slot(four2, 4, 0, 0), 4, dst, d + 64);
        store(slot(four2, 4, 1, 0), 4, dst, d + 80);
        store(slot(four3, 4, 0, 0), 4, dst, d + 96);
        store(slot(four3, 4, 1, 0), 4, dst, d + 112);
    }

    private static void group5(MemorySegment src, long at, byte[] dst, int d) {
        // 1-bit plane at byte 0: field bit 4
        LongVector one0 = block(src, at);
        // 4-bit plane at byte 16: field bits 3..0
        LongVector four0 = block(src, at + 16), four1 = block(src, at + 32);
        LongVector four2 = block(src, at + 48), four3 = block(src, at + 64);
        store(slot(one0, 1, 0, 4).or(slot(four0, 4, 0, 0)), 5, dst, d);
        store(slot(one0, 1, 1, 4).or(slot(four0, 4, 1, 0)), 5, dst, d + 16);
        store(slot(one0, 1, 2, 4).or(slot(four1, 4, 0, 0)), 5, dst, d + 32);
        store(slot(one0, 1, 3, 4).or(slot(four1, 4, 1, 0)), 5, dst, d + 48);
        store(slot(one0, 1, 4, 4).or(slot(four2, 4, 0, 0)), 5, dst, d + 64);
        store(slot(one0, 1, 5, 4).or(slot(four2, 4, 1, 0)), 5, dst, d + 80);
        store(slot(one0, 1, 6, 4).or(slot(four3, 4, 0, 0)), 5, dst, d + 96);
        store(slot(one0, 1, 7, 4).or(slot(four3, 4, 1, 0)), 5, dst, d + 112);
    }

    private static void group6(MemorySegment src, long at, byte[] dst, int d) {
        // 2-bit plane at byte 0: field bits 5..4
        LongVector two0 = block(src, at), two1 = block(src, at + 16);
        // 4-bit plane at byte 32: field bits 3..0
        LongVector four0 = block(src, at + 32), four1 = block(src, at + 48);
        LongVector four2 = block(src, at + 64), four3 = block(src, at + 80);
        store(slot(two0, 2, 0, 4).or(slot(four0, 4, 0, 0)), 6, dst, d);
        store(slot(two0, 2, 1, 4).or(slot(four0, 4, 1, 0)), 6, dst, d + 16);
        store(slot(two0, 2, 2, 4).or(slot(four1, 4, 0, 0)), 6, dst, d + 32);
        store(slot(two0, 2, 3, 4).or(slot(four1, 4, 1, 0)), 6, dst, d + 48);
        store(slot(two1, 2, 0, 4).or(slot(four2, 4, 0, 0)), 6, dst, d + 64);
        store(slot(two1, 2, 1, 4).or(slot(four2, 4, 1, 0)), 6, dst, d + 80);
        store(slot(two1, 2, 2, 4).or(slot(four3, 4, 0, 0)), 6, dst, d + 96);
        store(slot(two1, 2, 3, 4).or(slot(four3, 4, 1, 0)), 6, dst, d + 112);
    }

    private static void group7(MemorySegment src, long at, byte[] dst, int d) {
        // 1-bit plane at byte 0: field bit 6
        LongVector one0 = block(src, at);
        // 2-bit plane at byte 16: field bits 5..4
        LongVector two0 = block(src, at + 16), two1 = block(src, at + 32);
        // 4-bit plane at byte 48: field bits 3..0
        LongVector four0 = block(src, at + 48), four1 = block(src, at + 64);
        LongVector four2 = block(src, at + 80), four3 = block(src, at + 96);
        store(slot(one0, 1, 0, 6).or(slot(two0, 2, 0, 4)).or(slot(four0, 4, 0, 0)), 7, dst, d);
        store(slot(one0, 1, 1, 6).or(slot(two0, 2, 1, 4)).or(slot(four0, 4, 1, 0)), 7, dst, d + 16);
        store(slot(one0, 1, 2, 6).or(slot(two0, 2, 2, 4)).or(slot(four1, 4, 0, 0)), 7, dst, d + 32);
        store(slot(one0, 1, 3, 6).or(slot(two0, 2, 3, 4)).or(slot(four1, 4, 1, 0)), 7, dst, d + 48);
        store(slot(one0, 1, 4, 6).or(slot(two1, 2, 0, 4)).or(slot(four2, 4, 0, 0)), 7, dst, d + 64);
        store(slot(one0, 1, 5, 6).or(slot(two1, 2, 1, 4)).or(slot(four2, 4, 1, 0)), 7, dst, d + 80);
        store(slot(one0, 1, 6, 6).or(slot(two1, 2, 2, 4)).or(slot(four3, 4, 0, 0)), 7, dst, d + 96);
        store(slot(one0, 1, 7, 6).or(slot(two1, 2, 3, 4)).or(slot(four3, 4, 1, 0)), 7, dst, d + 112);
    }

    private static void group8(MemorySegment src, long at, byte[] dst, int d) {
        // 4-bit plane at byte 0: field bits 7..4
        LongVector high0 = block(src, at), high1 = block(src, at + 16);
        LongVector high2 = block(src, at + 32), high3 = block(src, at + 48);
        // 4-bit plane at byte 64: field bits 3..0
        LongVector low0 = block(src, at + 64), low1 = block(src, at + 80);
        LongVector low2 = block(src, at + 96), low3 = block(src, at + 112);
        store(slot(high0, 4, 0, 4).or(slot(low0, 4, 0, 0)), 8, dst, d);
        store(slot(high0, 4, 1, 4).or(slot(low0, 4, 1, 0)), 8, dst, d + 16);
        store(slot(high1, 4, 0, 4).or(slot(low1, 4, 0, 0)), 8, dst, d + 32);
        store(slot(high1, 4, 1, 4).or(slot(low1, 4, 1, 0)), 8, dst, d + 48);
        store(slot(high2, 4, 0, 4).or(slot(low2, 4, 0, 0)), 8, dst, d + 64);
        store(slot(high2, 4, 1, 4).or(slot(low2, 4, 1, 0)), 8, dst, d + 80);
        store(slot(high3, 4, 0, 4).or(slot(low3, 4, 0, 0)), 8, dst, d + 96);
        store(slot(high3, 4, 1, 4).or(slot(low3, 4, 1, 0)), 8, dst, d + 112);
    }
}
