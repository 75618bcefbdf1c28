package jquant.formats.quant;

import java.lang.foreign.MemorySegment;

/**
 * The base-3 byte codec shared by TQ1_0 and PTQ1_0. A byte stores up to five trits
 * {@code t0..t4 ∈ {0,1,2}} as the fixed-point fraction {@code b = ceil(q · 256 / 243)} with
 * {@code q = Σ t_k · 3^(4-k)} (most significant trit first). Multiplying by {@code 3^n} modulo 256
 * shifts trit {@code n} to the top, and {@code (x · 3) >> 8} reads it off: one multiply, one shift
 * per trit and no division.
 */
final class Trits {
    /** 3^n for the five trits of a byte. */
    static final int[] POW3 = {1, 3, 9, 27, 81};

    private Trits() {}

    /** Trit {@code n} (0 = most significant) of the stored byte {@code b} (0..255); always 0, 1 or 2. */
    static int digit(int b, int n) {
        int shifted = (b * POW3[n]) & 0xFF;
        return (shifted * 3) >> 8;
    }

    /**
     * Decodes one block of the staged layout used by TQ1_0 and PTQ1_0: {@code qs} is read in stages of
     * {@code stageBytes[s]} bytes; in a stage of {@code c} bytes starting at weight {@code e}, byte
     * {@code m} holds weights {@code e + n·c + m} for {@code n = 0..4}. Then each of the {@code qhBytes}
     * bytes {@code h} holds four weights {@code n·qhBytes + h}, {@code n = 0..3}. Weight = (trit − 1)·d.
     */
    static void decodeStaged(MemorySegment src, long qsOffset, int[] stageBytes,
                             long qhOffset, int qhBytes, float d, float[] dst, int out) {
        long byteAt = qsOffset;
        for (int c : stageBytes) {
            for (int m = 0; m < c; m++) {
                int b = Blocks.unsignedByte(src, byteAt + m);
                for (int n = 0; n < 5; n++) {
                    dst[out + n * c + m] = (digit(b, n) - 1) * d;
                }
            }
            byteAt += c;
            out += 5 * c;
        }
        for (int h = 0; h < qhBytes; h++) {
            int b = Blocks.unsignedByte(src, qhOffset + h);
            for (int n = 0; n < 4; n++) {
                dst[out + n * qhBytes + h] = (digit(b, n) - 1) * d;
            }
        }
    }
}
