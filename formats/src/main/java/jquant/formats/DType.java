package jquant.formats;

/**
 * Element types a tensor can be stored in. Plain types hold one element per {@link #blockBytes()}
 * bytes; block-quantized types hold {@link #blockSize()} elements in {@link #blockBytes()} bytes
 * (the block layouts are documented on the matching {@link Dequantizer} implementations).
 *
 * <p>{@link #ggmlId()} is the GGUF/ggml type id, or -1 where GGUF has none.
 */
public enum DType {
    F32(0, 1, 4),
    F16(1, 1, 2),
    BF16(30, 1, 2),
    I8(24, 1, 1),
    U8(-1, 1, 1),
    Q4_0(2, 32, 18),
    Q8_0(8, 32, 34),
    TQ1_0(34, 256, 54),
    TQ2_0(35, 256, 66),
    /** PrismML ternary, 2 bits per weight: fp16 d then 32 code bytes per 128 weights. */
    PQ2_0(142, 128, 34),
    /** PrismML ternary, base-3 five trits per byte: 24 + 2 code bytes then fp16 d per 128 weights. */
    PTQ1_0(143, 128, 28);

    private final int ggmlId;
    private final int blockSize;
    private final int blockBytes;

    DType(int ggmlId, int blockSize, int blockBytes) {
        this.ggmlId = ggmlId;
        this.blockSize = blockSize;
        this.blockBytes = blockBytes;
    }

    public int ggmlId() { return ggmlId; }

    /** Elements per block (1 for plain types). */
    public int blockSize() { return blockSize; }

    /** Bytes per block. */
    public int blockBytes() { return blockBytes; }

    public boolean isQuantized() { return blockSize > 1; }

    /**
     * Bytes needed for a row-major tensor with {@code elements} elements whose innermost dimension
     * is {@code rowLength}; block types require {@code rowLength} to be a multiple of the block.
     */
    public long byteSize(long elements, long rowLength) {
        if (rowLength % blockSize != 0) {
            throw new IllegalArgumentException(
                    this + " needs rows that are a multiple of " + blockSize + " elements, got " + rowLength);
        }
        return elements / blockSize * blockBytes;
    }

    /** The type with this ggml id, or null if jquant does not know it. */
    public static DType fromGgmlId(int id) {
        for (DType t : values()) {
            if (t.ggmlId == id) return t;
        }
        return null;
    }
}
