package jquant.formats;

/**
 * Element types a tensor can be stored in. Plain types hold one element per {@link #blockBytes()}
 * bytes; block-quantized types hold {@link #blockSize()} elements in {@link #blockBytes()} bytes
 * (the block layouts are documented on the block classes of {@code jquant.formats.quant}, whose decoders
 * {@link Dequantizer#of} hands out).
 *
 * <p>{@link #ggmlId()} is the GGUF/ggml type id, or -1 where GGUF has none. Every type ggml can
 * store in a GGUF file is listed with its exact block geometry (ggml's {@code ggml_blck_size} and
 * {@code ggml_type_size}; {@code ggml/include/ggml.h} enum {@code ggml_type}, block structs in
 * {@code ggml/src/ggml-common.h}), so that any such file opens and its offsets validate. Those
 * jquant cannot decode say so through {@link #isDecodable()}; asking for their values fails.
 * Ids ggml has retired (4, 5, 31–33, 36–38) are not listed: ggml itself no longer reads them.
 */
public enum DType {
    F32(0, 1, 4),
    F16(1, 1, 2),
    BF16(30, 1, 2),
    I8(24, 1, 1),
    U8(-1, 1, 1),
    Q4_0(2, 32, 18),
    Q4_1(3, 32, 20),
    Q5_0(6, 32, 22),
    Q5_1(7, 32, 24),
    Q8_0(8, 32, 34),
    Q2_K(10, 256, 84),
    Q3_K(11, 256, 110),
    Q4_K(12, 256, 144),
    Q5_K(13, 256, 176),
    Q6_K(14, 256, 210),
    /** ggml's activation format for K-quant dot products (fp32 scale), rarely found in files. */
    Q8_K(15, 256, 292),
    TQ1_0(34, 256, 54),
    TQ2_0(35, 256, 66),
    /** PrismML ternary, 2 bits per weight: fp16 d then 32 code bytes per 128 weights. */
    PQ2_0(142, 128, 34),
    /** PrismML ternary, base-3 five trits per byte: 24 + 2 code bytes then fp16 d per 128 weights. */
    PTQ1_0(143, 128, 28),
    /**
     * jquant's ternary row-pair layout (the T2P write-up, {@link jquant.formats.quant.T2pBlock}): one
     * 136-byte block holds 4 rows × 128 weights, so a tensor needs rows that are a multiple of
     * {@link #rowGroup() 4}; per 128 weights that is 34 bytes, PQ2_0's size. GGUF id 1000 is outside
     * ggml's enum (jquant's private range starts there); ggml-based readers refuse the file, jquant
     * reads it.
     */
    T2P(1000, 128, 34, 4),

    // Known to ggml, not decoded by jquant: exact sizes so files holding them open for inspection.
    Q8_1(9, 32, 36, false),
    IQ2_XXS(16, 256, 66, false),
    IQ2_XS(17, 256, 74, false),
    IQ3_XXS(18, 256, 98, false),
    IQ1_S(19, 256, 50, false),
    IQ4_NL(20, 32, 18, false),
    IQ3_S(21, 256, 110, false),
    IQ2_S(22, 256, 82, false),
    IQ4_XS(23, 256, 136, false),
    I16(25, 1, 2, false),
    I32(26, 1, 4, false),
    I64(27, 1, 8, false),
    F64(28, 1, 8, false),
    IQ1_M(29, 256, 56, false),
    MXFP4(39, 32, 17, false);

    private final int ggmlId;
    private final int blockSize;
    private final int blockBytes;
    private final boolean decodable;
    private final int rowGroup;

    DType(int ggmlId, int blockSize, int blockBytes) {
        this(ggmlId, blockSize, blockBytes, true, 1);
    }

    DType(int ggmlId, int blockSize, int blockBytes, int rowGroup) {
        this(ggmlId, blockSize, blockBytes, true, rowGroup);
    }

    DType(int ggmlId, int blockSize, int blockBytes, boolean decodable) {
        this(ggmlId, blockSize, blockBytes, decodable, 1);
    }

    DType(int ggmlId, int blockSize, int blockBytes, boolean decodable, int rowGroup) {
        this.ggmlId = ggmlId;
        this.blockSize = blockSize;
        this.blockBytes = blockBytes;
        this.decodable = decodable;
        this.rowGroup = rowGroup;
    }

    public int ggmlId() { return ggmlId; }

    /** Elements per block (1 for plain types). */
    public int blockSize() { return blockSize; }

    /** Bytes per block. */
    public int blockBytes() { return blockBytes; }

    public boolean isQuantized() { return blockSize > 1; }

    /**
     * Rows whose bytes are interleaved in one stored unit: 1 for every row-major type, 4 for
     * {@link #T2P}. A tensor's row count must be a multiple of it, and one row can only be read by
     * decoding its whole group.
     */
    public int rowGroup() { return rowGroup; }

    /** Whether {@link Dequantizer#of} can decode this type; the others are known only by their size. */
    public boolean isDecodable() { return decodable; }

    /**
     * Bytes needed for a row-major tensor with {@code elements} elements whose innermost dimension
     * is {@code rowLength}; block types require {@code rowLength} to be a multiple of the block.
     */
    public long byteSize(long elements, long rowLength) {
        if (rowLength % blockSize != 0) {
            throw new IllegalArgumentException(
                    this + " needs rows that are a multiple of " + blockSize + " elements, got " + rowLength);
        }
        if (rowGroup > 1 && (elements / rowLength) % rowGroup != 0) {
            throw new IllegalArgumentException(
                    this + " stores rows in groups of " + rowGroup + ", got " + elements / rowLength + " rows");
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
