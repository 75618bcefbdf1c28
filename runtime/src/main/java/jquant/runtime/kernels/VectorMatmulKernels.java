package jquant.runtime.kernels;

import static jdk.incubator.vector.VectorOperators.B2F;
import static jdk.incubator.vector.VectorOperators.LSHL;
import static jdk.incubator.vector.VectorOperators.S2I;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link MatmulKernels} with the Vector API at {@link VectorWidth}: one float vector per chain group,
 * weights converted to float in registers.
 *
 * <p>float16 → float32 without a conversion instruction (the Vector API has none): the half's bits,
 * sign-extended to an int, shifted left by 13 and masked with {@code 0x8FFFFFFF}, are a float whose
 * exponent is 112 too small, exactly, normal or subnormal. {@link #f16ToFloats} multiplies by 2^112 to
 * get the value; {@link #rowsF16} leaves that to its activations, scaled once per product by the caller,
 * because this machine issues one 512-bit floating-point operation per cycle and a multiply per weight
 * vector halved the kernel's speed. Infinity and NaN (exponent 31) would come out finite, so the
 * callers check each matrix once before its first product
 * ({@link NonFiniteWeightException#requireFiniteF16}).
 *
 * <p>Every Vector API call sits directly in a loop body of the method that owns the vectors: C2
 * inlines those, but a helper it leaves out of line would box every vector it takes or returns.
 */
public final class VectorMatmulKernels implements MatmulKernels {

    private static final VectorSpecies<Float> F = VectorWidth.FLOATS;
    private static final VectorSpecies<Integer> I = VectorWidth.INTS;
    private static final VectorSpecies<Short> S = VectorWidth.SHORTS;
    private static final VectorSpecies<Byte> B = VectorWidth.BYTES;
    private static final int L = F.length();
    /** Float vectors per int8 load (2 when 4 float lanes meet the 8-byte minimum load). */
    private static final int PARTS = B.length() / L;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(LE);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(LE);
    private static final float FP16_REBIAS = 0x1p112f;
    /** Sign, exponent and mantissa of a float16 shifted into a float32's places (the sign-extension bits cleared). */
    private static final int FP16_BITS = 0x8FFFFFFF;

    @Override
    public int lanes() {
        return L;
    }

    /** End of the whole vectors of {@code [k0, k1)} in steps of {@code step}. */
    private static int bound(int k0, int k1, int step) {
        return k0 + (k1 - k0) / step * step;
    }

    @Override
    public void rowsF32(MemorySegment w, long at0, long at1, long at2, long at3, float[] x, int xOff, int k0, int k1, float[] acc) {
        FloatVector a0 = FloatVector.fromArray(F, acc, 0), a1 = FloatVector.fromArray(F, acc, L);
        FloatVector a2 = FloatVector.fromArray(F, acc, 2 * L), a3 = FloatVector.fromArray(F, acc, 3 * L);
        int end = bound(k0, k1, L);
        for (int k = k0; k < end; k += L) {
            FloatVector xv = FloatVector.fromArray(F, x, xOff + k);
            long at = 4L * k;
            a0 = FloatVector.fromMemorySegment(F, w, at0 + at, LE).fma(xv, a0);
            a1 = FloatVector.fromMemorySegment(F, w, at1 + at, LE).fma(xv, a1);
            a2 = FloatVector.fromMemorySegment(F, w, at2 + at, LE).fma(xv, a2);
            a3 = FloatVector.fromMemorySegment(F, w, at3 + at, LE).fma(xv, a3);
        }
        a0.intoArray(acc, 0);
        a1.intoArray(acc, L);
        a2.intoArray(acc, 2 * L);
        a3.intoArray(acc, 3 * L);
        for (int k = end; k < k1; k++) {
            int c = k - end;
            float xk = x[xOff + k];
            acc[c] = Math.fma(w.get(F32, at0 + 4L * k), xk, acc[c]);
            acc[L + c] = Math.fma(w.get(F32, at1 + 4L * k), xk, acc[L + c]);
            acc[2 * L + c] = Math.fma(w.get(F32, at2 + 4L * k), xk, acc[2 * L + c]);
            acc[3 * L + c] = Math.fma(w.get(F32, at3 + 4L * k), xk, acc[3 * L + c]);
        }
    }

    @Override
    public void rowsF16(MemorySegment w, long at0, long at1, long at2, long at3, float[] x, int xOff, int k0, int k1, float[] acc) {
        FloatVector a0 = FloatVector.fromArray(F, acc, 0), a1 = FloatVector.fromArray(F, acc, L);
        FloatVector a2 = FloatVector.fromArray(F, acc, 2 * L), a3 = FloatVector.fromArray(F, acc, 3 * L);
        int end = bound(k0, k1, L);
        for (int k = k0; k < end; k += L) {
            FloatVector xv = FloatVector.fromArray(F, x, xOff + k);
            long at = 2L * k;
            a0 = ((IntVector) ShortVector.fromMemorySegment(S, w, at0 + at, LE).convertShape(S2I, I, 0))
                    .lanewise(LSHL, 13).and(FP16_BITS).reinterpretAsFloats().fma(xv, a0);
            a1 = ((IntVector) ShortVector.fromMemorySegment(S, w, at1 + at, LE).convertShape(S2I, I, 0))
                    .lanewise(LSHL, 13).and(FP16_BITS).reinterpretAsFloats().fma(xv, a1);
            a2 = ((IntVector) ShortVector.fromMemorySegment(S, w, at2 + at, LE).convertShape(S2I, I, 0))
                    .lanewise(LSHL, 13).and(FP16_BITS).reinterpretAsFloats().fma(xv, a2);
            a3 = ((IntVector) ShortVector.fromMemorySegment(S, w, at3 + at, LE).convertShape(S2I, I, 0))
                    .lanewise(LSHL, 13).and(FP16_BITS).reinterpretAsFloats().fma(xv, a3);
        }
        a0.intoArray(acc, 0);
        a1.intoArray(acc, L);
        a2.intoArray(acc, 2 * L);
        a3.intoArray(acc, 3 * L);
        for (int k = end; k < k1; k++) {
            int c = k - end;
            float xk = x[xOff + k];
            acc[c] = Math.fma(ScalarMatmulKernels.f16Scaled(w.get(I16, at0 + 2L * k)), xk, acc[c]);
            acc[L + c] = Math.fma(ScalarMatmulKernels.f16Scaled(w.get(I16, at1 + 2L * k)), xk, acc[L + c]);
            acc[2 * L + c] = Math.fma(ScalarMatmulKernels.f16Scaled(w.get(I16, at2 + 2L * k)), xk, acc[2 * L + c]);
            acc[3 * L + c] = Math.fma(ScalarMatmulKernels.f16Scaled(w.get(I16, at3 + 2L * k)), xk, acc[3 * L + c]);
        }
    }

    @Override
    public void rowsBF16(MemorySegment w, long at0, long at1, long at2, long at3, float[] x, int xOff, int k0, int k1, float[] acc) {
        FloatVector a0 = FloatVector.fromArray(F, acc, 0), a1 = FloatVector.fromArray(F, acc, L);
        FloatVector a2 = FloatVector.fromArray(F, acc, 2 * L), a3 = FloatVector.fromArray(F, acc, 3 * L);
        int end = bound(k0, k1, L);
        for (int k = k0; k < end; k += L) {
            FloatVector xv = FloatVector.fromArray(F, x, xOff + k);
            long at = 2L * k;
            a0 = ((IntVector) ShortVector.fromMemorySegment(S, w, at0 + at, LE).convertShape(S2I, I, 0))
                    .lanewise(LSHL, 16).reinterpretAsFloats().fma(xv, a0);
            a1 = ((IntVector) ShortVector.fromMemorySegment(S, w, at1 + at, LE).convertShape(S2I, I, 0))
                    .lanewise(LSHL, 16).reinterpretAsFloats().fma(xv, a1);
            a2 = ((IntVector) ShortVector.fromMemorySegment(S, w, at2 + at, LE).convertShape(S2I, I, 0))
                    .lanewise(LSHL, 16).reinterpretAsFloats().fma(xv, a2);
            a3 = ((IntVector) ShortVector.fromMemorySegment(S, w, at3 + at, LE).convertShape(S2I, I, 0))
                    .lanewise(LSHL, 16).reinterpretAsFloats().fma(xv, a3);
        }
        a0.intoArray(acc, 0);
        a1.intoArray(acc, L);
        a2.intoArray(acc, 2 * L);
        a3.intoArray(acc, 3 * L);
        for (int k = end; k < k1; k++) {
            int c = k - end;
            float xk = x[xOff + k];
            acc[c] = Math.fma(NonFiniteWeightException.bf16(w.get(I16, at0 + 2L * k)), xk, acc[c]);
            acc[L + c] = Math.fma(NonFiniteWeightException.bf16(w.get(I16, at1 + 2L * k)), xk, acc[L + c]);
            acc[2 * L + c] = Math.fma(NonFiniteWeightException.bf16(w.get(I16, at2 + 2L * k)), xk, acc[2 * L + c]);
            acc[3 * L + c] = Math.fma(NonFiniteWeightException.bf16(w.get(I16, at3 + 2L * k)), xk, acc[3 * L + c]);
        }
    }

    @Override
    public void rowsI8(byte[] w, int at0, int at1, int at2, int at3, float[] x, int xOff, int k0, int k1, float[] acc) {
        FloatVector a0 = FloatVector.fromArray(F, acc, 0), a1 = FloatVector.fromArray(F, acc, L);
        FloatVector a2 = FloatVector.fromArray(F, acc, 2 * L), a3 = FloatVector.fromArray(F, acc, 3 * L);
        int step = PARTS * L, end = bound(k0, k1, step);
        for (int k = k0; k < end; k += step) {
            ByteVector b0 = ByteVector.fromArray(B, w, at0 + k), b1 = ByteVector.fromArray(B, w, at1 + k);
            ByteVector b2 = ByteVector.fromArray(B, w, at2 + k), b3 = ByteVector.fromArray(B, w, at3 + k);
            for (int p = 0; p < PARTS; p++) {
                FloatVector xv = FloatVector.fromArray(F, x, xOff + k + p * L);
                a0 = ((FloatVector) b0.convertShape(B2F, F, p)).fma(xv, a0);
                a1 = ((FloatVector) b1.convertShape(B2F, F, p)).fma(xv, a1);
                a2 = ((FloatVector) b2.convertShape(B2F, F, p)).fma(xv, a2);
                a3 = ((FloatVector) b3.convertShape(B2F, F, p)).fma(xv, a3);
            }
        }
        a0.intoArray(acc, 0);
        a1.intoArray(acc, L);
        a2.intoArray(acc, 2 * L);
        a3.intoArray(acc, 3 * L);
        for (int k = end; k < k1; k++) {
            int c = (k - k0) % L;
            float xk = x[xOff + k];
            acc[c] = Math.fma(w[at0 + k], xk, acc[c]);
            acc[L + c] = Math.fma(w[at1 + k], xk, acc[L + c]);
            acc[2 * L + c] = Math.fma(w[at2 + k], xk, acc[2 * L + c]);
            acc[3 * L + c] = Math.fma(w[at3 + k], xk, acc[3 * L + c]);
        }
    }

    @Override
    public void rowsF32(float[] w, int at0, int at1, int at2, int at3, float[] x, int xOff, int k0, int k1, float[] acc) {
        FloatVector a0 = FloatVector.fromArray(F, acc, 0), a1 = FloatVector.fromArray(F, acc, L);
        FloatVector a2 = FloatVector.fromArray(F, acc, 2 * L), a3 = FloatVector.fromArray(F, acc, 3 * L);
        int end = bound(k0, k1, L);
        for (int k = k0; k < end; k += L) {
            FloatVector xv = FloatVector.fromArray(F, x, xOff + k);
            a0 = FloatVector.fromArray(F, w, at0 + k).fma(xv, a0);
            a1 = FloatVector.fromArray(F, w, at1 + k).fma(xv, a1);
            a2 = FloatVector.fromArray(F, w, at2 + k).fma(xv, a2);
            a3 = FloatVector.fromArray(F, w, at3 + k).fma(xv, a3);
        }
        a0.intoArray(acc, 0);
        a1.intoArray(acc, L);
        a2.intoArray(acc, 2 * L);
        a3.intoArray(acc, 3 * L);
        for (int k = end; k < k1; k++) {
            int c = k - end;
            float xk = x[xOff + k];
            acc[c] = Math.fma(w[at0 + k], xk, acc[c]);
            acc[L + c] = Math.fma(w[at1 + k], xk, acc[L + c]);
            acc[2 * L + c] = Math.fma(w[at2 + k], xk, acc[2 * L + c]);
            acc[3 * L + c] = Math.fma(w[at3 + k], xk, acc[3 * L + c]);
        }
    }

    @Override
    public void tile(float[] w, int at0, int at1, int at2, int at3, float[] x, int x0, int x1, int x2, int x3,
                     int k0, int k1, float[] acc, int accAt) {
        FloatVector c00 = FloatVector.fromArray(F, acc, accAt), c01 = FloatVector.fromArray(F, acc, accAt + L);
        FloatVector c02 = FloatVector.fromArray(F, acc, accAt + 2 * L), c03 = FloatVector.fromArray(F, acc, accAt + 3 * L);
        FloatVector c10 = FloatVector.fromArray(F, acc, accAt + 4 * L), c11 = FloatVector.fromArray(F, acc, accAt + 5 * L);
        FloatVector c12 = FloatVector.fromArray(F, acc, accAt + 6 * L), c13 = FloatVector.fromArray(F, acc, accAt + 7 * L);
        FloatVector c20 = FloatVector.fromArray(F, acc, accAt + 8 * L), c21 = FloatVector.fromArray(F, acc, accAt + 9 * L);
        FloatVector c22 = FloatVector.fromArray(F, acc, accAt + 10 * L), c23 = FloatVector.fromArray(F, acc, accAt + 11 * L);
        FloatVector c30 = FloatVector.fromArray(F, acc, accAt + 12 * L), c31 = FloatVector.fromArray(F, acc, accAt + 13 * L);
        FloatVector c32 = FloatVector.fromArray(F, acc, accAt + 14 * L), c33 = FloatVector.fromArray(F, acc, accAt + 15 * L);
        int end = bound(k0, k1, L);
        for (int k = k0; k < end; k += L) {
            FloatVector w0 = FloatVector.fromArray(F, w, at0 + k), w1 = FloatVector.fromArray(F, w, at1 + k);
            FloatVector w2 = FloatVector.fromArray(F, w, at2 + k), w3 = FloatVector.fromArray(F, w, at3 + k);
            FloatVector xv = FloatVector.fromArray(F, x, x0 + k);
            c00 = w0.fma(xv, c00); c01 = w1.fma(xv, c01); c02 = w2.fma(xv, c02); c03 = w3.fma(xv, c03);
            xv = FloatVector.fromArray(F, x, x1 + k);
            c10 = w0.fma(xv, c10); c11 = w1.fma(xv, c11); c12 = w2.fma(xv, c12); c13 = w3.fma(xv, c13);
            xv = FloatVector.fromArray(F, x, x2 + k);
            c20 = w0.fma(xv, c20); c21 = w1.fma(xv, c21); c22 = w2.fma(xv, c22); c23 = w3.fma(xv, c23);
            xv = FloatVector.fromArray(F, x, x3 + k);
            c30 = w0.fma(xv, c30); c31 = w1.fma(xv, c31); c32 = w2.fma(xv, c32); c33 = w3.fma(xv, c33);
        }
        c00.intoArray(acc, accAt); c01.intoArray(acc, accAt + L); c02.intoArray(acc, accAt + 2 * L); c03.intoArray(acc, accAt + 3 * L);
        c10.intoArray(acc, accAt + 4 * L); c11.intoArray(acc, accAt + 5 * L); c12.intoArray(acc, accAt + 6 * L); c13.intoArray(acc, accAt + 7 * L);
        c20.intoArray(acc, accAt + 8 * L); c21.intoArray(acc, accAt + 9 * L); c22.intoArray(acc, accAt + 10 * L); c23.intoArray(acc, accAt + 11 * L);
        c30.intoArray(acc, accAt + 12 * L); c31.intoArray(acc, accAt + 13 * L); c32.intoArray(acc, accAt + 14 * L); c33.intoArray(acc, accAt + 15 * L);
        if (end < k1) tileTail(w, new int[] {at0, at1, at2, at3}, x, new int[] {x0, x1, x2, x3}, end, k1, acc, accAt);
    }

    /** The last columns of a tile, fewer than a vector, one chain element at a time. */
    private static void tileTail(float[] w, int[] rows, float[] x, int[] tokens, int end, int k1, float[] acc, int accAt) {
        for (int k = end; k < k1; k++) {
            int c = k - end;
            for (int t = 0; t < 4; t++) {
                for (int j = 0; j < 4; j++) {
                    int a = accAt + (4 * t + j) * L + c;
                    acc[a] = Math.fma(w[rows[j] + k], x[tokens[t] + k], acc[a]);
                }
            }
        }
    }

    @Override
    public void f16ToFloats(MemorySegment w, long at, float[] dst, int off, int len) {
        int end = bound(0, len, L);
        for (int i = 0; i < end; i += L) {
            ((IntVector) ShortVector.fromMemorySegment(S, w, at + 2L * i, LE).convertShape(S2I, I, 0))
                    .lanewise(LSHL, 13).and(FP16_BITS).reinterpretAsFloats().mul(FP16_REBIAS).intoArray(dst, off + i);
        }
        for (int i = end; i < len; i++) dst[off + i] = Float.float16ToFloat(w.get(I16, at + 2L * i));
    }

    @Override
    public void bf16ToFloats(MemorySegment w, long at, float[] dst, int off, int len) {
        int end = bound(0, len, L);
        for (int i = 0; i < end; i += L) {
            ((IntVector) ShortVector.fromMemorySegment(S, w, at + 2L * i, LE).convertShape(S2I, I, 0))
                    .lanewise(LSHL, 16).reinterpretAsFloats().intoArray(dst, off + i);
        }
        for (int i = end; i < len; i++) dst[off + i] = NonFiniteWeightException.bf16(w.get(I16, at + 2L * i));
    }
}
