package jquant.runtime;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.Ptq1Block;
import jquant.formats.quant.TernaryTensor;
import jquant.formats.quant.Tq2Block;
import jquant.pack.ternary.TernaryDetector;
import jquant.runtime.ternary.Pq2Matrix;
import jquant.runtime.ternary.Ptq1Matrix;
import jquant.runtime.ternary.RowPool;
import jquant.runtime.ternary.T2pMatrix;
import jquant.runtime.ternary.TernaryMatrix;

/**
 * Gives each ternary tensor a {@link TernaryLinearWeights} on the integer kernels and every other
 * tensor the dense float path. What each tensor became, and why, is kept in {@link #decisions()}.
 *
 * <ul>
 *   <li>PQ2_0 → {@link Pq2Matrix}; PTQ1_0 → {@link Ptq1Matrix}; T2P → {@link T2pMatrix};</li>
 *   <li>TQ2_0 → re-encoded as PQ2_0 (its 256-weight scale copied to both 128-halves: exact) →
 *       {@link Pq2Matrix};</li>
 *   <li>float (F32/F16/BF16) whose every 128-block of a row is exactly {−s, 0, +s} with an fp16 s
 *       ({@link TernaryDetector}, per block) → packed to PQ2_0 losslessly; any other float tensor, or
 *       one whose columns are not a multiple of 128, stays dense;</li>
 *   <li>with {@link Layout#T2P}, every ternary tensor whose shape fits (rows % 4, cols % 128) is
 *       repacked to the T2P row-pair layout at load, the rest keep their stock kernel.</li>
 * </ul>
 */
public final class TernaryWeightsFactory implements LinearWeightsFactory {

    /** Which kernel layout ternary tensors run in. */
    public enum Layout {
        /** The layout they are stored in (TQ2_0 and exactly-ternary floats run as PQ2_0). */
        STOCK,
        /** Repacked to T2P at load where the shape allows. */
        T2P
    }

    /** What one tensor became: its name, the kernel (or "dense, in place") and why. */
    public record Decision(String tensor, String kernel, String reason) {}

    private static final String DENSE = "dense, in place";

    private static volatile RowPool common;

    private final Compute compute;
    private final Layout layout;
    private final RowPool pool;
    private final List<Decision> decisions = Collections.synchronizedList(new ArrayList<>());

    public TernaryWeightsFactory(Compute compute, Layout layout, RowPool pool) {
        this.compute = compute;
        this.layout = layout;
        this.pool = pool;
    }

    /** On the process-wide ternary row pool (one thread per processor, created once). */
    public TernaryWeightsFactory(Compute compute, Layout layout) {
        this(compute, layout, commonPool());
    }

    /** The shared {@link RowPool}: daemon threads, one per available processor. */
    public static RowPool commonPool() {
        RowPool p = common;
        if (p == null) {
            synchronized (TernaryWeightsFactory.class) {
                if (common == null) common = new RowPool(Runtime.getRuntime().availableProcessors());
                p = common;
            }
        }
        return p;
    }

    /** Whether {@code type} is one of the packed ternary types this factory runs on integer kernels. */
    public static boolean isTernaryType(DType type) {
        return type == DType.PQ2_0 || type == DType.TQ2_0 || type == DType.PTQ1_0 || type == DType.T2P;
    }

    /** Each tensor's kernel and reason, in load order. */
    public List<Decision> decisions() {
        synchronized (decisions) {
            return List.copyOf(decisions);
        }
    }

    @Override
    public LinearWeights create(TensorKind kind, int layer, Tensor tensor) {
        int rows = tensor.rows(), cols = tensor.cols();
        String name = tensor.name();
        byte[] pq2;
        String from;
        switch (tensor.dtype()) {
            case T2P -> {
                return ternary(new T2pMatrix(bytes(tensor), rows, cols, pool), name, "stored as T2P");
            }
            case PTQ1_0 -> {
                if (layout == Layout.STOCK) return ternary(new Ptq1Matrix(bytes(tensor), rows, cols, pool), name, "stored as PTQ1_0");
                pq2 = Pq2Block.encode(Ptq1Block.decode(name, bytes(tensor), rows, cols));
                from = "PTQ1_0";
            }
            case PQ2_0 -> {
                pq2 = bytes(tensor);
                from = "PQ2_0";
            }
            case TQ2_0 -> {
                pq2 = Pq2Block.encode(Tq2Block.decode(name, bytes(tensor), rows, cols));
                from = "TQ2_0 (re-encoded as PQ2_0)";
            }
            case F32, F16, BF16 -> {
                if (cols % TernaryTensor.BLOCK != 0) {
                    return dense(tensor, "cols " + cols + " not a multiple of " + TernaryTensor.BLOCK + ": no ternary block layout fits");
                }
                // the first row decides for almost every matrix, without reading (and paging in) the rest
                ExactTernary first = exactTernary(name, tensor.row(0), 1, cols);
                if (first.tensor() == null) return dense(tensor, first.whyNot());
                ExactTernary exact = exactTernary(name, tensor.toFloats(), rows, cols);
                if (exact.tensor() == null) return dense(tensor, exact.whyNot());
                pq2 = Pq2Block.encode(exact.tensor());
                from = "exactly ternary " + tensor.dtype() + " (packed to PQ2_0)";
            }
            default -> {
                return dense(tensor, tensor.dtype() + " is not ternary");
            }
        }
        if (layout == Layout.STOCK) return ternary(new Pq2Matrix(pq2, rows, cols, pool), name, "stored as " + from);
        TernaryMatrix.Selection s = TernaryMatrix.select(name, pq2, rows, cols, pool);
        return ternary(s.matrix(), name, from + "; " + s.reason());
    }

    /** A float matrix as ternary codes and fp16 scales, or why it cannot be one. */
    private record ExactTernary(TernaryTensor tensor, String whyNot) {}

    private static ExactTernary exactTernary(String name, float[] w, int rows, int cols) {
        TernaryTensor t;
        try {
            t = TernaryDetector.detect(name, w, rows, cols, TernaryDetector.Granularity.PER_BLOCK);
        } catch (TernaryDetector.NotTernaryException e) {
            return new ExactTernary(null, "not ternary (" + e.getMessage() + ")");
        }
        for (float s : t.scales()) {
            if (Float.float16ToFloat(Float.floatToFloat16(s)) != s) {
                return new ExactTernary(null, "ternary but its scale " + s + " is not an fp16 value");
            }
        }
        return new ExactTernary(t, null);
    }

    private LinearWeights ternary(TernaryMatrix m, String name, String reason) {
        decisions.add(new Decision(name, m.getClass().getSimpleName(), reason));
        return new TernaryLinearWeights(m);
    }

    /** The tensor multiplied where it is stored ({@link LinearWeightsFactory#inPlace}). */
    private LinearWeights dense(Tensor tensor, String reason) {
        decisions.add(new Decision(tensor.name(), DENSE, reason));
        return LinearWeightsFactory.inPlace(compute).create(null, 0, tensor);
    }

    private static byte[] bytes(Tensor t) {
        return t.data().toArray(ValueLayout.JAVA_BYTE);
    }
}
