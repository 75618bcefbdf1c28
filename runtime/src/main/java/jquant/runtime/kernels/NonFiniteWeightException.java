package jquant.runtime.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A stored float16 weight that is infinite or NaN, which the float16 kernels could not see (their
 * conversion makes it a number): {@link #row()} and {@link #column()} locate it; the caller, which
 * knows the tensor, names it.
 */
public final class NonFiniteWeightException extends ArithmeticException {
    private static final long serialVersionUID = 1L;

    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
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

    /**
     * Throws for the first float16 with exponent 31 (±inf or NaN) among the {@code count} halves from
     * byte {@code at}, naming it as weight k of row {@code row}. Four halves per long: an exponent field
     * of all ones is the only one that carries into bit 15 when 0x0400 is added to it, so one OR of
     * those sums over the row says whether to look further — a scan at memory speed without vectors,
     * fast from the first call (it runs once per matrix, before the model's first product).
     */
    public static void requireFiniteF16(MemorySegment w, long at, int count, int row) {
        long flags = 0;
        int longs = count / 4;
        for (int i = 0; i < longs; i++) flags |= (w.get(I64, at + 8L * i) & 0x7C00_7C00_7C00_7C00L) + 0x0400_0400_0400_0400L;
        for (int k = 4 * longs; k < count; k++) flags |= (w.get(I16, at + 2L * k) & 0x7C00) + 0x0400;
        if ((flags & 0x8000_8000_8000_8000L) == 0) return;
        for (int k = 0; k < count; k++) {
            float v = Float.float16ToFloat(w.get(I16, at + 2L * k));
            if (!Float.isFinite(v)) throw new NonFiniteWeightException(row, k, v);
        }
    }

    /** A bfloat16's value: the top half of a float32. */
    static float bf16(short bits) {
        return Float.intBitsToFloat(bits << 16);
    }
}
