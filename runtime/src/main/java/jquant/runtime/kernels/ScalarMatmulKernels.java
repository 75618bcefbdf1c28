package jquant.runtime.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * {@link MatmulKernels} as plain loops: the chains of the definition, one element at a time, with the
 * standard conversions ({@link Float#float16ToFloat}). The oracle the vector kernels are tested
 * against, bit for bit, at the same lane count.
 */
public final class ScalarMatmulKernels implements MatmulKernels {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int lanes;

    /** The twin of {@link VectorMatmulKernels} at {@link VectorWidth}. */
    public ScalarMatmulKernels() {
        this(VectorWidth.FLOATS.length());
    }

    public ScalarMatmulKernels(int lanes) {
        if (lanes < 1) throw new IllegalArgumentException("lanes must be positive, got " + lanes);
        this.lanes = lanes;
    }

    @Override
    public int lanes() {
        return lanes;
    }

    /** Weight k of a row starting at {@code at}. */
    @FunctionalInterface
    private interface Row {
        float get(long at, int k);
    }

    private void rows(Row row, long[] at, float[] x, int xOff, int k0, int k1, float[] acc) {
        for (int j = 0; j < at.length; j++) {
            for (int k = k0; k < k1; k++) {
                int a = j * lanes + (k - k0) % lanes;
                acc[a] = Math.fma(row.get(at[j], k), x[xOff + k], acc[a]);
            }
        }
    }

    @Override
    public void rowsF32(MemorySegment w, long at0, long at1, long at2, long at3, float[] x, int xOff, int k0, int k1, float[] acc) {
        rows((at, k) -> w.get(F32, at + 4L * k), new long[] {at0, at1, at2, at3}, x, xOff, k0, k1, acc);
    }

    @Override
    public void rowsF16(MemorySegment w, long at0, long at1, long at2, long at3, float[] x, int xOff, int k0, int k1, float[] acc) {
        rows((at, k) -> f16Scaled(w.get(I16, at + 2L * k)), new long[] {at0, at1, at2, at3}, x, xOff, k0, k1, acc);
    }

    /** A finite float16's value × 2^-112 (exact: at worst a float32 subnormal with the half's ten bits), as {@link #rowsF16} takes it. */
    static float f16Scaled(short bits) {
        return Float.float16ToFloat(bits) * 0x1p-112f;
    }

    @Override
    public void rowsBF16(MemorySegment w, long at0, long at1, long at2, long at3, float[] x, int xOff, int k0, int k1, float[] acc) {
        rows((at, k) -> NonFiniteWeightException.bf16(w.get(I16, at + 2L * k)), new long[] {at0, at1, at2, at3}, x, xOff, k0, k1, acc);
    }

    @Override
    public void rowsI8(byte[] w, int at0, int at1, int at2, int at3, float[] x, int xOff, int k0, int k1, float[] acc) {
        rows((at, k) -> w[(int) at + k], new long[] {at0, at1, at2, at3}, x, xOff, k0, k1, acc);
    }

    @Override
    public void rowsF32(float[] w, int at0, int at1, int at2, int at3, float[] x, int xOff, int k0, int k1, float[] acc) {
        rows((at, k) -> w[(int) at + k], new long[] {at0, at1, at2, at3}, x, xOff, k0, k1, acc);
    }

    @Override
    public void tile(float[] w, int at0, int at1, int at2, int at3, float[] x, int x0, int x1, int x2, int x3,
                     int k0, int k1, float[] acc, int accAt) {
        int[] rows = {at0, at1, at2, at3}, tokens = {x0, x1, x2, x3};
        for (int t = 0; t < 4; t++) {
            for (int j = 0; j < 4; j++) {
                for (int k = k0; k < k1; k++) {
                    int a = accAt + (4 * t + j) * lanes + (k - k0) % lanes;
                    acc[a] = Math.fma(w[rows[j] + k], x[tokens[t] + k], acc[a]);
                }
            }
        }
    }

    @Override
    public void f16ToFloats(MemorySegment w, long at, float[] dst, int off, int len) {
        for (int i = 0; i < len; i++) dst[off + i] = Float.float16ToFloat(w.get(I16, at + 2L * i));
    }

    @Override
    public void bf16ToFloats(MemorySegment w, long at, float[] dst, int off, int len) {
        for (int i = 0; i < len; i++) dst[off + i] = NonFiniteWeightException.bf16(w.get(I16, at + 2L * i));
    }
}
