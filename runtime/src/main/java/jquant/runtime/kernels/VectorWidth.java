package jquant.runtime.kernels;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * The vector width every float kernel runs at, chosen once at start: the platform's preferred
 * species (which {@code -XX:MaxVectorSize} narrows), or {@code -Djquant.vector.bits=128|256|512}.
 * Kernels take their species from here, never a fixed one, so they run natively on AVX2, AVX-512 and
 * NEON; the kernel tests also run with the JVM limited to 256 and 128 bits.
 */
public final class VectorWidth {

    /** Float lanes: the width of the kernels. */
    public static final VectorSpecies<Float> FLOATS = floats();
    /** Int lanes of the same shape. */
    public static final VectorSpecies<Integer> INTS = IntVector.SPECIES_PREFERRED.withShape(FLOATS.vectorShape());
    /** As many short lanes as float lanes (half the shape): one float16/bfloat16 load per float vector. */
    public static final VectorSpecies<Short> SHORTS = VectorSpecies.of(short.class,
            VectorShape.forBitSize(FLOATS.length() * Short.SIZE));
    /** Bytes per int8 load: as many as float lanes, but at least 8 (the narrowest byte vector). */
    public static final VectorSpecies<Byte> BYTES = VectorSpecies.of(byte.class,
            VectorShape.forBitSize(Math.max(FLOATS.length(), 8) * Byte.SIZE));

    private VectorWidth() {}

    private static VectorSpecies<Float> floats() {
        String bits = System.getProperty("jquant.vector.bits");
        if (bits == null || bits.isBlank()) return FloatVector.SPECIES_PREFERRED;
        return switch (bits.trim()) {
            case "128" -> FloatVector.SPECIES_128;
            case "256" -> FloatVector.SPECIES_256;
            case "512" -> FloatVector.SPECIES_512;
            default -> throw new IllegalArgumentException("jquant.vector.bits must be 128, 256 or 512, got " + bits);
        };
    }

    /** For {@code --verbose}: the width in use and why. */
    public static String describe() {
        return FLOATS.vectorBitSize() + "-bit vectors (" + FLOATS.length() + " float lanes"
                + (System.getProperty("jquant.vector.bits") != null ? ", set by jquant.vector.bits" : ", the platform's preferred")
                + ")";
    }
}
