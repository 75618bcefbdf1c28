package jquant.formats.gguf;

import jquant.formats.DType;

/**
 * One entry of a GGUF file's tensor table.
 *
 * @param name   tensor name as stored ("blk.0.attn_q.weight")
 * @param dims   GGUF dimensions, innermost (contiguous) first: {@code ne[0], ne[1], …}
 * @param type   element type
 * @param offset byte offset of the data, relative to the start of the data section
 */
public record GgufTensorInfo(String name, long[] dims, DType type, long offset) {

    public GgufTensorInfo {
        dims = dims.clone();
    }

    @Override
    public long[] dims() { return dims.clone(); }

    /** Row-major shape, outermost first: GGUF's dims reversed. */
    public long[] shape() {
        long[] shape = new long[dims.length];
        for (int i = 0; i < dims.length; i++) shape[i] = dims[dims.length - 1 - i];
        return shape;
    }

    public long elements() {
        long n = 1;
        for (long d : dims) n = Math.multiplyExact(n, d);
        return n;
    }

    public long byteSize() {
        return type.byteSize(elements(), dims[0]);
    }
}
