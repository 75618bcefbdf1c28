package jquant.runtime;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import jquant.formats.DType;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.TernaryCodecs;
import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.TernaryDetector;
import jquant.formats.quant.TernaryTensor;
import jquant.core.WorkerPool;
import jquant.runtime.ggml.IntegerBlockWeights;
import jquant.runtime.ternary.Pq2Matrix;
import jquant.runtime.ternary.TernaryKernels;
import jquant.runtime.ternary.TernaryMatrix;

/**
 * Gives each ternary tensor a {@link TernaryLinearWeights} on the integer kernels and every other
 * tensor the dense float path. What each tensor became, and why, is kept in {@link #decisions()}.
 *
 * <ul>
 *   <li>each stored ternary type → its integer kernels ({@link TernaryKernels}: PQ2_0, TQ2_0, PTQ1_0,
 *       T2P), on the tensor's stored bytes (a slice of the mapped file), no copy; with {@code copies}, T2P on
 *       the native AVX-512 kernels reads a copy in sixteen-row tiles instead, made at its first product;</li>
 *   <li>float (F32/F16/BF16) whose every 128-block of a row is exactly {−s, 0, +s} with an fp16 s
 *       ({@link TernaryDetector}, per block) → packed once to PQ2_0 losslessly (a 2.125-bit copy, 1/15
 *       of an F32 tensor); any other float tensor, or one whose columns are not a multiple of 128,
 *       stays dense;</li>
 *   <li>llama.cpp's Q4_0, Q8_0, Q4_K, Q5_K and Q6_K → integer block dot products on int8-quantized
 *       activations, as llama.cpp computes them ({@link IntegerBlockWeights}), in place;</li>
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
    private final boolean copies;
    private final WorkerPool pool;
    private final List<Decision> decisions = Collections.synchronizedList(new ArrayList<>());

    /**
     * Ternary kernels on {@code compute}'s worker pool, the one every kernel of the model shares; {@code copies}: whether a
     * stored tensor may run on a copy its native kernel reads faster ({@link jquant.runtime.KernelChoice#copies}).
     */
    public TernaryWeightsFactory(Compute compute, Layout layout, boolean copies) {
        this.compute = compute;
        this.layout = layout;
        this.copies = copies;
        this.pool = compute.pool();
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
        DType type = tensor.dtype();
        MemorySegment pq2;
        String from;
        if (TernaryKernels.serves(type)) {
            if (layout == Layout.STOCK || type == DType.T2P) {
                return ternary(TernaryKernels.on(type, tensor.data(), rows, cols, pool, copies), name, "stored as " + type);
            }
            pq2 = type == DType.PQ2_0 ? tensor.data() : MemorySegment.ofArray(Pq2Block.encode(TernaryCodecs.decode(tensor)));
            from = type.name();
        } else if (type == DType.F32 || type == DType.F16 || type == DType.BF16) {
            if (cols % TernaryTensor.BLOCK != 0) {
                return dense(tensor, "cols " + cols + " not a multiple of " + TernaryTensor.BLOCK + ": no ternary block layout fits");
            }
            // the first row decides for almost every matrix, without reading (and paging in) the rest
            ExactTernary first = exactTernary(name, tensor.row(0), 1, cols);
            if (first.tensor() == null) return dense(tensor, first.whyNot());
            ExactTernary exact = exactTernary(name, tensor.toFloats(), rows, cols);
            if (exact.tensor() == null) return dense(tensor, exact.whyNot());
            byte[] packed = Pq2Block.encode(exact.tensor());
            from = "exactly ternary " + type + " (packed to PQ2_0)";
            if (layout == Layout.STOCK) return ternary(new Pq2Matrix(TernaryMatrix.offHeap(packed), rows, cols, pool), name, from);
            pq2 = MemorySegment.ofArray(packed);
        } else {
            return dense(tensor, type + " is not ternary");
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

    /**
     * The tensor multiplied where it is stored: llama.cpp's common block types by integer block dot
     * products as llama.cpp computes them ({@link IntegerBlockWeights}), the rest as
     * {@link LinearWeightsFactory#inPlace}.
     */
    private LinearWeights dense(Tensor tensor, String reason) {
        if (IntegerBlockWeights.serves(tensor)) {
            IntegerBlockWeights w = new IntegerBlockWeights(tensor, compute);
            decisions.add(new Decision(tensor.name(), w.kernel(), reason));
            return w;
        }
        decisions.add(new Decision(tensor.name(), DENSE, reason));
        return LinearWeightsFactory.inPlace(compute).create(null, 0, tensor);
    }
}
