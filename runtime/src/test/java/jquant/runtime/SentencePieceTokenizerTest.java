package jquant.runtime;

import jquant.formats.Vocabulary;
import jquant.formats.llama2c.Llama2cTokenizerReader;
import jquant.testsupport.SharedFiles;
import jquant.testsupport.Slow;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Slow
class SentencePieceTokenizerTest {

    private static Tokenizer tok512() throws IOException {
        return Tokenizer.of(Llama2cTokenizerReader.read(SharedFiles.model("tok512.bin")));
    }

    @Test
    void goldenPromptEncodesAsRunCAndLlamaCpp() throws IOException {
        Tokenizer t = tok512();
        assertThat(t.encode("Once upon a time")).containsExactly(1, 403, 407, 261, 378);
        assertThat(t.encode("Once upon a time", false)).containsExactly(403, 407, 261, 378);
        assertThat(t.encode("")).containsExactly(1);
    }

    @Test
    void wholeEvaluationTextGivesLlamaCppsTokenCount() throws IOException {
        String text = Files.readString(SharedFiles.data("tinystories-valid-sample.txt"));
        int[] ids = tok512().encode(text);
        // llama.cpp's SentencePiece tokenizer with this vocabulary: 145,758 tokens, BOS included
        assertThat(ids).hasSize(145_758);
        assertThat(ids[0]).isEqualTo(1);
        assertThat(ids).containsOnlyOnce(1);
        assertThat(tok512().decode(ids)).isEqualTo(text);
    }

    @Test
    void charactersOutsideTheVocabularyFallBackToUtf8Bytes() throws IOException {
        Tokenizer t = tok512();
        String text = "café ш 🙂\tok\n";
        int[] ids = t.encode(text, false);
        // ш is D1 88, 🙂 is F0 9F 99 82 (é is a piece of its own); byte token <0xNN> has id NN + 3 in tok512
        assertThat(ids).contains(0xD1 + 3, 0x88 + 3, 0xF0 + 3, 0x9F + 3, 0x99 + 3, 0x82 + 3, '\t' + 3, '\n' + 3)
                .doesNotContain(0xC3 + 3);
        assertThat(t.decode(ids)).isEqualTo(text);
    }

    /** ▁ a b c with chosen merge scores: the highest-scoring pair merges first, ties go left. */
    private static Tokenizer synthetic(float abScore, float bcScore) {
        List<String> pieces = new ArrayList<>(List.of("<unk>", "<s>", "</s>", "▁", "a", "b", "c", "ab", "bc", "▁a", "<0x41>",
                "<", "s", ">", "<s"));
        float[] scores = {0, 0, 0, -1, -1, -1, -1, abScore, bcScore, -5, 0, -1, -1, -1, -2};
        return Tokenizer.of(new Vocabulary(Vocabulary.Kind.SENTENCEPIECE, pieces, scores, List.of(), 1, 2, true));
    }

    @Test
    void higherScoreWinsAndTiesGoLeft() {
        // "▁abc": candidates ▁a(-5), ab, bc
        assertThat(synthetic(-2, -3).encode("abc", false)).as("ab beats bc").containsExactly(3, 7, 6);
        assertThat(synthetic(-3, -2).encode("abc", false)).as("bc beats ab").containsExactly(9, 8);
        assertThat(synthetic(-2, -2).encode("abc", false)).as("tie: leftmost").containsExactly(3, 7, 6);
    }

    @Test
    void controlAndBytePiecesAreNeverMergedFromText() {
        Tokenizer t = synthetic(-2, -3);
        // "A" has only the byte token; the literal text "<s>" merges to "<s" + ">", never to BOS
        assertThat(t.encode("A", false)).containsExactly(3, 10);
        assertThat(t.encode("<s>", false)).containsExactly(3, 14, 13);
        assertThatThrownBy(() -> t.encode("x", false)).hasMessageContaining("\"x\" (U+78) is not in the vocabulary and it has no byte token <0x78>");
    }

    @Test
    void decodeDropsControlTokensAndTheDummyPrefixSpace() throws IOException {
        Tokenizer t = tok512();
        assertThat(t.decode(new int[] {1, 403, 407, 261, 378, 2})).isEqualTo("Once upon a time");
        assertThat(t.decode(new int[] {407, 261})).isEqualTo("upon a");
        assertThatThrownBy(() -> t.decode(new int[] {512})).hasMessageContaining("token 512 outside the vocabulary");
    }
}
