package jquant.formats;

import java.lang.foreign.MemorySegment;
import jquant.formats.quant.Pq2Block;
import jquant.formats.quant.Ptq1Block;
import jquant.formats.quant.Q2_KBlock;
import jquant.formats.quant.Q3_KBlock;
import jquant.formats.quant.Q4_0Block;
import jquant.formats.quant.Q4_1Block;
import jquant.formats.quant.Q4_KBlock;
import jquant.formats.quant.Q5_0Block;
import jquant.formats.quant.Q5_1Block;
import jquant.formats.quant.Q5_KBlock;
import jquant.formats.quant.Q6_KBlock;
import jquant.formats.quant.Q8_0Block;
import jquant.formats.quant.Q8_KBlock;
import jquant.formats.quant.T2pBlock;
import jquant.formats.quant.T2pShapeException;
import jquant.formats.quant.TernaryTensor;
import jquant.formats.quant.Tq1Block;
import jquant.formats.quant.Tq2Block;

/**
 * The table of element types a tensor can be stored in, one entry per type (ggml's
 * {@code type_traits}): its GGUF id, its block geometry, and what jquant can do with it — the
 * reference decoder to float32 ({@link Dequantizer#of}), the float32 encoder ({@link FloatEncoder#of},
 * the types {@code jquant convert} writes) and, for the ternary types, the codec to and from the codes
 * and scales of a {@link TernaryTensor} ({@link TernaryCodecs}). The block layouts are documented on the
 * codec classes of {@code jquant.formats.quant}, which know nothing of this table; the runtime keys its
 * kernel choice by it. Adding a type is one entry here, its codec class, and its kernels.
 *
 * <p>Plain types hold one element per {@link #blockBytes()} bytes; block-quantized types hold
 * {@link #blockSize()} elements in {@link #blockBytes()} bytes. {@link #ggmlId()} is the GGUF/ggml type
 * id, or -1 where GGUF has none. Every type ggml can store in a GGUF file is listed with its exact block
 * geometry (ggml's {@code ggml_blck_size} and {@code ggml_type_size}; {@code ggml/include/ggml.h} enum
 * {@code ggml_type}, block structs in {@code ggml/src/ggml-common.h}), so that any such file opens and its
 * offsets validate. Those jquant cannot decode say so through {@link #isDecodable()}; asking for their
 * values fails. Ids ggml has retired (4, 5, 31–33, 36–38) are not listed: ggml itself no longer reads them.
 */
public enum DType {
    //   ggml id, block, bytes   to float32               from float32 / ternary codes
    F32(0, 1, 4,                 PlainCodecs::decodeF32,  PlainCodecs::encodeF32),
    F16(1, 1, 2,                 PlainCodecs::decodeF16,  PlainCodecs::encodeF16),
    BF16(30, 1, 2,               PlainCodecs::decodeBf16, PlainCodecs::encodeBf16),
    I8(24, 1, 1,                 PlainCodecs::decodeI8),
    U8(-1, 1, 1,                 PlainCodecs::decodeU8),
    Q4_0(2, 32, 18,              Q4_0Block::dequantize),
    Q4_1(3, 32, 20,              Q4_1Block::dequantize),
    Q5_0(6, 32, 22,              Q5_0Block::dequantize),
    Q5_1(7, 32, 24,              Q5_1Block::dequantize),
    Q8_0(8, 32, 34,              Q8_0Block::dequantize,   Q8_0Block::quantize),
    Q2_K(10, 256, 84,            Q2_KBlock::dequantize),
    Q3_K(11, 256, 110,           Q3_KBlock::dequantize),
    Q4_K(12, 256, 144,           Q4_KBlock::dequantize),
    Q5_K(13, 256, 176,           Q5_KBlock::dequantize),
    Q6_K(14, 256, 210,           Q6_KBlock::dequantize),
    /** ggml's activation format for K-quant dot products (fp32 scale), rarely found in files. */
    Q8_K(15, 256, 292,           Q8_KBlock::dequantize),
    TQ1_0(34, 256, 54,           Tq1Block::dequantize),
    TQ2_0(35, 256, 66,           Tq2Block::dequantize,    Tq2Block::encode, Tq2Block::decode),
    /** PrismML ternary, 2 bits per weight: fp16 d then 32 code bytes per 128 weights. */
    PQ2_0(142, 128, 34,          Pq2Block::dequantize,    Pq2Block::encode, Pq2Block::decode),
    /** PrismML ternary, base-3 five trits per byte: 24 + 2 code bytes then fp16 d per 128 weights. */
    PTQ1_0(143, 128, 28,         Ptq1Block::dequantize,   Ptq1Block::encode, Ptq1Block::decode),
    /**
     * jquant's ternary row-pair layout (the T2P write-up, {@link T2pBlock}): one 136-byte block holds
     * 4 rows × 128 weights, so a tensor needs rows that are a multiple of {@link #rowGroup() 4}; per 128
     * weights that is 34 bytes, PQ2_0's size. GGUF id 1000 is outside ggml's enum (jquant's private range
     * starts there); ggml-based readers refuse the file, jquant reads it.
     */
    T2P(1000, 128, 34, 4,        T2pBlock::dequantize,    T2pBlock::encode, T2pBlock::decode),

    // Known to ggml, not decoded by jquant: exact sizes so files holding them open for inspection.
    Q8_1(9, 32, 36),
    IQ2_XXS(16, 256, 66),
    IQ2_XS(17, 256, 74),
    IQ3_XXS(18, 256, 98),
    IQ1_S(19, 256, 50),
    IQ4_NL(20, 32, 18),
    IQ3_S(21, 256, 110),
    IQ2_S(22, 256, 82),
    IQ4_XS(23, 256, 136),
    I16(25, 1, 2),
    I32(26, 1, 4),
    I64(27, 1, 8),
    F64(28, 1, 8),
    IQ1_M(29, 256, 56),
    MXFP4(39, 32, 17);

    /** The decoder of a type whose blocks span {@link #rowGroup()} rows: it needs the row length. */
    @FunctionalInterface
    interface RowGroupDecoder {
        void dequantize(MemorySegment src, float[] dst, int offset, int count, int rowLength);
    }

    /** A ternary type's encoder: the stored bytes of a tensor's codes and scales. */
    @FunctionalInterface
    interface TernaryEncoder {
        byte[] encode(TernaryTensor t) throws T2pShapeException;
    }

    /** A ternary type's decoder: the codes and scales of a stored tensor, exactly. */
    @FunctionalInterface
    interface TernaryDecoder {
        TernaryTensor decode(String name, byte[] data, int rows, int cols) throws T2pShapeException;
    }

    private final int ggmlId;
    private final int blockSize;
    private final int blockBytes;
    private final int rowGroup;
    /** Null where the type is not decodable or its blocks span rows ({@link #groupDecoder}). */
    private final Dequantizer decoder;
    private final RowGroupDecoder groupDecoder;
    private final FloatEncoder encoder;
    private final TernaryEncoder ternaryEncoder;
    private final TernaryDecoder ternaryDecoder;

    /** Known only by its size. */
    DType(int ggmlId, int blockSize, int blockBytes) {
        this(ggmlId, blockSize, blockBytes, 1, null, null, null, null, null);
    }

    DType(int ggmlId, int blockSize, int blockBytes, Dequantizer decoder) {
        this(ggmlId, blockSize, blockBytes, 1, decoder, null, null, null, null);
    }

    DType(int ggmlId, int blockSize, int blockBytes, Dequantizer decoder, FloatEncoder encoder) {
        this(ggmlId, blockSize, blockBytes, 1, decoder, null, encoder, null, null);
    }

    DType(int ggmlId, int blockSize, int blockBytes, Dequantizer decoder, TernaryEncoder ternaryEncoder,
          TernaryDecoder ternaryDecoder) {
        this(ggmlId, blockSize, blockBytes, 1, decoder, null, null, ternaryEncoder, ternaryDecoder);
    }

    DType(int ggmlId, int blockSize, int blockBytes, int rowGroup, RowGroupDecoder groupDecoder,
          TernaryEncoder ternaryEncoder, TernaryDecoder ternaryDecoder) {
        this(ggmlId, blockSize, blockBytes, rowGroup, null, groupDecoder, null, ternaryEncoder, ternaryDecoder);
    }

    DType(int ggmlId, int blockSize, int blockBytes, int rowGroup, Dequantizer decoder, RowGroupDecoder groupDecoder,
          FloatEncoder encoder, TernaryEncoder ternaryEncoder, TernaryDecoder ternaryDecoder) {
        this.ggmlId = ggmlId;
        this.blockSize = blockSize;
        this.blockBytes = blockBytes;
        this.rowGroup = rowGroup;
        this.decoder = decoder;
        this.groupDecoder = groupDecoder;
        this.encoder = encoder;
        this.ternaryEncoder = ternaryEncoder;
        this.ternaryDecoder = ternaryDecoder;
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
    public boolean isDecodable() { return decoder != null || groupDecoder != null; }

    /** Whether {@link FloatEncoder#of} can encode float32 values into this type. */
    public boolean isEncodable() { return encoder != null; }

    /** Whether this is a ternary type with a codec to and from {@link TernaryTensor} ({@link TernaryCodecs}). */
    public boolean isTernary() { return ternaryEncoder != null; }

    Dequantizer decoder() { return decoder; }

    RowGroupDecoder groupDecoder() { return groupDecoder; }

    FloatEncoder encoder() { return encoder; }

    TernaryEncoder ternaryEncoder() { return ternaryEncoder; }

    TernaryDecoder ternaryDecoder() { return ternaryDecoder; }

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
