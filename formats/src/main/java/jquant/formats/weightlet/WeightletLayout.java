package jquant.formats.weightlet;

/**
 * The EdgeFlow weightlet format (paper §4.2, Figures 7–8): how one output channel of B-bit
 * weights (B = 1..8, chosen per channel) is laid out in bytes so that SIMD unpacking is a Mask,
 * an Align (shift) and a Merge (OR) per 16 weights and per primitive plane.
 *
 * <h2>Fields and their int8 value</h2>
 * The packer stores unsigned B-bit <em>fields</em> {@code f}; the unpacked int8 weight is a level of the
 * quantizer's grid (jquant.quantize.SymmetricChannelQuantizer), mapped here once ({@link #toInt8}, inverse
 * {@link #toField}):
 * <pre>
 *   B = 1..7   v = 2f − (2^B − 1)   mid-rise, odd levels ±1 … ±(2^B − 1)   (unpack: shift left 1, subtract)
 *   B = 8      v = f − 127          int8 symmetric grid, field 255 invalid  (unpack: subtract)
 * </pre>
 * Byte arithmetic wraps correctly: every result fits an int8, so the SIMD unpacker computes it on
 * bytes.
 *
 * <h2>Groups</h2>
 * A channel of {@code length} weights is cut into {@code ceil(length / 128)} groups of
 * {@link #GROUP_WEIGHTS} = 128 consecutive weights; its groups follow each other. A whole B-bit group
 * takes {@code 16·B} bytes. The last group, when the length is not a multiple of 128, holds only the
 * {@code S = ceil(rest / 16)} stripes its {@code rest} weights reach (the last stripe padded with zero
 * fields): each of its planes keeps the blocks those stripes fill, {@code ceil(S·b / 8)} blocks of a
 * b-bit plane, at the same places as in a whole group, and the planes follow each other without the
 * dropped blocks (see {@link #groupBytes(int, int)}). A whole group is the case S = 8, so a channel of
 * 64 weights takes 32 bytes at 4 bits, not a padded group's 64:
 * <pre>
 *   7 bits (planes 1 + 2 + 4)    1-bit plane        2-bit plane         4-bit plane          bytes
 *   whole group, S = 8           0: 1 block         16: 2 blocks        48: 4 blocks          112
 *   64 weights, S = 4            0: 1 block (slots  16: 1 block         32: 2 blocks           64
 *                                   0-3 used)
 * </pre>
 *
 * <h2>Planes (primitive weightlets)</h2>
 * A B-bit field is split into planes of 1, 2 or 4 bits. The plane order is fixed for all B: the
 * narrower plane holds the more significant bits, and planes are stored most significant first:
 * <pre>
 *   B  planes (MSB → LSB)   field bits per plane      plane byte offsets in the group
 *   1  1                    [0]                       0
 *   2  2                    [1:0]                     0
 *   3  1 + 2                [2] [1:0]                 0, 16
 *   4  4                    [3:0]                     0
 *   5  1 + 4                [4] [3:0]                 0, 16
 *   6  2 + 4                [5:4] [3:0]               0, 32
 *   7  1 + 2 + 4            [6] [5:4] [3:0]           0, 16, 48
 *   8  4 + 4                [7:4] [3:0]               0, 64
 * </pre>
 * (The paper's 3-bit example: the 1-bit block is shifted right by 5 to form the MSB, the 2-bit block
 * by 6 to form the two low bits.)
 *
 * <h2>Blocks, stripes and slots</h2>
 * A plane of width b ∈ {1, 2, 4} is b blocks of {@link #BLOCK_BYTES} = 16 bytes; each byte holds
 * {@code 8/b} slots, slot t = 0 in the most significant bits. The group's weights are 8 <em>stripes</em>
 * of 16 consecutive weights (stripe s = weights 16s .. 16s+15). Weight {@code w} of a group lives in
 * <pre>
 *   stripe = w / 16,  j = w % 16
 *   block  = stripe / (8/b),  slot t = stripe % (8/b)
 *   byte   = planeOffset + 16·block + j,  bits [8 − b·t − 1 .. 8 − b·(t+1)]
 * </pre>
 * so stripe s comes out of one 16-byte block with one AND (slot mask), one shift and one OR per plane:
 * <pre>
 *   1-bit plane, 1 block:   byte j = | w j | w 16+j | w 32+j | w 48+j | w 64+j | w 80+j | w 96+j | w 112+j |
 *                                     bit 7                                                      bit 0
 *   2-bit plane, 2 blocks:  block 0 byte j = | w j | w 16+j | w 32+j | w 48+j |   (stripes 0..3)
 *                           block 1 byte j = | w 64+j | w 80+j | w 96+j | w 112+j | (stripes 4..7)
 *   4-bit plane, 4 blocks:  block k byte j = | w 32k+j | w 32k+16+j |            (stripes 2k, 2k+1)
 * </pre>
 *
 * <h2>Per-channel bit widths</h2>
 * A packed tensor prepends its widths as 3-bit codes B − 1 ({@link ChannelBitWidths}).
 */
public final class WeightletLayout {

    /** Narrowest channel width. */
    public static final int MIN_BITS = 1;
    /** Widest channel width: the 3-bit codes B − 1 of {@link ChannelBitWidths} store 1..8. */
    public static final int MAX_BITS = 8;
    /**
     * Largest int8 level of the 8-bit grid, which is symmetric (−128 is never used, so negation stays on
     * the grid); at 8 bits also the field of value 0.
     */
    public static final int INT8_MAX = 127;
    /** {@code 1..8}, as error messages say it. */
    public static final String BIT_RANGE = MIN_BITS + ".." + MAX_BITS;

    /** Weights per group (R in the paper). */
    public static final int GROUP_WEIGHTS = 128;
    /** Bytes per block: one 128-bit SIMD register. */
    public static final int BLOCK_BYTES = 16;
    /** Weights per stripe: one weight per byte of a block. */
    public static final int STRIPE_WEIGHTS = BLOCK_BYTES;
    /** Stripes per group. */
    public static final int STRIPES_PER_GROUP = GROUP_WEIGHTS / STRIPE_WEIGHTS;

    /** Plane widths per bit width, most significant plane first (index = B). */
    private static final int[][] PLANES = {
            {}, {1}, {2}, {1, 2}, {4}, {1, 4}, {2, 4}, {1, 2, 4}, {4, 4}
    };

    private WeightletLayout() {}

    /** Whether {@code bits} is a channel width this format stores. */
    public static boolean isBitWidth(int bits) {
        return bits >= MIN_BITS && bits <= MAX_BITS;
    }

    /** Throws unless {@code bits} is a supported width. */
    public static int checkBits(int bits) {
        if (!isBitWidth(bits)) {
            throw new IllegalArgumentException("bit width " + bits + " outside " + BIT_RANGE);
        }
        return bits;
    }

    /** Number of primitive planes a B-bit field is split into. */
    public static int planeCount(int bits) {
        return PLANES[checkBits(bits)].length;
    }

    /** Width (1, 2 or 4) of plane {@code plane}, planes counted from the most significant. */
    public static int planeWidth(int bits, int plane) {
        return PLANES[checkBits(bits)][plane];
    }

    /** Position of the plane's least significant bit inside the field. */
    public static int planeShift(int bits, int plane) {
        int[] planes = PLANES[checkBits(bits)];
        int shift = 0;
        for (int p = plane + 1; p < planes.length; p++) shift += planes[p];
        return shift;
    }

    /** Byte offset of the plane inside a whole group. */
    public static int planeByteOffset(int bits, int plane) {
        return planeByteOffset(bits, plane, STRIPES_PER_GROUP);
    }

    /** Byte offset of the plane inside a group of {@code stripes} stripes: the blocks of the planes before it. */
    public static int planeByteOffset(int bits, int plane, int stripes) {
        int[] planes = PLANES[checkBits(bits)];
        int offset = 0;
        for (int p = 0; p < plane; p++) offset += planeBlocks(planes[p], stripes) * BLOCK_BYTES;
        return offset;
    }

    /** Blocks of a plane of width {@code width} that stripes 0 .. stripes−1 fill: {@code ceil(stripes·width / 8)}. */
    public static int planeBlocks(int width, int stripes) {
        if (stripes < 1 || stripes > STRIPES_PER_GROUP) throw new IllegalArgumentException(stripes + " stripes in a group");
        return (stripes * width + 7) / 8;
    }

    /** Stripes of group {@code group} of a channel of {@code length} weights: 8, or fewer in a short last group. */
    public static int groupStripes(int length, int group) {
        int rest = Math.min(GROUP_WEIGHTS, length - group * GROUP_WEIGHTS);
        if (rest <= 0) throw new IllegalArgumentException("group " + group + " is past a channel of " + length + " weights");
        return (rest + STRIPE_WEIGHTS - 1) / STRIPE_WEIGHTS;
    }

    /** Byte, inside a plane of width {@code width}, that holds group weight {@code w}. */
    public static int byteInPlane(int width, int w) {
        int stripe = w / STRIPE_WEIGHTS;
        return BLOCK_BYTES * (stripe / (8 / width)) + w % STRIPE_WEIGHTS;
    }

    /** Right shift that brings group weight {@code w}'s slot down to bit 0 of its byte. */
    public static int slotShift(int width, int w) {
        int slot = (w / STRIPE_WEIGHTS) % (8 / width);
        return 8 - width * (slot + 1);
    }

    public static int groups(int length) {
        return (length + GROUP_WEIGHTS - 1) / GROUP_WEIGHTS;
    }

    /** Bytes of a whole B-bit group: {@code 16·B}. */
    public static int groupBytes(int bits) {
        return BLOCK_BYTES * checkBits(bits);
    }

    /** Bytes of a B-bit group of {@code stripes} stripes: its planes' blocks, {@code Σ 16·ceil(S·b/8)}. */
    public static int groupBytes(int bits, int stripes) {
        return planeByteOffset(bits, planeCount(bits), stripes);
    }

    /**
     * Packed bytes of one channel: {@code 16·B} for each whole group, and the short last group's
     * {@link #groupBytes(int, int)}.
     */
    public static long channelBytes(int bits, int length) {
        if (length < 0) throw new IllegalArgumentException("negative channel length " + length);
        if (length == 0) return 0;
        int last = groups(length) - 1;
        return (long) last * groupBytes(bits) + groupBytes(bits, groupStripes(length, last));
    }

    /** The int8 weight a B-bit field stands for: {@code 2f − (2^B − 1)} below 8 bits, {@code f − 127} at 8. */
    public static byte toInt8(int field, int bits) {
        if (field < 0 || field > maxField(bits)) {
            throw new IllegalArgumentException(field + " is not a valid " + bits + "-bit field (0.." + maxField(bits) + ")");
        }
        return (byte) (bits == MAX_BITS ? field - INT8_MAX : 2 * field - ((1 << bits) - 1));
    }

    /** The B-bit field that stores int8 grid level {@code value}; throws if it is not a B-bit level. */
    public static int toField(int value, int bits) {
        checkBits(bits);
        if (bits == MAX_BITS) {
            if (value < -INT8_MAX || value > INT8_MAX) {
                throw new IllegalArgumentException(value + " is not on the 8-bit grid (−127..127)");
            }
            return value + INT8_MAX;
        }
        int top = (1 << bits) - 1;
        if (value < -top || value > top || (value & 1) == 0) {
            throw new IllegalArgumentException(value + " is not on the " + bits + "-bit grid (odd values in ±" + top + ")");
        }
        return (value + top) / 2;
    }

    /** Largest valid field: 2^B − 1 below 8 bits, 254 at 8 bits (field 255 is invalid). */
    public static int maxField(int bits) {
        return checkBits(bits) == MAX_BITS ? 2 * INT8_MAX : (1 << bits) - 1;
    }
}
