package jquant.formats.weightlet;

import java.lang.foreign.MemorySegment;

/** Writes one channel of unsigned B-bit fields in some packed format. */
public interface ChannelPacker {

    /** Bytes one channel of {@code length} B-bit weights takes in this format. */
    long channelBytes(int bits, int length);

    /**
     * Packs {@code fields[fieldsOffset .. fieldsOffset+length)} (unsigned, each at most {@link WeightletLayout#maxField}) into
     * {@code dst} at {@code dstOffset}, writing exactly {@link #channelBytes} bytes.
     *
     * @throws IllegalArgumentException if a field does not fit {@code bits} bits
     */
    void packChannel(byte[] fields, int fieldsOffset, int bits, int length, MemorySegment dst, long dstOffset);

    /** Throws unless every field in the range fits {@code bits} bits. */
    static void checkFields(byte[] fields, int fieldsOffset, int bits, int length) {
        WeightletLayout.checkBits(bits);
        java.util.Objects.checkFromIndexSize(fieldsOffset, length, fields.length);
        int max = WeightletLayout.maxField(bits);
        for (int i = 0; i < length; i++) {
            int f = fields[fieldsOffset + i] & 0xFF;
            if (f > max) {
                throw new IllegalArgumentException("field " + f + " at index " + i + " is not a valid " + bits
                        + "-bit field (0.." + max + ")");
            }
        }
    }
}
