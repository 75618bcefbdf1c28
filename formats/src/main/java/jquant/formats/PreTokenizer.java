package jquant.formats;

import java.util.List;
import java.util.Optional;

/**
 * How a byte-level BPE tokenizer cuts text into words before merging: regular expressions applied in
 * turn, each cutting every piece the one before left into its matches and the text between them
 * (Hugging Face tokenizers' {@code Split} with behaviour {@code Isolated}, chained by {@code Sequence};
 * llama.cpp's {@code unicode_regex_split} over its {@code regex_exprs}). No pattern keeps the text whole.
 *
 * <p>Patterns are kept as tokenizer.json or llama.cpp spell them; they are meant to run with Unicode
 * character classes ({@code \s} is Unicode White_Space, {@code (?i)} folds Unicode case), as Oniguruma
 * runs them for Hugging Face tokenizers.
 *
 * @param llamaCppName the name llama.cpp gives this pre-tokenizer ({@code tokenizer.ggml.pre}), if known
 * @param patterns     the regular expressions, applied in order
 */
public record PreTokenizer(Optional<String> llamaCppName, List<String> patterns) {

    /** GPT-2's pattern, as Hugging Face tokenizers' ByteLevel pre-tokenizer applies it when {@code use_regex} is set. */
    public static final String GPT2_PATTERN = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

    /** GPT-2's pre-tokenizer. */
    public static final PreTokenizer GPT2 = new PreTokenizer(Optional.of("gpt-2"), List.of(GPT2_PATTERN));

    /** No splitting: the whole text is one word (and SentencePiece vocabularies have no pre-tokenizer). */
    public static final PreTokenizer NONE = new PreTokenizer(Optional.empty(), List.of());

    public PreTokenizer {
        patterns = List.copyOf(patterns);
    }
}
