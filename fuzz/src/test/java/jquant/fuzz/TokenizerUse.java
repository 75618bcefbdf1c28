package jquant.fuzz;

import jquant.formats.Vocabulary;
import jquant.runtime.Tokenizer;

import java.util.Arrays;

/**
 * What a model does with a vocabulary once read: builds its tokenizer, encodes a text that needs
 * merges, byte fallback and non-ASCII, and decodes the ids back. A vocabulary the tokenizers cannot
 * use, or a text it cannot represent, is refused with {@link IllegalArgumentException} (their
 * documented refusal, {@link Tokenizer#of} and {@link Tokenizer#encode}), never another error.
 */
public final class TokenizerUse {
    private static final String TEXT = "Once upon a time, a caf\u00e9 \u2014 \u732b and 42 <s> emoji \uD83D\uDE00\n\tend.";

    private TokenizerUse() {}

    public static void exercise(Vocabulary vocabulary) {
        Tokenizer tokenizer;
        try {
            tokenizer = Tokenizer.of(vocabulary);
        } catch (IllegalArgumentException refused) {
            return;
        }
        int[] ids;
        try {
            ids = tokenizer.encode(TEXT);
        } catch (IllegalArgumentException refused) {
            return;
        }
        tokenizer.decode(ids);
        for (int id : Arrays.copyOf(ids, Math.min(ids.length, 8))) tokenizer.pieceBytes(id);
    }
}
