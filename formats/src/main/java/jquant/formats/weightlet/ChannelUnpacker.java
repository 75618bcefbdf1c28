package jquant.formats.weightlet;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/** Turns one packed channel back into int8 weights ({@link WeightletLayout#toInt8}). */
public interface ChannelUnpacker {

    /**
     * Unpacks the channel of {@code length} B-bit weights stored at {@code src[srcOffset]} into
     * {@code dst[dstOffset .. dstOffset+length)}.
     */
    void unpackChannel(MemorySegment src, long srcOffset, int bits, int length, byte[] dst, int dstOffset);

    /** The byte[] form of {@link #unpackChannel(MemorySegment, long, int, int, byte[], int)}. */
    default void unpackChannel(byte[] src, int srcOffset, int bits, int length, byte[] dst, int dstOffset) {
        unpackChannel(MemorySegment.ofArray(src), srcOffset, bits, length, dst, dstOffset);
    }

    /** Unpacks channels {@code [first, end)} of {@code tensor}; channel c lands at {@code dst[c·length]}. */
    default void unpackChannels(PackedTensor tensor, int first, int end, byte[] dst) {
        Objects.checkFromToIndex(first, end, tensor.channels());
        if ((long) tensor.channels() * tensor.length() > dst.length) {
            throw new IllegalArgumentException("destination of " + dst.length + " bytes cannot hold "
                    + tensor.channels() + "×" + tensor.length() + " weights");
        }
        for (int c = first; c < end; c++) {
            unpackChannel(tensor.data(), tensor.channelOffset(c), tensor.bits(c), tensor.length(), dst,
                    c * tensor.length());
        }
    }

    /** The whole tensor as int8, row-major [channels, length]. */
    default byte[] unpackTensor(PackedTensor tensor) {
        byte[] dst = new byte[Math.toIntExact((long) tensor.channels() * tensor.length())];
        unpackChannels(tensor, 0, tensor.channels(), dst);
        return dst;
    }

    /** Throws unless the packed channel and the destination range exist. */
    static void checkChannel(MemorySegment src, long srcOffset, long packedBytes, int length, int dstLength,
                             int dstOffset) {
        Objects.checkFromIndexSize(srcOffset, packedBytes, src.byteSize());
        Objects.checkFromIndexSize(dstOffset, length, dstLength);
    }
}
