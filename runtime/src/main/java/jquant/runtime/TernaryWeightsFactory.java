package jquant.runtime;

import java.lang.foreign.MemorySegment;
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
import jquant.runtime.kernels.WorkerPool;
import jquant.runtime.ternary.Pq2Matrix;
import jquant.runtime.ternary.Ptq1Matrix;
import jquant.runtime.ternary.T2pMatrix;
import jquant.runtime.ternary.TernaryKernels;
import jquant.runtime.ternary.TernaryMatrix;
import jquant.runtime.ternary.Tq2Matrix;

/**
 * Gives each ternary tensor a {@link TernaryLinearWeights} on the integer kernels and every other
 * tensor the dense float path. What each tensor became, and why, is kept in {@link #decisions()}.
 *
 * <ul>
 *   <li>PQ2_0 → {@link Pq2Matrix}; TQ2_0 → {@link Tq2Matrix}; PTQ1_0 → {@link Ptq1Matrix}; T2P →
 *       {@link T2pMatrix}: all on the tensor's stored bytes (a slice of the mapped file), no copy;</li>
 *   <li>float (F32/F16/BF16) whose every 128-block of a row is exactly {−s, 0, +s} with an fp16 s
 *       ({@link TernaryDetector}, per block) → packed once to PQ2_0 losslessly (a 2.125-bit copy, 1/15
 *       of an F32 tensor); any other float tensor, or one whose columns are not a multiple of 128,
 *       stays dense;</li>
 *   <li>with {@link Layout#T2P}, every stock ternary tensor whose shape fits (rows % 4, cols % 128) is
 *       repacked to the T2P row-pair layout at load, by request: an off-heap copy the size of the
 *       tensor (PQ2_0 and TQ2_0: about the file's size; PTQ1_0: 21% larger), made once; the rest
 *       keep their stock kernel in place.</li>
 * </ul>
 */
public final class TernaryWeightsFactory implements LinearWeightsFactory {

    /** Which kernel layout ternary tensors run in. */
    public enum Layout {
        /** The layout they are stored in (exactly-ternary floats run as PQ2_0). */
        STOCK,
        /** Repacked to T2P at load where the shape allows. */
        T2P
    }

    /** What one tensor became: its name, the kernel (or "dense, in place") and why. */
    public record Decision(String tensor, String kernel, String reason) {}

    private static final String DENSE = "dense, in place";

    private final Compute compute;
    private final Layout layout;
    private final WorkerPool pool;
    private final List<Decision> decisions = Collections.synchronizedList(new ArrayList<>());

    /** Ternary kernels on {@code compute}'s worker pool, the one every kernel of the model shares. */
    public TernaryWeightsFactory(Compute compute, Layout layout) {
        this.compute = compute;
        this.layout = layout;
        this.pool = compute.pool();
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
        MemorySegment pq2;
        String from;
        switch (tensor.dtype()) {
            case T2P -> {
                return ternary(TernaryKernels.t2p(tensor.data(), rows, cols, pool), name, "stored as T2P");
            }
            case PTQ1_0 -> {
                if (layout == Layout.STOCK) return ternary(new Ptq1Matrix(tensor.data(), rows, cols, pool), name, "stored as PTQ1_0");
                pq2 = MemorySegment.ofArray(Pq2Block.encode(Ptq1Block.decode(name, bytes(tensor), rows, cols)));
                from = "PTQ1_0";
            }
            case TQ2_0 -> {
                if (layout == Layout.STOCK) return ternary(TernaryKernels.tq2(tensor.data(), rows, cols, pool), name, "stored as TQ2_0");
                pq2 = MemorySegment.ofArray(Pq2Block.encode(Tq2Block.decode(name, bytes(tensor), rows, cols)));
                from = "TQ2_0";
            }
            case PQ2_0 -> {
                if (layout == Layout.STOCK) return ternary(new Pq2Matrix(tensor.data(), rows, cols, pool), name, "stored as PQ2_0");
                pq2 = tensor.data();
                from = "PQ2_0";
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
                byte[] packed = Pq2Block.encode(exact.tensor());
                from = "exactly ternary " + tensor.dtype() + " (packed to PQ2_0)";
                if (layout == Layout.STOCK) return ternary(new Pq2Matrix(TernaryMatrix.offHeap(packed), rows, cols, pool), name, from);
                pq2 = MemorySegment.ofArray(packed);
            }
            default -> {
                return dense(tensor, tensor.dtype() + " is not ternary");
            }
        }
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
        return new TernaryLinearWeights(m, pool);
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
