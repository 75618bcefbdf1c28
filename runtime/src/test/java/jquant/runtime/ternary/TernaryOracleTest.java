package jquant.runtime.ternary;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import jquant.formats.DType;
import jquant.formats.TernaryCodecs;
import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.T2pBlock;
import jquant.formats.quant.T2pShapeException;
import jquant.formats.quant.TernaryTensor;
import jquant.core.WorkerPool;
import jquant.runtime.nativelib.NativeKernels;
import jquant.runtime.nativelib.NativeKernels.TernaryLayout;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The integer oracle: every kernel (vector and scalar twin, decode and prefill; the Java kernels and
 * the C library's for each instruction set this CPU runs) against a plain loop over the ternary
 * codes, exactly — integer block dots compared before any float, then the floats of the shared
 * formula compared bit for bit. {@code ./run-tests} runs this class again with the JVM limited to 256-
 * and 128-bit vectors, so every Java kernel width is checked on one machine (the native ones are
 * 512-bit AVX-512, 256-bit AVX2 and 128-bit NEON by instruction set).
 */
class TernaryOracleTest {

    /** A type's kernels: the Java ones ({@code isa} null), the table-lookup ones ({@code lut}), or the C library's for one instruction set. */
    record Kernels(DType format, NativeKernels isa, boolean lut) {
        @Override
        public String toString() { return isa != null ? format + " " + isa.isa() : lut ? format + " LUT" : format.name(); }
    }

    /** Every ternary type's Java kernels, and its table-lookup and native ones for each instruction set this CPU runs. */
    static List<Kernels> kernels() {
        List<Kernels> all = new ArrayList<>();
        for (DType f : TernaryKernels.types()) {
            all.add(new Kernels(f, null, false));
            if (f == DType.T2P) all.add(new Kernels(f, null, true));
            if (f == DType.T2P || f == DType.TQ2_0) for (NativeKernels isa : NativeKernels.supported()) all.add(new Kernels(f, isa, false));
        }
        return all;
    }

    enum Activations { RANDOM, ZEROS, CONSTANT, EXTREME }

    static final int[] WIDTHS = {1, 2, 3, 4, 5, 7, 8, 9, 17};
    static final WorkerPool TWO_THREADS = new WorkerPool(2), INLINE = new WorkerPool(1);

    @AfterAll
    static void closePools() {
        TWO_THREADS.close();
        INLINE.close();
    }

    static TernaryTensor codes(long seed, int rows, int cols, boolean plusTwo) { return codes(seed, rows, cols, plusTwo, false); }

    /** Seeded codes and fp16 scales; {@code pairedScales}: both 128-halves of a 256-block share one (TQ2_0 holds one). */
    static TernaryTensor codes(long seed, int rows, int cols, boolean plusTwo, boolean pairedScales) {
        Random rnd = new Random(seed);
        byte[] codes = new byte[rows * cols];
        for (int i = 0; i < codes.length; i++) codes[i] = (byte) (rnd.nextInt(plusTwo ? 4 : 3) - 1);
        float[] scales = new float[rows * cols / 128];
        for (int i = 0; i < scales.length; i++) {
            scales[i] = pairedScales && i % 2 == 1 ? scales[i - 1]
                    : Float.float16ToFloat(Float.floatToFloat16((rnd.nextFloat() - 0.5f) * 0.02f));
        }
        return new TernaryTensor("w", rows, cols, scales, codes);
    }

    static ActivationBlocks column(Activations kind, int cols, Random rnd) {
        byte[] q = new byte[cols];
        for (int i = 0; i < cols; i++) {
            q[i] = (byte) switch (kind) {
                case RANDOM -> rnd.nextInt(255) - 127;
                case ZEROS -> 0;
                case CONSTANT -> 37;
                case EXTREME -> (i / 3) % 2 == 0 ? 127 : -127;
            };
        }
        float[] scales = new float[cols / 128];
        for (int b = 0; b < scales.length; b++) scales[b] = kind == Activations.ZEROS ? 0f : rnd.nextFloat() * 0.05f + 1e-3f;
        return ActivationBlocks.ofIntegers(q, scales);
    }

    /** The plain loop: dot[row][b] = Σ code · q. */
    static int[] oracleDots(TernaryTensor t, ActivationBlocks x) {
        int nb = t.cols() / 128;
        int[] dots = new int[t.rows() * nb];
        for (int r = 0; r < t.rows(); r++) {
            for (int c = 0; c < t.cols(); c++) dots[r * nb + c / 128] += t.code(r, c) * x.q(c);
        }
        return dots;
    }

    /** The float formula of {@link ActivationBlocks} over the oracle's ints. */
    static float[] oracleOutputs(TernaryTensor t, int[] dots, ActivationBlocks x) {
        int nb = t.cols() / 128;
        float[] y = new float[t.rows()];
        for (int r = 0; r < t.rows(); r++) {
            float acc = 0f;
            for (int b = 0; b < nb; b++) acc = acc + dots[r * nb + b] * (t.scale(r, b) * x.scale(b));
            y[r] = acc;
        }
        return y;
    }

    /** {@code t} stored as {@code k}'s type through its codec, on {@code k}'s kernels. */
    static TernaryMatrix pack(Kernels k, TernaryTensor t, WorkerPool pool) throws T2pShapeException {
        DType type = k.format();
        MemorySegment data = TernaryCodecs.encode(t, new long[] {t.rows(), t.cols()}, type).data();
        TernaryMatrix m;
        if (k.lut()) {
            m = new LutMatrix(data, t.rows(), t.cols(), pool);
        } else if (k.isa() != null) {
            m = new NativeTernaryMatrix(type == DType.T2P ? TernaryLayout.T2P : TernaryLayout.TQ2_0, data, t.rows(), t.cols(), pool, k.isa());
        } else {
            m = TernaryKernels.javaOn(type, data, t.rows(), t.cols(), pool);
        }
        assertThat(m.type()).isEqualTo(type);
        return m;
    }

    /** Whether {@code type}'s codec stores code +2 (u = 3; PTQ1_0's trits cannot). */
    static boolean holdsPlusTwo(DType type) throws T2pShapeException {
        int cols = type.blockSize();
        byte[] codes = new byte[4 * cols];
        Arrays.fill(codes, (byte) 2);
        try {
            TernaryCodecs.encode(new TernaryTensor("w", 4, cols, new float[4 * cols / TernaryTensor.BLOCK], codes), new long[] {4, cols}, type);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** Codes {@code type} can hold: +2 only where its codec stores it, one scale per stored block (TQ2_0's hold 256 weights). */
    static TernaryTensor codesFor(DType type, long seed, int rows, int cols) throws T2pShapeException {
        return codes(seed, rows, cols, holdsPlusTwo(type), type.blockSize() > TernaryTensor.BLOCK);
    }

    static Stream<Arguments> cases() {
        List<Arguments> all = new ArrayList<>();
        for (Kernels f : kernels())
            for (int rows : new int[] {4, 8, 12})
                for (int cols : new int[] {256, 512, 1024})
                    for (Activations a : Activations.values())
                        for (int width : WIDTHS) all.add(Arguments.of(f, rows, cols, a, width));
        return all.stream();
    }

    @ParameterizedTest(name = "{0} {1}×{2} {3} width {4}")
    @MethodSource("cases")
    void kernelsEqualThePlainLoopExactly(Kernels f, int rows, int cols, Activations kind, int width) throws Exception {
        long seed = 31L * rows + 7L * cols + width + 1000L * kind.ordinal();
        TernaryTensor t = codesFor(f.format(), seed, rows, cols);
        Random rnd = new Random(seed + 1);
        ActivationBlocks[] xs = new ActivationBlocks[width];
        for (int c = 0; c < width; c++) xs[c] = column(kind, cols, rnd);

        TernaryMatrix m = pack(f, t, width % 2 == 0 ? TWO_THREADS : INLINE);
        int[][] vectorDots = m.blockDots(xs), scalarDots = m.blockDotsScalar(xs);
        float[][] vectorY = m.multiply(xs), scalarY = m.multiplyScalar(xs);
        for (int c = 0; c < width; c++) {
            int[] dots = oracleDots(t, xs[c]);
            float[] y = oracleOutputs(t, dots, xs[c]);
            assertThat(vectorDots[c]).as("vector dots, column %d", c).isEqualTo(dots);
            assertThat(scalarDots[c]).as("scalar dots, column %d", c).isEqualTo(dots);
            assertThat(vectorY[c]).as("vector floats, column %d", c).isEqualTo(y);
            assertThat(scalarY[c]).as("scalar floats, column %d", c).isEqualTo(y);
        }
        float[] single = new float[rows];
        m.matvec(xs[0], single);
        assertThat(single).isEqualTo(vectorY[0]);
    }

    static Stream<Arguments> oddBlockCounts() {
        List<Arguments> all = new ArrayList<>();
        for (Kernels f : kernels())
            for (int blocks : new int[] {1, 3, 5, 9})
                for (int width : new int[] {1, 3, 6}) all.add(Arguments.of(f, 8, blocks * f.format().blockSize(), Activations.RANDOM, width));
        return all.stream();
    }

    /** Blocks per row not a multiple of the kernels' loop units (up to 32 blocks per tree at 512 bits). */
    @ParameterizedTest(name = "{0} {1}×{2} width {4}")
    @MethodSource("oddBlockCounts")
    void oddBlockCountsAreExactToo(Kernels f, int rows, int cols, Activations kind, int width) throws Exception {
        kernelsEqualThePlainLoopExactly(f, rows, cols, kind, width);
    }

    /** Shapes that cross the kernels' tiling: more rows than a batch, more blocks than a decode chunk. */
    @ParameterizedTest(name = "{0} {1}×{2}")
    @MethodSource("tiledShapes")
    void tilesAndBatchesAreExact(Kernels f, int rows, int cols) throws Exception {
        TernaryTensor t = codesFor(f.format(), rows + cols, rows, cols);
        Random rnd = new Random(cols);
        ActivationBlocks[] xs = new ActivationBlocks[5];
        for (int c = 0; c < xs.length; c++) xs[c] = column(Activations.RANDOM, cols, rnd);
        for (WorkerPool pool : new WorkerPool[] {INLINE, TWO_THREADS}) {
            TernaryMatrix m = pack(f, t, pool);
            for (ActivationBlocks[] batch : new ActivationBlocks[][] {{xs[0]}, xs, more(xs, 37, cols)}) {
                int[][] got = m.blockDots(batch);
                float[][] y = m.multiply(batch);
                for (int c = 0; c < batch.length; c++) {
                    int[] dots = oracleDots(t, batch[c]);
                    assertThat(got[c]).isEqualTo(dots);
                    assertThat(y[c]).isEqualTo(oracleOutputs(t, dots, batch[c]));
                }
            }
        }
    }

    /** {@code n} random columns, the first ones those of {@code xs}: a batch longer than the kernels' column tiles. */
    static ActivationBlocks[] more(ActivationBlocks[] xs, int n, int cols) {
        ActivationBlocks[] all = java.util.Arrays.copyOf(xs, n);
        Random rnd = new Random(n);
        for (int c = xs.length; c < n; c++) all[c] = column(c % 2 == 0 ? Activations.RANDOM : Activations.EXTREME, cols, rnd);
        return all;
    }

    static Stream<Arguments> tiledShapes() {
        int cols = 128 * 38;
        // 132 rows, 33 row groups: several batches of 6 (T2P) or 6..16 rows (stock), with a remainder; 20 and 52 rows: an even
        // count of sixteen-row groups whose last is short, the second of the decode kernel's two streams on the sixteen-row copy;
        // T2P with 37 blocks a row: an odd count of blocks
        return kernels().stream().flatMap(f -> Stream.concat(Stream.of(132, 20, 52).map(rows -> Arguments.of(f, rows, cols)),
                f.format() == DType.T2P ? Stream.of(Arguments.of(f, 52, 128 * 37)) : Stream.empty()));
    }

    @Test
    void t2pConvertsEveryFiniteFp16ScaleExactly() throws Exception {
        short[] special = {0x0000, (short) 0x8000, 0x0001, (short) 0x8001, 0x03FF, 0x0400, 0x3C00, (short) 0xBC00, 0x7BFF,
                (short) 0xFBFF, 0x1234, (short) 0x9876};
        TernaryTensor base = codes(77, 4, 128 * special.length, true);
        float[] scales = new float[4 * special.length];
        for (int r = 0; r < 4; r++) {
            for (int b = 0; b < special.length; b++) scales[r * special.length + b] = Float.float16ToFloat(special[(b + 3 * r) % special.length]);
        }
        TernaryTensor t = new TernaryTensor("w", 4, 128 * special.length, scales, base.codes());
        ActivationBlocks x = column(Activations.RANDOM, t.cols(), new Random(78));
        for (Kernels f : kernels()) {
            if (f.format() != DType.T2P && f.format() != DType.PQ2_0) continue;
            TernaryMatrix m = pack(f, t, INLINE);
            assertThat(m.multiply(x)[0]).as("%s", f).isEqualTo(oracleOutputs(t, oracleDots(t, x), x));
            assertThat(m.multiply(x, x)[1]).as("%s", f).isEqualTo(oracleOutputs(t, oracleDots(t, x), x));
        }
    }

    /** Infinite and NaN fp16 scales (read in place, never checked at load) give what the shared formula gives. */
    @Test
    void infiniteAndNanScalesFollowTheFormula() throws Exception {
        TernaryTensor t = codes(79, 4, 256, false);
        byte[] data = T2pBlock.encode(t);
        data[136 + 2 * 2] = 0;                  // row 2 of the second block: +inf (0x7C00)
        data[136 + 2 * 2 + 1] = (byte) 0x7C;
        data[2 * 3] = 0x01;                     // row 3 of the first block: a NaN
        data[2 * 3 + 1] = (byte) 0xFE;
        ActivationBlocks x = column(Activations.RANDOM, 256, new Random(80));
        List<TernaryMatrix> matrices = new ArrayList<>(List.of(new T2pMatrix(MemorySegment.ofArray(data), 4, 256, INLINE)));
        for (NativeKernels isa : NativeKernels.supported()) matrices.add(new NativeTernaryMatrix(TernaryLayout.T2P, MemorySegment.ofArray(data), 4, 256, INLINE, isa));
        for (TernaryMatrix m : matrices) {
            assertThat(m.multiply(x)[0]).isEqualTo(m.multiplyScalar(x)[0]);
            assertThat(m.multiply(x, x)[1]).isEqualTo(m.multiplyScalar(x)[0]);
            assertThat(m.multiply(x)[0][2]).isInfinite();
            assertThat(m.multiply(x)[0][3]).isNaN();
        }
    }

    @Test
    void t2pRepackAndStockGiveIdenticalDots() {
        TernaryTensor t = codes(5, 12, 1024, true);
        Random rnd = new Random(6);
        ActivationBlocks[] xs = {column(Activations.RANDOM, 1024, rnd), column(Activations.EXTREME, 1024, rnd),
                column(Activations.RANDOM, 1024, rnd)};
        TernaryMatrix.Selection sel = TernaryMatrix.select("blk.0.ffn_up", MemorySegment.ofArray(Pq2Block.encode(t)), 12, 1024, INLINE);
        assertThat(sel.matrix()).isInstanceOfAny(T2pMatrix.class, NativeTernaryMatrix.class);
        TernaryMatrix stock = new Pq2Matrix(MemorySegment.ofArray(Pq2Block.encode(t)), 12, 1024, INLINE);
        assertThat(sel.matrix().blockDots(xs)).isDeepEqualTo(stock.blockDots(xs));
        assertThat(sel.matrix().blockDots(xs[0])).isDeepEqualTo(stock.blockDots(xs[0]));
        assertThat(sel.matrix().multiply(xs)).isDeepEqualTo(stock.multiply(xs));
    }

    static Stream<Arguments> rejectedShapes() {
        return Stream.of(Arguments.of(1, 256), Arguments.of(2, 512), Arguments.of(3, 128), Arguments.of(5, 1024),
                Arguments.of(6, 256), Arguments.of(7, 384), Arguments.of(9, 512), Arguments.of(10, 128));
    }

    @ParameterizedTest(name = "{0}×{1} keeps the stock layout")
    @MethodSource("rejectedShapes")
    void selectorKeepsStockForRowsNotMultipleOfFourAndStaysExact(int rows, int cols) {
        TernaryTensor t = codes(rows * 100L + cols, rows, cols, true);
        TernaryMatrix.Selection sel = TernaryMatrix.select("blk.2.attn_k", MemorySegment.ofArray(Pq2Block.encode(t)), rows, cols, INLINE);
        assertThat(sel.matrix()).isInstanceOf(Pq2Matrix.class);
        assertThat(sel.reason()).contains("blk.2.attn_k").contains(rows + "×" + cols).contains("stock");
        ActivationBlocks[] xs = {column(Activations.RANDOM, cols, new Random(rows)), column(Activations.EXTREME, cols, new Random(1))};
        int[][] dots = sel.matrix().blockDots(xs);
        for (int c = 0; c < xs.length; c++) assertThat(dots[c]).isEqualTo(oracleDots(t, xs[c]));
    }

    @Test
    void aReusedColumnIsTheNewColumnOfEachCall() {
        Random rnd = new Random(81);
        for (int cols : new int[] {384, 256, 384, 128, 640, 768, 384}) {   // more lengths than a thread keeps
            float[] x = new float[cols];
            for (int k = 0; k < cols; k++) x[k] = (float) rnd.nextGaussian();
            Arrays.fill(x, cols - 128, cols, 0f);   // a block that was not zero in the last call of this length
            ActivationBlocks fresh = ActivationBlocks.quantize(x), reused = ActivationBlocks.quantizeReused(x, 0, cols);
            assertThat(reused.cols()).isEqualTo(cols);
            for (int k = 0; k < cols; k++) assertThat(reused.q(k)).as("value %d of %d", k, cols).isEqualTo(fresh.q(k));
            for (int b = 0; b < fresh.blocks(); b++) {
                assertThat(reused.scale(b)).isEqualTo(fresh.scale(b));
                assertThat(reused.sum(b)).isEqualTo(fresh.sum(b));
            }
            Arrays.fill(x, 1f);
            ActivationBlocks.quantizeReused(x, 0, cols);   // dirties this length's column for the next round
        }
    }

    @Test
    void colsNotMultipleOf128AreRefusedEverywhere() {
        assertThatThrownBy(() -> TernaryMatrix.select("w", MemorySegment.ofArray(new byte[4 * 34]), 4, 200, INLINE))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("128");
        assertThatThrownBy(() -> new T2pMatrix(MemorySegment.ofArray(new byte[136]), 4, 192, INLINE)).hasMessageContaining("cols % 128");
        assertThatThrownBy(() -> new T2pMatrix(MemorySegment.ofArray(new byte[136]), 6, 128, INLINE)).hasMessageContaining("rows % 4");
        assertThatThrownBy(() -> new Tq2Matrix(MemorySegment.ofArray(new byte[4 * 66]), 4, 128, INLINE)).hasMessageContaining("cols % 256");
    }

    @Test
    void mismatchedColumnsAreRefused() throws Exception {
        TernaryMatrix m = pack(new Kernels(DType.T2P, null, false), codes(1, 4, 256, false), INLINE);
        assertThatThrownBy(() -> m.multiply(column(Activations.ZEROS, 512, new Random(1))))
                .hasMessageContaining("512 values").hasMessageContaining("256 inputs");
    }

    /** The narrow-vector runs of {@code ./run-tests} say which width they expect; the kernels must run at it. */
    @Test
    void kernelsRunAtTheExpectedWidth() {
        String expected = System.getProperty("jquant.expectVectorBits");
        int bits = Simd.SHAPE.vectorBitSize();
        assertThat(bits).isEqualTo(Math.max(128, jquant.runtime.kernels.VectorWidth.FLOATS.vectorBitSize()));
        if (expected != null) assertThat(bits).as(Simd.describe()).isEqualTo(Integer.parseInt(expected));
    }

    @Test
    void quantizedActivationsFollowTheDefinition() {
        Random rnd = new Random(9);
        float[] x = new float[384];
        for (int i = 0; i < 256; i++) x[i] = (float) rnd.nextGaussian() * (i < 128 ? 1f : 1e-3f);
        ActivationBlocks a = ActivationBlocks.quantize(x);   // block 2 stays all zero
        for (int b = 0; b < 3; b++) {
            float max = 0f;
            int sum = 0, peak = 0;
            for (int i = b * 128; i < b * 128 + 128; i++) max = Math.max(max, Math.abs(x[i]));
            assertThat(a.scale(b)).isEqualTo(max / 127f);
            for (int i = b * 128; i < b * 128 + 128; i++) {
                int expected = max == 0f ? 0 : (int) Math.rint(x[i] / (max / 127f));
                assertThat(a.q(i)).isEqualTo((byte) expected);
                sum += a.q(i);
                peak = Math.max(peak, Math.abs(a.q(i)));
            }
            assertThat(a.sum(b)).isEqualTo(sum);
            assertThat(peak).isEqualTo(max == 0f ? 0 : 127);
        }
        x[5] = Float.NaN;
        assertThatThrownBy(() -> ActivationBlocks.quantize(x)).hasMessageContaining("NaN");
    }
}
