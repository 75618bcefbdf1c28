package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * The 2-bit code layout Q2_K and Q3_K share: each 128-weight half of a super-block is 32 bytes, and
 * weight {@code 128h + 32n + r} sits at bits {@code 2n..2n+1} of byte {@code 32h + r}.
 */
final class TwoBitPlanes {
    static final int HALF_WEIGHTS = 128;
    static final int HALF_BYTES = 32;

    private TwoBitPlanes() {}

    /** The 2-bit code of weight {@code e} (&lt; 256) of the super-block whose codes start at {@code qsOffset}. */
    static int code(MemorySegment src, long qsOffset, int e) {
        int h = e / HALF_WEIGHTS;
        int n = e % HALF_WEIGHTS / HALF_BYTES;
        int r = e % HALF_BYTES;
        return (Blocks.unsignedByte(src, qsOffset + HALF_BYTES * h + r) >>> (2 * n)) & 3;
    }
}
