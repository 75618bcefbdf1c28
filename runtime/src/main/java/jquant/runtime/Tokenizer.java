package jquant.runtime;

import jquant.formats.Vocabulary;

/** Text ↔ token ids for a model's vocabulary. */
public interface Tokenizer {

    /**
     * Encodes {@code text}, starting with BOS if the vocabulary says encoding adds it.
     *
     * @throws IllegalArgumentException if the vocabulary cannot represent the text (a character with
     *                                  neither a piece nor a byte token) or has no BOS to add
     */
    int[] encode(String text);

    /** Encodes {@code text}, with a leading BOS if {@code addBos}; refuses as {@link #encode(String)} does. */
    int[] encode(String text, boolean addBos);

    /** The text of a token sequence (control tokens such as BOS/EOS print nothing). */
    String decode(int[] tokens);

    /**
     * The bytes one token stands for, as llama.cpp's {@code token_to_piece} shows it with special tokens
     * rendered: control tokens (BOS and EOS too) as their text, a byte token as its byte, so a piece may
     * be part of a UTF-8 character.
     */
    byte[] pieceBytes(int token);

    /** Beginning-of-sequence id, or -1 if the vocabulary has none. */
    int bos();

    /** End-of-sequence id, or -1 if the vocabulary has none. */
    int eos();

    /** Whether {@link #encode(String)} starts a text with BOS. */
    boolean addsBos();

    /**
     * The tokenizer for {@code vocabulary}: SentencePiece BPE or byte-level BPE.
     *
     * @throws IllegalArgumentException for a vocabulary neither can use (merges naming missing pieces, …)
     */
    static Tokenizer of(Vocabulary vocabulary) {
        return switch (vocabulary.kind()) {
            case SENTENCEPIECE -> new SentencePieceTokenizer(vocabulary);
            case BPE -> new BytePairTokenizer(vocabulary);
        };
    }
}
