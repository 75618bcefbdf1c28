package jquant.runtime;

import jquant.formats.PreTokenizer;
import jquant.formats.Vocabulary;
import jquant.formats.Vocabulary.TokenType;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BytePairTokenizerTest {

    /**
     * A GPT-2-style vocabulary: {@code <s>}, {@code </s>}, the 256 byte characters, then the results of
     * the given merges in rank order.
     */
    private static Vocabulary vocabulary(String... merges) {
        List<String> pieces = new ArrayList<>(List.of("<s>", "</s>"));
        for (int b = 0; b < 256; b++) pieces.add(String.valueOf(BytePairTokenizer.byteChar(b)));
        for (String m : merges) pieces.add(m.replace(" ", ""));
        return new Vocabulary(Vocabulary.Kind.BPE, pieces, new float[pieces.size()], List.of(merges), 0, 1, true);
    }

    private static int id(Vocabulary v, String piece) {
        return v.pieces().indexOf(piece);
    }

    @Test
    void mergesByRankWithinGpt2PreTokens() {
        // 'Ġ' is GPT-2's character for the space byte.
        Vocabulary v = vocabulary("l o", "lo w", "Ġ lo", "Ġlo w", "e r", "low er");
        Tokenizer t = Tokenizer.of(v);
        // " lower" is one pre-token, Ġ l o w e r. Lowest rank first: l o → lo, lo w → low (so "Ġ lo" never
        // applies), e r → er, low er → lower.
        assertThat(t.encode(" lower", false)).containsExactly(id(v, "Ġ"), id(v, "lower"));
        // "low," splits into the pre-tokens "low" and ",": no merge crosses them.
        assertThat(t.encode("low,", false)).containsExactly(id(v, "low"), id(v, ","));
        assertThat(t.encode("hi")).startsWith(0);  // BOS first when the vocabulary adds it
    }

    @Test
    void decodeInvertsEncodeOnAnyText() {
        Vocabulary v = vocabulary("t h", "th e", "Ġ the", "i n", "Ġ a");
        Tokenizer t = Tokenizer.of(v);
        Random rnd = new Random(7);
        String alphabet = "the cat in a hat, 42 ünïcödé — 日本語 🙂\n\t";
        for (int trial = 0; trial < 200; trial++) {
            StringBuilder sb = new StringBuilder();
            int len = rnd.nextInt(40);
            for (int i = 0; i < len; i++) sb.appendCodePoint(alphabet.codePointAt(alphabet.offsetByCodePoints(0, rnd.nextInt(alphabet.codePointCount(0, alphabet.length())))));
            String text = sb.toString();
            assertThat(t.decode(t.encode(text))).as(text).isEqualTo(text);
        }
        assertThat(t.encode(" the", false)).containsExactly(id(v, "Ġthe"));
    }

    /** The byte pieces in byte order, "ab" from merging "a b", and {@code extra} pieces of the given types, split by GPT-2's pattern. */
    private static Vocabulary withPieces(boolean ignoreMerges, Map<String, TokenType> extra) {
        List<String> pieces = new ArrayList<>();
        for (int b = 0; b < 256; b++) pieces.add(String.valueOf(BytePairTokenizer.byteChar(b)));
        pieces.add("ab");
        List<TokenType> types = new ArrayList<>(Collections.nCopies(pieces.size(), TokenType.NORMAL));
        extra.forEach((piece, type) -> {
            pieces.add(piece);
            types.add(type);
        });
        return new Vocabulary(Vocabulary.Kind.BPE, pieces, new float[pieces.size()], List.of("a b"), -1, -1, false, types,
                PreTokenizer.GPT2, ignoreMerges);
    }

    @Test
    void aWordThatIsAPieceSkipsMergingWhenMergesAreIgnored() {
        // "abc" is a piece no merge reaches: merging gives ab + c, ignore_merges (Llama 3's setting) the piece itself
        Vocabulary merging = withPieces(false, Map.of("abc", TokenType.NORMAL));
        Vocabulary whole = withPieces(true, Map.of("abc", TokenType.NORMAL));
        assertThat(Tokenizer.of(merging).encode("abc", false)).containsExactly(id(merging, "ab"), 'c');
        assertThat(Tokenizer.of(whole).encode("abc", false)).containsExactly(id(whole, "abc"));
        assertThat(Tokenizer.of(whole).encode("abcab", false)).containsExactly(id(whole, "ab"), 'c', id(whole, "ab"));
    }

    @Test
    void controlAndUserDefinedPiecesAreFoundWholeLeftmostLongest() {
        Map<String, TokenType> extra = new LinkedHashMap<>();
        extra.put("<|x|>", TokenType.CONTROL);
        extra.put("<|x|>y", TokenType.CONTROL);
        extra.put("<t>", TokenType.USER_DEFINED);
        extra.put("<n>", TokenType.NORMAL);
        Vocabulary v = withPieces(false, extra);
        Tokenizer t = Tokenizer.of(v);
        int[] ids = t.encode("ab<|x|>yab<|x|><t><n>", false);
        // byte pieces come first, in byte order: the id of a printable ASCII character is its code
        assertThat(ids).containsExactly(id(v, "ab"), id(v, "<|x|>y"), id(v, "ab"), id(v, "<|x|>"), id(v, "<t>"), '<', 'n', '>');
        assertThat(t.decode(ids)).isEqualTo("ab<|x|>yab<|x|><t><n>");
        assertThat(t.pieceBytes(id(v, "<|x|>"))).isEqualTo("<|x|>".getBytes(StandardCharsets.UTF_8));
        // a byte piece may be half a character: 'é' is C3 A9, each its own piece here
        assertThat(t.encode("é", false)).containsExactly(0xC3, 0xA9);
        assertThat(t.pieceBytes(0xC3)).containsExactly((byte) 0xC3);
    }

    @Test
    void badVocabulariesAndTokensAreClearErrors() {
        Vocabulary missingBytes = new Vocabulary(Vocabulary.Kind.BPE, List.of("a", "b", "ab"), new float[3], List.of("a b"), -1, -1, false);
        assertThatThrownBy(() -> Tokenizer.of(missingBytes).encode("c")).hasMessageContaining("\"c\"").hasMessageContaining("not in the vocabulary");
        Vocabulary badMerge = new Vocabulary(Vocabulary.Kind.BPE, List.of("a"), new float[1], List.of("ab"), -1, -1, false);
        assertThatThrownBy(() -> Tokenizer.of(badMerge)).hasMessageContaining("merge rule 0");
        // as Hugging Face tokenizers refuses to load it: a merge must make a piece of the vocabulary
        Vocabulary mergeOutside = new Vocabulary(Vocabulary.Kind.BPE, List.of("a", "b"), new float[2], List.of("a b"), -1, -1, false);
        assertThatThrownBy(() -> Tokenizer.of(mergeOutside)).hasMessage("merge rule 0 \"a b\": \"ab\" is not in the vocabulary");
        assertThatThrownBy(() -> Tokenizer.of(vocabulary()).decode(new int[] {9999})).hasMessageContaining("outside the vocabulary");
    }
}
