package jquant.formats.gguf;

import java.util.SequencedMap;
import jquant.formats.DType;

/**
 * {@code general.file_type} and {@code general.quantization_version}, which llama.cpp's own files carry
 * and jquant writes on every GGUF file. The file type is llama.cpp's {@code enum llama_ftype}: the type
 * most weight matrices are stored in (norms and biases stay F32 in every file type).
 */
public final class GgufFileType {
    public static final String FILE_TYPE = "general.file_type";
    public static final String QUANTIZATION_VERSION = "general.quantization_version";
    /** ggml's {@code GGML_QNT_VERSION}. */
    public static final int GGML_QNT_VERSION = 2;
    /**
     * {@code LLAMA_FTYPE_GUESSED}: what llama.cpp assumes of a file without a type; written for the
     * matrix types llama.cpp has no file type for (PQ2_0, PTQ1_0, jquant's T2P).
     */
    public static final int GUESSED = 1024;

    private GgufFileType() {}

    /** {@code llama_ftype} of a file whose matrices are mostly {@code type}. */
    public static int of(DType type) {
        return switch (type) {
            case F32 -> 0;      // LLAMA_FTYPE_ALL_F32
            case F16 -> 1;      // LLAMA_FTYPE_MOSTLY_F16
            case Q4_0 -> 2;
            case Q4_1 -> 3;
            case Q8_0 -> 7;
            case Q5_0 -> 8;
            case Q5_1 -> 9;
            case Q2_K -> 10;
            case BF16 -> 32;    // LLAMA_FTYPE_MOSTLY_BF16
            case TQ1_0 -> 36;   // LLAMA_FTYPE_MOSTLY_TQ1_0
            case TQ2_0 -> 37;   // LLAMA_FTYPE_MOSTLY_TQ2_0
            default -> GUESSED;
        };
    }

    /** Sets both keys in {@code metadata} (in place if present, else appended). */
    public static void put(SequencedMap<String, GgufValue> metadata, DType mostly) {
        metadata.put(FILE_TYPE, GgufValue.uint32(of(mostly)));
        metadata.put(QUANTIZATION_VERSION, GgufValue.uint32(GGML_QNT_VERSION));
    }
}
