package jquant.runtime.ternary;

import java.lang.foreign.MemorySegment;
import jquant.formats.DType;
import jquant.formats.quant.Pq2Block;
import jquant.core.WorkerPool;

/**
 * Ternary matrix in the stock PQ2_0 layout ({@link Pq2Block}: per 128 weights an fp16 scale, then 32
 * code bytes, weight j at bits 2·(j mod 4) of byte j/4), computed in place by the shared stock
 * kernel ({@link StockMatrix}). At 512 bits two blocks fill a vector with two loads and a blend,
 * since a scale sits between their codes. This is the baseline the T2P layout is measured against:
 * the same species, activation precomputation, reduction and epilogue.
 */
public final class Pq2Matrix extends StockMatrix {

    @Override
    public DType type() { return DType.PQ2_0; }

    /** {@code data} holds {@code rows} rows of {@code cols/128} PQ2_0 blocks; it is read in place, never copied. */
    public Pq2Matrix(MemorySegment data, int rows, int cols, WorkerPool pool) {
        super("PQ2_0", data, rows, cols, Pq2Block.WEIGHTS, Pq2Block.rowBytes(cols), pool);
    }

    @Override long codeOffset(int block) { return (long) block * Pq2Block.BYTES + Pq2Block.CODES_OFFSET; }

    @Override long scaleOffset(int block) { return (long) block * Pq2Block.BYTES + Pq2Block.SCALE_OFFSET; }

    @Override boolean contiguous() { return false; }

    @Override int weightOf(int block, int j, int slot) { return block * Pq2Block.WEIGHTS + 4 * j + slot; }

    @Override
    int storedCode(int row, int col) {
        int j = col % Pq2Block.WEIGHTS;
        return byteAt(row * rowBytes + codeOffset(col / Pq2Block.WEIGHTS) + j / 4) >> (2 * (j % 4)) & 3;
    }
}
