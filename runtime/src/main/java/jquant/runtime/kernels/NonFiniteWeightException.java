package jquant.runtime.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A stored weight that is infinite or NaN, found by a kernel: {@link #row()} is the row's index among
 * the rows the kernel was given (0..3), {@link #column()} the element. The caller, which knows the
 * tensor, names it.
 */
public final class NonFiniteWeightException extends ArithmeticException {
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int row;
    private final int column;

    NonFiniteWeightException(int row, int column, float value) {
        super("weight " + column + " of row " + row + " is " + value);
        this.row = row;
        this.column = column;
    }

    public int row() { return row; }

    public int column() { return column; }

    /** Throws for the first float16 weight with exponent 31 among rows {@code at} over {@code [k0, k1)}. */
    static void find(MemorySegment w, long[] at, int k0, int k1) {
        for (int j = 0; j < at.length; j++) {
            for (int k = k0; k < k1; k++) {
                float v = Float.float16ToFloat(w.get(I16, at[j] + 2L * k));
                if (!Float.isFinite(v)) throw new NonFiniteWeightException(j, k, v);
            }
        }
    }

    /** A bfloat16's value: the top half of a float32. */
    static float bf16(short bits) {
        return Float.intBitsToFloat(bits << 16);
    }
}
