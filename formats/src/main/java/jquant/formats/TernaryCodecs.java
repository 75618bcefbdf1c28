package jquant.formats;

import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.Ptq1Block;
import jquant.formats.quant.T2pBlock;
import jquant.formats.quant.T2pShapeException;
import jquant.formats.quant.TernaryTensor;
import jquant.formats.quant.Tq2Block;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The ternary types' encoders and decoders, registered by {@link DType}: a tensor stored in PQ2_0,
 * TQ2_0, PTQ1_0 or T2P to and from the codes and scales of a {@link TernaryTensor}, exactly as stored.
 */
public final class TernaryCodecs {
    private TernaryCodecs() {}

    /** Whether {@code type} is one of the ternary types these codecs handle. */
    public static boolean isTernary(DType type) {
        return type == DType.PQ2_0 || type == DType.TQ2_0 || type == DType.PTQ1_0 || type == DType.T2P;
    }

    /** The codes and scales of a tensor stored in a ternary type, exactly as stored. */
    public static TernaryTensor decode(Tensor t) {
        byte[] data = t.data().toArray(ValueLayout.JAVA_BYTE);
        return switch (t.dtype()) {
            case PQ2_0 -> Pq2Block.decode(t.name(), data, t.rows(), t.cols());
            case TQ2_0 -> Tq2Block.decode(t.name(), data, t.rows(), t.cols());
            case PTQ1_0 -> Ptq1Block.decode(t.name(), data, t.rows(), t.cols());
            case T2P -> {
                try {
                    yield T2pBlock.decode(t.name(), data, t.rows(), t.cols());
                } catch (T2pShapeException e) {
                    throw new IllegalArgumentException(e.getMessage(), e);   // a T2P tensor on file always has a T2P shape
                }
            }
            default -> throw new IllegalArgumentException(t.name() + " is " + t.dtype() + ", not a ternary type");
        };
    }

    /**
     * {@code t} as a tensor of the ternary {@code type} with {@code shape}.
     *
     * @throws T2pShapeException when {@code type} is T2P and the shape does not fit it
     */
    public static Tensor encode(TernaryTensor t, long[] shape, DType type) throws T2pShapeException {
        byte[] data = switch (type) {
            case PQ2_0 -> Pq2Block.encode(t);
            case TQ2_0 -> Tq2Block.encode(t);
            case PTQ1_0 -> Ptq1Block.encode(t);
            case T2P -> T2pBlock.encode(t);
            default -> throw new IllegalArgumentException(type + " is not a ternary type");
        };
        return new Tensor(t.name(), shape, type, MemorySegment.ofArray(data));
    }
}
