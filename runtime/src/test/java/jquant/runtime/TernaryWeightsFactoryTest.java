package jquant.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import jquant.formats.DType;
import jquant.formats.TernaryCodecs;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.Ptq1Block;
import jquant.formats.quant.T2pBlock;
import jquant.formats.quant.T2pShapeException;
import jquant.formats.quant.TernaryTensor;
import jquant.runtime.ternary.Pq2Matrix;
import jquant.runtime.ternary.Ptq1Matrix;
import jquant.core.WorkerPool;
import jquant.runtime.nativelib.KernelSource;
import jquant.runtime.ternary.NativeTernaryMatrix;
import jquant.runtime.ternary.T2pMatrix;
import jquant.runtime.ternary.TernaryKernels;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The ternary weights factory: one ternary matrix stored in every ternary type (and as exact floats)
 * multiplies bit-identically in the stock and T2P layouts, decode and prefill; T2P tensors read back
 * through {@link Tensor} as the codec defines them; floats that are not ternary, or shapes T2P cannot
 * hold, take the documented fallback.
 */
class TernaryWeightsFactoryTest {

    static final WorkerPool POOL = new WorkerPool(2);
    static final Compute COMPUTE = Compute.scalar().on(POOL);

    @AfterAll
    static void closePool() { POOL.close(); }

    /** Seeded codes in {−1, 0, +1} (and +2 if asked), one fp16 scale per 256 weights so TQ2_0 can hold it. */
    static TernaryTensor ternary(long seed, int rows, int cols, boolean plusTwo) {
        Random rnd = new Random(seed);
        byte[] codes = new byte[rows * cols];
        for (int i = 0; i < codes.length; i++) codes[i] = (byte) (rnd.nextInt(plusTwo ? 4 : 3) - 1);
        float[] scales = new float[rows * cols / 128];
        for (int i = 0; i < scales.length; i += 2) {
            float s = Float.float16ToFloat(Float.floatToFloat16(0.005f + rnd.nextFloat() * 0.05f));
            scales[i] = s;
            scales[i + 1] = s;
        }
        return new TernaryTensor("w", rows, cols, scales, codes);
    }

    static Tensor tensor(DType type, TernaryTensor t, byte[] data) {
        return new Tensor("blk.0.ffn_up.weight", new long[]{t.rows(), t.cols()}, type, MemorySegment.ofArray(data));
    }

    static float[] activations(long seed, int n, int cols) {
        Random rnd = new Random(seed);
        float[] x = new float[n * cols];
        for (int i = 0; i < x.length; i++) x[i] = (float) rnd.nextGaussian();
        return x;
    }

    static float[] multiply(LinearWeights w, float[] x, int n) {
        float[] y = new float[n * w.outFeatures()];
        w.matmul(x, n, y);
        return y;
    }

    @Test
    void everyTernaryStorageMultipliesIdenticallyInStockAndT2pLayouts() throws T2pShapeException {
        TernaryTensor t = ternary(1, 16, 512, false);
        List<Tensor> stored = new ArrayList<>();
        for (DType type : TernaryKernels.types()) stored.add(TernaryCodecs.encode(t, new long[] {16, 512}, type));
        stored.add(new Tensor("blk.0.ffn_up.weight", new long[]{16, 512}, DType.F32, MemorySegment.ofArray(t.toFloats())));
        for (int n : new int[]{1, 3, 8}) {
            float[] x = activations(n, n, 512);
            float[] reference = null;
            for (Tensor s : stored) {
                for (TernaryWeightsFactory.Layout layout : TernaryWeightsFactory.Layout.values()) {
                    TernaryWeightsFactory f = new TernaryWeightsFactory(COMPUTE, layout, true);
                    LinearWeights w = f.create(TensorKind.W_UP, 0, s);
                    assertThat(w).as("%s %s", s.dtype(), layout).isInstanceOf(TernaryLinearWeights.class);
                    float[] y = multiply(w, x, n);
                    if (reference == null) reference = y;
                    assertThat(y).as("%s in layout %s, %d columns", s.dtype(), layout, n).isEqualTo(reference);
                }
            }
        }
    }

    @Test
    void layoutDecidesTheKernelAndEachDecisionIsRecorded() throws T2pShapeException {
        TernaryTensor t = ternary(2, 8, 256, true);
        Tensor pq2 = tensor(DType.PQ2_0, t, Pq2Block.encode(t));
        TernaryWeightsFactory stock = new TernaryWeightsFactory(COMPUTE, TernaryWeightsFactory.Layout.STOCK, true);
        TernaryWeightsFactory t2p = new TernaryWeightsFactory(COMPUTE, TernaryWeightsFactory.Layout.T2P, true);
        assertThat(((TernaryLinearWeights) stock.create(TensorKind.W_UP, 0, pq2)).matrix()).isInstanceOf(Pq2Matrix.class);
        assertThat(((TernaryLinearWeights) t2p.create(TensorKind.W_UP, 0, pq2)).matrix())
                .isInstanceOf(KernelSource.kernels().isPresent() ? NativeTernaryMatrix.class : T2pMatrix.class);
        TernaryTensor p = ternary(3, 8, 256, false);
        assertThat(((TernaryLinearWeights) stock.create(TensorKind.W_UP, 0, tensor(DType.PTQ1_0, p, Ptq1Block.encode(p)))).matrix())
                .isInstanceOf(Ptq1Matrix.class);
        assertThat(stock.decisions()).extracting(TernaryWeightsFactory.Decision::kernel).containsExactly("Pq2Matrix", "Ptq1Matrix");
        assertThat(t2p.decisions().getFirst().reason()).contains("repacked to T2P");
    }

    @Test
    void shapesT2pCannotHoldKeepTheStockKernelAndSaySo() {
        TernaryTensor t = ternary(4, 6, 256, false);   // 6 rows: not a multiple of 4
        TernaryWeightsFactory f = new TernaryWeightsFactory(COMPUTE, TernaryWeightsFactory.Layout.T2P, true);
        LinearWeights w = f.create(TensorKind.W_UP, 0, tensor(DType.PQ2_0, t, Pq2Block.encode(t)));
        assertThat(((TernaryLinearWeights) w).matrix()).isInstanceOf(Pq2Matrix.class);
        assertThat(f.decisions().getFirst().reason()).contains("rows");
        float[] x = activations(5, 2, 256);
        TernaryWeightsFactory stock = new TernaryWeightsFactory(COMPUTE, TernaryWeightsFactory.Layout.STOCK, true);
        assertThat(multiply(w, x, 2)).isEqualTo(multiply(stock.create(TensorKind.W_UP, 0, tensor(DType.PQ2_0, t, Pq2Block.encode(t))), x, 2));
    }

    @Test
    void floatsThatAreNotExactlyTernaryStayDense() {
        TernaryTensor t = ternary(6, 4, 256, false);
        float[] w = t.toFloats();
        w[300] = t.scale(1, 0) / 2;   // row 1 col 44: half the block's scale, not one of {-s, 0, +s}
        TernaryWeightsFactory f = new TernaryWeightsFactory(COMPUTE, TernaryWeightsFactory.Layout.T2P, true);
        LinearWeights dense = f.create(TensorKind.W_UP, 0, new Tensor("blk.0.ffn_up.weight", new long[]{4, 256}, DType.F32, MemorySegment.ofArray(w)));
        assertThat(dense).isInstanceOf(DenseF32Weights.class);
        assertThat(f.decisions().getFirst().reason()).contains("not ternary", "row 1 col 44");
        LinearWeights narrow = f.create(TensorKind.W_UP, 0, new Tensor("narrow", new long[]{4, 64}, DType.F32, MemorySegment.ofArray(new float[256])));
        assertThat(narrow).isInstanceOf(DenseF32Weights.class);
        assertThat(f.decisions().get(1).reason()).contains("cols 64");
    }

    @Test
    void t2pTensorsDecodeAsTheCodecDefinesThem() throws T2pShapeException {
        TernaryTensor t = ternary(7, 12, 384, true);
        Tensor stored = tensor(DType.T2P, t, T2pBlock.encode(t));
        float[] expected = t.toFloats();
        assertThat(stored.toFloats()).isEqualTo(expected);
        for (int r : new int[]{0, 3, 5, 11}) {
            assertThat(stored.row(r)).as("row %d", r).isEqualTo(Arrays.copyOfRange(expected, r * 384, (r + 1) * 384));
        }
        assertThat(stored.byteSize()).isEqualTo(12 * 384 / 128 * 34);
        assertThatThrownBy(() -> new Tensor("w", new long[]{6, 128}, DType.T2P, MemorySegment.ofArray(new byte[6 * 34])))
                .hasMessageContaining("groups of 4");
    }
}
