package jquant.runtime;

import jquant.formats.Vocabulary;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
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

    @Test
    void badVocabulariesAndTokensAreClearErrors() {
        Vocabulary missingBytes = new Vocabulary(Vocabulary.Kind.BPE, List.of("a", "b"), new float[2], List.of("a b"), -1, -1, false);
        assertThatThrownBy(() -> Tokenizer.of(missingBytes).encode("c")).hasMessageContaining("\"c\"").hasMessageContaining("not in the vocabulary");
        Vocabulary badMerge = new Vocabulary(Vocabulary.Kind.BPE, List.of("a"), new float[1], List.of("ab"), -1, -1, false);
        assertThatThrownBy(() -> Tokenizer.of(badMerge)).hasMessageContaining("merge rule 0");
        assertThatThrownBy(() -> Tokenizer.of(vocabulary()).decode(new int[] {9999})).hasMessageContaining("outside the vocabulary");
    }
}
