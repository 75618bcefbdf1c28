package jquant.formats;

import java.util.List;

/**
 * A tokenizer vocabulary as a checkpoint stores it: pieces, their scores (SentencePiece log
 * probabilities or BPE merge ranks) and, where known, token types.
 *
 * @param kind    how the pieces are meant to be used
 * @param pieces  token id to piece text; SentencePiece pieces keep their {@code ▁} (U+2581)
 * @param scores  token id to score
 * @param merges  BPE merge rules ("a b"), empty for SentencePiece
 * @param bos     beginning-of-sequence id, or -1
 * @param eos     end-of-sequence id, or -1
 * @param addBos  whether encoding a text starts with {@code bos}
 */
public record Vocabulary(Kind kind, List<String> pieces, float[] scores, List<String> merges,
                         int bos, int eos, boolean addBos) {

    public enum Kind {
        /** SentencePiece BPE with scores and byte fallback (llama2.c tokenizer.bin, GGUF "llama", tokenizer.model). */
        SENTENCEPIECE,
        /** Byte-level BPE with merges (GGUF "gpt2", tokenizer.json). */
        BPE
    }

    public Vocabulary {
        pieces = List.copyOf(pieces);
        merges = List.copyOf(merges);
        if (scores.length != pieces.size()) {
            throw new IllegalArgumentException("vocabulary has " + pieces.size() + " pieces but " + scores.length + " scores");
        }
    }

    public int size() { return pieces.size(); }
}
