package jquant.runtime.kernels;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Int8Dot} with the Vector API: per step, {@code L} bytes of each operand (L = int lanes at the
 * preferred width) are widened to int lanes, multiplied and added into an int accumulator; one lane
 * reduction at the end and a scalar tail.
 */
public final class VectorInt8Dot implements Int8Dot {
    /** The preferred width, but at least 8 int lanes: the narrowest byte vector is 64 bits. */
    private static final VectorSpecies<Integer> INTS = IntVector.SPECIES_PREFERRED.length() >= 8
            ? IntVector.SPECIES_PREFERRED : IntVector.SPECIES_256;
    private static final int LANES = INTS.length();
    /** As many bytes as int lanes, so one byte load widens to exactly one int vector. */
    private static final VectorSpecies<Byte> BYTES = VectorSpecies.of(byte.class, VectorShape.forBitSize(LANES * Byte.SIZE));

    @Override
    public int dot(byte[] a, int aOff, byte[] b, int bOff, int len) {
        IntVector acc = IntVector.zero(INTS);
        int k = 0;
        for (; k + LANES <= len; k += LANES) {
            IntVector x = (IntVector) ByteVector.fromArray(BYTES, a, aOff + k).convertShape(VectorOperators.B2I, INTS, 0);
            IntVector w = (IntVector) ByteVector.fromArray(BYTES, b, bOff + k).convertShape(VectorOperators.B2I, INTS, 0);
            acc = x.mul(w).add(acc);
        }
        int sum = acc.reduceLanes(VectorOperators.ADD);
        for (; k < len; k++) sum += a[aOff + k] * b[bOff + k];
        return sum;
    }
}
