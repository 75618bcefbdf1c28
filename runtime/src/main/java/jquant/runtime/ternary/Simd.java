package jquant.runtime.ternary;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;
import jquant.runtime.kernels.VectorWidth;

/**
 * The vector shape every ternary kernel runs at: the one {@link VectorWidth} chose at start for the
 * float kernels (the JVM's preferred shape — 512 bits with AVX-512, 256 with AVX2, 128 with NEON or
 * SSE, narrowed by {@code -XX:MaxVectorSize} — or {@code -Djquant.vector.bits}), never below 128 bits.
 * All kernels are exact at 128, 256 and 512.
 */
final class Simd {

    static final VectorShape SHAPE = VectorWidth.FLOATS.vectorBitSize() >= 128
            ? VectorWidth.FLOATS.vectorShape() : VectorShape.S_128_BIT;
    /** The half-width shape (for 4-byte-per-lane data widened to full width). */
    static final VectorShape HALF = VectorShape.forBitSize(SHAPE.vectorBitSize() / 2);

    static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, SHAPE);
    static final VectorSpecies<Short> S = VectorSpecies.of(short.class, SHAPE);
    static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, SHAPE);
    static final VectorSpecies<Float> F = VectorSpecies.of(float.class, SHAPE);
    static final VectorSpecies<Short> S_HALF = VectorSpecies.of(short.class, HALF);
    static final VectorSpecies<Long> L_HALF = VectorSpecies.of(long.class, HALF);
    static final VectorSpecies<Byte> B_HALF = VectorSpecies.of(byte.class, HALF);
    /** Four float lanes: one T2P row group. */
    static final VectorSpecies<Float> F4 = FloatVector.SPECIES_128;

    /** Bytes per vector. */
    static final int VB = B.length();
    /** Short lanes per vector. */
    static final int LS = S.length();
    /** Int lanes per vector. */
    static final int LI = I.length();

    private Simd() {}

    /** For logs and benchmarks: the chosen width. */
    static String describe() { return SHAPE.vectorBitSize() + "-bit vectors"; }

    /** {@code n} rounded up to a multiple of {@code m}. */
    static int roundUp(int n, int m) { return (n + m - 1) / m * m; }
}
