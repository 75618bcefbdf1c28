package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/** The 5-bit code layout Q5_0 and Q5_1 share: low nibbles as in Q4_0, fifth bits in a 32-bit mask. */
final class Q5Codes {
    private static final int HALF = 16;

    private Q5Codes() {}

    /** Code 0..31 of weight {@code i} (&lt; 32) of the block whose qs and qh start at the given offsets. */
    static int code(MemorySegment src, long qsOffset, long qhOffset, int i) {
        int packed = Blocks.unsignedByte(src, qsOffset + i % HALF);
        int low = i < HALF ? packed & 0x0F : packed >>> 4;
        int high = (Blocks.unsignedByte(src, qhOffset + i / 8) >>> (i % 8)) & 1;
        return low | high << 4;
    }
}
