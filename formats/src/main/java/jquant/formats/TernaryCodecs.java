package jquant.formats;

import jquant.formats.quant.T2pShapeException;
import jquant.formats.quant.TernaryTensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The ternary types' encoders and decoders, as the {@link DType} table registers them: a tensor stored in
 * a ternary type ({@link DType#isTernary()}: PQ2_0, TQ2_0, PTQ1_0, T2P) to and from the codes and scales
 * of a {@link TernaryTensor}, exactly as stored.
 */
public final class TernaryCodecs {
    private TernaryCodecs() {}

    /** The codes and scales of a tensor stored in a ternary type, exactly as stored. */
    public static TernaryTensor decode(Tensor t) {
        if (!t.dtype().isTernary()) throw new IllegalArgumentException(t.name() + " is " + t.dtype() + ", not a ternary type");
        try {
            return t.dtype().ternaryDecoder().decode(t.name(), t.data().toArray(ValueLayout.JAVA_BYTE), t.rows(), t.cols());
        } catch (T2pShapeException e) {
            throw new IllegalArgumentException(e.getMessage(), e);   // a T2P tensor on file always has a T2P shape
        }
    }

    /**
     * {@code t} as a tensor of the ternary {@code type} with {@code shape}.
     *
     * @throws T2pShapeException when {@code type} is T2P and the shape does not fit it
     */
    public static Tensor encode(TernaryTensor t, long[] shape, DType type) throws T2pShapeException {
        if (!type.isTernary()) throw new IllegalArgumentException(type + " is not a ternary type");
        return new Tensor(t.name(), shape, type, MemorySegment.ofArray(type.ternaryEncoder().encode(t)));
    }
}
