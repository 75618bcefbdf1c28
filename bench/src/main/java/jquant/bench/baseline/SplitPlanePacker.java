package jquant.bench.baseline;

import static jquant.formats.weightlet.WeightletLayout.GROUP_WEIGHTS;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;
import jquant.formats.weightlet.ChannelPacker;
import jquant.formats.weightlet.WeightletLayout;

/**
 * Baseline "split bit-planes without interleaving" (K-quant-like, the paper's Figure 13 "K-Quant"):
 * the same groups, planes, plane order and bytes as {@link WeightletLayout}, but inside a plane of
 * width b the weights are in natural order, least significant slot first, as ggml packs its planes:
 * <pre>
 *   group weight w of a b-bit plane: byte planeOffset + w / (8/b), bits [b·(w % (8/b)) + b − 1 .. b·(w % (8/b))]
 *   1-bit plane byte k = | w 8k+7 | ... | w 8k+1 | w 8k |     (bit 7 .. bit 0)
 *   4-bit plane byte k = | w 2k+1 | w 2k |
 * </pre>
 * Sixteen consecutive weights then sit in 2b bytes, so a SIMD decoder must spread every byte over
 * 8/b lanes (a shuffle) and shift each lane by its own amount.
 */
public final class SplitPlanePacker implements ChannelPacker {

    public static final SplitPlanePacker INSTANCE = new SplitPlanePacker();

    private SplitPlanePacker() {}

    /** Byte, inside a plane of width {@code width}, that holds group weight {@code w}. */
    public static int byteInPlane(int width, int w) {
        return w / (8 / width);
    }

    /** Right shift that brings group weight {@code w}'s slot down to bit 0. */
    public static int slotShift(int width, int w) {
        return width * (w % (8 / width));
    }

    /** Whole groups, the last padded with zero fields: the baseline keeps the paper's groups of 128. */
    @Override
    public long channelBytes(int bits, int length) {
        return (long) WeightletLayout.groups(length) * WeightletLayout.groupBytes(bits);
    }

    @Override
    public void packChannel(byte[] fields, int fieldsOffset, int bits, int length, MemorySegment dst, long dstOffset) {
        ChannelPacker.checkFields(fields, fieldsOffset, bits, length);
        Objects.checkFromIndexSize(dstOffset, channelBytes(bits, length), dst.byteSize());
        byte[] group = new byte[WeightletLayout.groupBytes(bits)];
        for (int g = 0; g < WeightletLayout.groups(length); g++) {
            java.util.Arrays.fill(group, (byte) 0);
            int inGroup = Math.min(GROUP_WEIGHTS, length - g * GROUP_WEIGHTS);
            for (int w = 0; w < inGroup; w++) {
                int field = fields[fieldsOffset + g * GROUP_WEIGHTS + w] & 0xFF;
                for (int p = 0; p < WeightletLayout.planeCount(bits); p++) {
                    int width = WeightletLayout.planeWidth(bits, p);
                    int part = (field >>> WeightletLayout.planeShift(bits, p)) & ((1 << width) - 1);
                    group[WeightletLayout.planeByteOffset(bits, p) + byteInPlane(width, w)] |=
                            (byte) (part << slotShift(width, w));
                }
            }
            MemorySegment.copy(group, 0, dst, ValueLayout.JAVA_BYTE, dstOffset + (long) g * group.length, group.length);
        }
    }
}
