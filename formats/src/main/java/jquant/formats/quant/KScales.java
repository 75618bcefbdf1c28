package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * The 12-byte table of eight 6-bit scales and eight 6-bit mins that Q4_K and Q5_K share (ggml's
 * {@code get_scale_min_k4}). Sub-blocks 0..3 keep theirs in the low six bits of bytes 0..3 (scales)
 * and 4..7 (mins); sub-blocks 4..7 keep their low four bits in the nibbles of bytes 8..11 and their
 * top two bits in the spare top bits of bytes 0..3 (scales) and 4..7 (mins).
 *
 * <pre>
 * byte  0 … 3                 4 … 7                 8 … 11
 *       sc[s] | sc[s+4]&gt;&gt;4 &lt;&lt;6   m[s] | m[s+4]&gt;&gt;4 &lt;&lt;6   sc[s+4] &amp; 15 | (m[s+4] &amp; 15) &lt;&lt; 4     (s &lt; 4)
 * </pre>
 */
final class KScales {
    static final int BYTES = 12;
    static final int SUB_BLOCKS = 8;

    private KScales() {}

    /** 6-bit scale of sub-block {@code s} (&lt; 8). */
    static int scale(MemorySegment src, long offset, int s) {
        if (s < 4) return Blocks.unsignedByte(src, offset + s) & 63;
        return (Blocks.unsignedByte(src, offset + s + 4) & 0x0F) | (Blocks.unsignedByte(src, offset + s - 4) >>> 6) << 4;
    }

    /** 6-bit min of sub-block {@code s} (&lt; 8). */
    static int min(MemorySegment src, long offset, int s) {
        if (s < 4) return Blocks.unsignedByte(src, offset + s + 4) & 63;
        return (Blocks.unsignedByte(src, offset + s + 4) >>> 4) | (Blocks.unsignedByte(src, offset + s) >>> 6) << 4;
    }
}
