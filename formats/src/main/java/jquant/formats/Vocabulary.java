package jquant.formats;

import java.util.Collections;
import java.util.List;

/**
 * A tokenizer vocabulary as a checkpoint stores it: pieces, their scores (SentencePiece log
 * probabilities or BPE merge ranks), token types and, for byte-level BPE, how text is split before
 * merging.
 *
 * @param kind         how the pieces are meant to be used
 * @param pieces       token id to piece text; SentencePiece pieces keep their {@code ▁} (U+2581)
 * @param scores       token id to score
 * @param merges       BPE merge rules ("a b"), empty for SentencePiece
 * @param bos          beginning-of-sequence id, or -1
 * @param eos          end-of-sequence id, or -1
 * @param addBos       whether encoding a text starts with {@code bos}
 * @param types        token id to type; {@link TokenType#CONTROL} and {@link TokenType#USER_DEFINED}
 *                     pieces of a BPE vocabulary are recognised whole in text
 * @param preTokenizer how a BPE vocabulary splits text into words ({@link PreTokenizer#NONE} for SentencePiece)
 * @param ignoreMerges whether a BPE word that is itself a piece is emitted whole, without merging
 *                     (Hugging Face tokenizers' {@code ignore_merges}; llama.cpp sets it for Llama 3)
 */
public record Vocabulary(Kind kind, List<String> pieces, float[] scores, List<String> merges,
                         int bos, int eos, boolean addBos,
                         List<TokenType> types, PreTokenizer preTokenizer, boolean ignoreMerges) {

    public enum Kind {
        /** SentencePiece BPE with scores and byte fallback (llama2.c tokenizer.bin, GGUF "llama", tokenizer.model). */
        SENTENCEPIECE,
        /** Byte-level BPE with merges (GGUF "gpt2", tokenizer.json). */
        BPE
    }

    /** A token's type, numbered as GGUF's {@code tokenizer.ggml.token_type} and SentencePiece number them. */
    public enum TokenType {
        UNDEFINED, NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE;

        /** The GGUF / SentencePiece number of this type. */
        public int code() { return ordinal(); }

        /** The type numbered {@code code}; an unknown number is {@link #UNDEFINED}, as llama.cpp reads it. */
        public static TokenType of(long code) {
            return code >= 0 && code < values().length ? values()[(int) code] : UNDEFINED;
        }
    }

    public Vocabulary {
        pieces = List.copyOf(pieces);
        merges = List.copyOf(merges);
        types = List.copyOf(types);
        if (scores.length != pieces.size()) {
            throw new IllegalArgumentException("vocabulary has " + pieces.size() + " pieces but " + scores.length + " scores");
        }
        if (types.size() != pieces.size()) {
            throw new IllegalArgumentException("vocabulary has " + pieces.size() + " pieces but " + types.size() + " token types");
        }
    }

    /**
     * A vocabulary whose pieces are all {@link TokenType#NORMAL}; BPE splits text with GPT-2's pattern and
     * merges every word.
     */
    public Vocabulary(Kind kind, List<String> pieces, float[] scores, List<String> merges, int bos, int eos, boolean addBos) {
        this(kind, pieces, scores, merges, bos, eos, addBos, Collections.nCopies(pieces.size(), TokenType.NORMAL),
                kind == Kind.BPE ? PreTokenizer.GPT2 : PreTokenizer.NONE, false);
    }

    public int size() { return pieces.size(); }

    /**
     * This vocabulary grown to {@code size} pieces by unused tokens {@code [PAD<id>]}, as llama.cpp's
     * convert_hf_to_gguf.py fills the rows a model's embedding has beyond its tokenizer (Qwen2's
     * vocab_size exceeds its tokenizer.json).
     */
    public Vocabulary paddedTo(int size) {
        if (size <= pieces.size()) return this;
        List<String> p = new java.util.ArrayList<>(pieces);
        List<TokenType> t = new java.util.ArrayList<>(types);
        for (int i = pieces.size(); i < size; i++) {
            p.add("[PAD" + i + "]");
            t.add(TokenType.UNUSED);
        }
        return new Vocabulary(kind, p, java.util.Arrays.copyOf(scores, size), merges, bos, eos, addBos, t, preTokenizer, ignoreMerges);
    }

    /** This vocabulary encoding with or without a leading BOS. */
    public Vocabulary withAddBos(boolean add) {
        return new Vocabulary(kind, pieces, scores, merges, bos, eos, add, types, preTokenizer, ignoreMerges);
    }
}
