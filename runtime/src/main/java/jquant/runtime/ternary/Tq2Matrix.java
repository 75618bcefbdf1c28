package jquant.runtime.ternary;

import java.lang.foreign.MemorySegment;
import jquant.formats.DType;
import jquant.formats.quant.Tq2Block;
import jquant.core.WorkerPool;

/**
 * Ternary matrix in ggml's TQ2_0 layout ({@link Tq2Block}: per 256 weights 64 code bytes, then one
 * fp16 scale; in each 128-weight half, byte m holds weights m, m+32, m+64, m+96 at bits 0, 2, 4, 6),
 * computed in place by the shared stock kernel ({@link StockMatrix}). The kernels' blocks are the
 * 128-weight halves, each with the TQ2_0 block's scale, so the shared formula
 * {@code y = Σ_b dot_b · (d_b · scale_b)} over 128-blocks gives the same floats as a PQ2_0 or T2P copy
 * of the same weights. At 512 bits one load holds a whole TQ2_0 block.
 */
public final class Tq2Matrix extends StockMatrix {

    @Override
    public DType type() { return DType.TQ2_0; }

    /** {@code data} holds {@code rows} rows of {@code cols/256} TQ2_0 blocks; it is read in place, never copied. */
    public Tq2Matrix(MemorySegment data, int rows, int cols, WorkerPool pool) {
        super("TQ2_0", data, rows, cols, Tq2Block.WEIGHTS, (long) (cols / Tq2Block.WEIGHTS) * Tq2Block.BYTES, pool);
    }

    @Override long codeOffset(int block) { return (long) block / 2 * Tq2Block.BYTES + Tq2Block.CODES_OFFSET + (block % 2) * Tq2Block.HALF_BYTES; }

    @Override long scaleOffset(int block) { return (long) block / 2 * Tq2Block.BYTES + Tq2Block.SCALE_OFFSET; }

    @Override boolean contiguous() { return true; }

    @Override int weightOf(int block, int j, int slot) { return block * 128 + 32 * slot + j; }

    @Override
    int storedCode(int row, int col) {
        int k = col % 128;
        return byteAt(row * rowBytes + codeOffset(col / 128) + k % 32) >> (2 * (k / 32)) & 3;
    }
}
