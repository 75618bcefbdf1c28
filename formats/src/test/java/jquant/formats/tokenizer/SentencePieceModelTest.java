package jquant.formats.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import jquant.formats.CheckpointException;
import jquant.formats.Vocabulary;
import jquant.formats.gguf.GgufFile;
import jquant.formats.gguf.GgufValue;
import jquant.testsupport.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SentencePieceModelTest {
    @TempDir
    Path dir;

    @Test
    void tok512MatchesTheVocabularyInTheGguf() throws Exception {
        Vocabulary v = SentencePieceModel.read(SharedFiles.model("tok512.model"));
        assertThat(v.kind()).isEqualTo(Vocabulary.Kind.SENTENCEPIECE);
        assertThat(v.size()).isEqualTo(512);
        assertThat(v.bos()).isEqualTo(1);
        assertThat(v.eos()).isEqualTo(2);
        try (GgufFile gguf = GgufFile.open(SharedFiles.model("stories260K-f32.gguf"))) {
            List<String> tokens = gguf.metadata().get("tokenizer.ggml.tokens").asArray().elements().stream().map(GgufValue::asString).toList();
            List<GgufValue> scores = gguf.metadata().get("tokenizer.ggml.scores").asArray().elements();
            assertThat(v.pieces()).containsExactlyElementsOf(tokens);
            for (int i = 0; i < 512; i++) assertThat(v.scores()[i]).as("score of %s", tokens.get(i)).isEqualTo(scores.get(i).asFloat());
        }
    }

    private static void varint(ByteArrayOutputStream out, long v) {
        while ((v & ~0x7FL) != 0) {
            out.write((int) (v & 0x7F) | 0x80);
            v >>>= 7;
        }
        out.write((int) v);
    }

    private static void lengthDelimited(ByteArrayOutputStream out, int field, byte[] body) {
        varint(out, (long) field << 3 | 2);
        varint(out, body.length);
        out.write(body, 0, body.length);
    }

    private static byte[] piece(String text, float score, int type, boolean withUnknownFields) {
        ByteArrayOutputStream p = new ByteArrayOutputStream();
        if (withUnknownFields) {
            varint(p, 9L << 3 | 1); // fixed64 field 9
            p.writeBytes(new byte[8]);
            varint(p, 10L << 3); // varint field 10
            varint(p, 300);
        }
        lengthDelimited(p, 1, text.getBytes(StandardCharsets.UTF_8));
        varint(p, 2L << 3 | 5);
        int bits = Float.floatToRawIntBits(score);
        p.writeBytes(new byte[] {(byte) bits, (byte) (bits >> 8), (byte) (bits >> 16), (byte) (bits >> 24)});
        if (type != 1) {
            varint(p, 3L << 3);
            varint(p, type);
        }
        return p.toByteArray();
    }

    @Test
    void skipsUnknownFieldsOfEveryWireTypeAndDefaultsTheType() {
        ByteArrayOutputStream model = new ByteArrayOutputStream();
        lengthDelimited(model, 2, new byte[] {8, 1, 0x15, 0, 0, 0, 0}); // trainer_spec-like message, skipped
        lengthDelimited(model, 1, piece("</s>", 0f, 3, true));
        varint(model, 7L << 3 | 5); // fixed32 field 7
        model.writeBytes(new byte[4]);
        lengthDelimited(model, 1, piece("▁the", -3.5f, 1, false));
        lengthDelimited(model, 1, piece("<s>", 0f, 3, false));
        Vocabulary v = SentencePieceModel.parse(model.toByteArray());
        assertThat(v.pieces()).containsExactly("</s>", "▁the", "<s>");
        assertThat(v.scores()).containsExactly(0f, -3.5f, 0f);
        assertThat(v.bos()).isEqualTo(2);
        assertThat(v.eos()).isEqualTo(0);
    }

    @Test
    void rejectsMalformedModels() throws Exception {
        byte[] real = Files.readAllBytes(SharedFiles.model("tok512.model"));
        Path truncated = Files.write(dir.resolve("t.model"), java.util.Arrays.copyOf(real, 100));
        assertThatThrownBy(() -> SentencePieceModel.read(truncated)).isInstanceOf(CheckpointException.class).hasMessageContaining("overruns");
        assertThatThrownBy(() -> SentencePieceModel.parse(new byte[] {0x0B})).hasMessageContaining("wire type 3");
        assertThatThrownBy(() -> SentencePieceModel.parse(new byte[] {0x0D, 0, 0, 0, 0})).hasMessageContaining("ModelProto.pieces has wire type 5");
        assertThatThrownBy(() -> SentencePieceModel.parse(new byte[0])).hasMessageContaining("no pieces");
    }
}
