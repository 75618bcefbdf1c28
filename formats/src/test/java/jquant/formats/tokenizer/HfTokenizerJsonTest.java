package jquant.formats.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import jquant.formats.CheckpointException;
import jquant.formats.PreTokenizer;
import jquant.testsupport.SharedFiles;
import jquant.formats.Vocabulary;
import jquant.formats.Vocabulary.TokenType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HfTokenizerJsonTest {
    @TempDir
    Path dir;

    private static final String DIGITS_THEN_BYTE_LEVEL = """
            {"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},
             {"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}]}""";
    private static final String BOS_TEMPLATE = """
            {"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],
             "pair":[],"special_tokens":{"<s>":{"id":"<s>","ids":[0],"tokens":["<s>"]}}}""";

    /** A tokenizer.json with three vocabulary pieces, a special and a user-defined token, and the given parts (JSON). */
    private Path json(String preTokenizer, String postProcessor, String normalizer) throws Exception {
        Path file = dir.resolve("tokenizer.json");
        Files.writeString(file, """
                {"version":"1.0","added_tokens":[{"id":0,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
                 {"id":4,"content":"<tool>","special":false}],
                 "normalizer":%s,"pre_tokenizer":%s,"post_processor":%s,"decoder":{"type":"ByteLevel"},
                 "model":{"type":"BPE","dropout":null,"unk_token":null,"ignore_merges":false,"vocab":{"a":1,"b":2,"ab":3},"merges":[["a","b"]]}}"""
                .formatted(normalizer, preTokenizer, postProcessor));
        return file;
    }

    @Test
    void readsSequenceSplitsAndTemplateBos() throws Exception {
        Vocabulary v = HfTokenizerJson.read(json(DIGITS_THEN_BYTE_LEVEL, BOS_TEMPLATE, "null"));
        assertThat(v.pieces()).containsExactly("<s>", "a", "b", "ab", "<tool>");
        assertThat(v.types()).containsExactly(TokenType.CONTROL, TokenType.NORMAL, TokenType.NORMAL, TokenType.NORMAL, TokenType.USER_DEFINED);
        assertThat(v.merges()).containsExactly("a b");
        assertThat(v.preTokenizer()).isEqualTo(new PreTokenizer(Optional.of("smollm"), List.of("\\p{N}", PreTokenizer.GPT2_PATTERN)));
        assertThat(v.bos()).isZero();
        assertThat(v.addBos()).isTrue();
        assertThat(v.ignoreMerges()).isFalse();
        // without the template, and with a tokenizer_config.json saying so
        assertThat(HfTokenizerJson.read(json(DIGITS_THEN_BYTE_LEVEL, "null", "null")).addBos()).isFalse();
        Path withConfig = json(DIGITS_THEN_BYTE_LEVEL, BOS_TEMPLATE, "null");
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"add_bos_token\": false, \"eos_token\": {\"content\": \"<tool>\"}}");
        Vocabulary configured = HfTokenizerJson.read(withConfig);
        assertThat(configured.addBos()).isFalse();
        assertThat(configured.eos()).isEqualTo(4);
    }

    @Test
    void refusesWhatItWouldNotReproduce() throws Exception {
        String byteLevel = "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}";
        assertRefused(json("{\"type\":\"Metaspace\",\"replacement\":\"▁\"}", "null", "null"), "pre-tokenizer 'Metaspace' is not supported");
        assertRefused(json("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\s\"},\"behavior\":\"Removed\",\"invert\":false}", "null", "null"),
                "Split behaviour 'Removed' is not supported (Isolated only)");
        assertRefused(json("{\"type\":\"Whitespace\"}", "null", "null"), "pre-tokenizer 'Whitespace' is not supported");
        assertRefused(json("{\"type\":\"Sequence\",\"pretokenizers\":[" + byteLevel + ",{\"type\":\"Digits\"}]}", "null", "null"),
                "pre-tokenizer step Digits after ByteLevel is not supported");
        assertRefused(json("{\"type\":\"Digits\"}", "null", "null"), "its pre-tokenizer has no ByteLevel step: only byte-level BPE (and SentencePiece-style BPE with a ▁ prefix and byte fallback) is supported");
        assertRefused(json("{\"type\":\"ByteLevel\",\"add_prefix_space\":true}", "null", "null"), "ByteLevel add_prefix_space is not supported");
        assertRefused(json(byteLevel, "null", "{\"type\":\"NFC\"}"), "normalizer 'NFC' is not supported (none only)");
        assertRefused(json("null", "null", """
                {"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]}"""),
                "a SentencePiece-style BPE without byte_fallback is not supported");
        assertRefused(json(byteLevel, """
                {"type":"TemplateProcessing","single":[{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"<s>","type_id":0}}]}""", "null"),
                "post-processor template appends <s> after the text, which is not supported");
        assertRefused(json(byteLevel, "{\"type\":\"RobertaProcessing\"}", "null"), "post-processor 'RobertaProcessing' is not supported");
        Path lstrip = json(byteLevel, "null", "null");
        Files.writeString(lstrip, Files.readString(lstrip).replace("\"lstrip\":false", "\"lstrip\":true"));
        assertRefused(lstrip, "added token '<s>' sets lstrip, which is not supported");
        // found by fuzzing: one id far past the entries asked for a list of that many slots (out of memory)
        Path farId = json(byteLevel, "null", "null");
        Files.writeString(farId, Files.readString(farId).replace("\"ab\":3", "\"ab\":944444444"));
        assertRefused(farId, "token 'ab' has id 944444444, but the vocabulary has only 3 entries");
        Path gap = json(byteLevel, "null", "null");
        Files.writeString(gap, Files.readString(gap).replace("\"ab\":3", "\"ab\":3000"));
        assertRefused(gap, "no token has id 3");   // within the bound, a hole no added token fills is the error
    }

    private static void assertRefused(Path file, String message) {
        assertThatThrownBy(() -> HfTokenizerJson.read(file)).isInstanceOf(CheckpointException.class).hasMessageEndingWith(message);
    }

    @Test
    void llama3sBosNeedsItsTokenizerConfig() throws Exception {
        Path real = SharedFiles.model("llama3-tokenizer").resolve("tokenizer.json");
        Vocabulary v = HfTokenizerJson.read(real);
        assertThat(v.bos()).isEqualTo(128_000);
        assertThat(v.addBos()).isTrue();
        // alone, the file names no BOS token, so there is none to add
        Path alone = Files.copy(real, dir.resolve("tokenizer.json"));
        Vocabulary bare = HfTokenizerJson.read(alone);
        assertThat(bare.bos()).isEqualTo(-1);
        assertThat(bare.addBos()).isFalse();
        assertThat(bare.pieces()).isEqualTo(v.pieces());
    }
}
