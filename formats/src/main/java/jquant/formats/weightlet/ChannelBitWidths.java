package jquant.formats.weightlet;

/**
 * The per-channel bit-width table a packed tensor starts with (paper §4.2: "a compact INT3 array
 * representing eight precision levels from 1 to 8 bits").
 *
 * <p>Channel c's code {@code B − 1} occupies bits {@code 3c .. 3c+2} of a little-endian bit stream:
 * bit k of the stream is bit {@code k % 8} of byte {@code k / 8}. The table is {@code ceil(3·C/8)} bytes;
 * unused high bits of the last byte are zero.
 */
public final class ChannelBitWidths {

    public static final int CODE_BITS = 3;

    private ChannelBitWidths() {}

    public static int encodedBytes(int channels) {
        return (int) (((long) channels * CODE_BITS + 7) / 8);
    }

    public static byte[] encode(int[] bits) {
        byte[] table = new byte[encodedBytes(bits.length)];
        for (int c = 0; c < bits.length; c++) {
            int code = WeightletLayout.checkBits(bits[c]) - 1;
            for (int k = 0; k < CODE_BITS; k++) {
                int bit = c * CODE_BITS + k;
                table[bit >>> 3] |= (byte) (((code >>> k) & 1) << (bit & 7));
            }
        }
        return table;
    }

    public static int[] decode(byte[] table, int channels) {
        if (table.length != encodedBytes(channels)) {
            throw new IllegalArgumentException("bit-width table of " + table.length + " bytes, " + channels
                    + " channels need " + encodedBytes(channels));
        }
        int[] bits = new int[channels];
        for (int c = 0; c < channels; c++) {
            int code = 0;
            for (int k = 0; k < CODE_BITS; k++) {
                int bit = c * CODE_BITS + k;
                code |= ((table[bit >>> 3] >>> (bit & 7)) & 1) << k;
            }
            bits[c] = code + 1;
        }
        return bits;
    }
}
