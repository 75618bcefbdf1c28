package jquant.formats.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import jquant.formats.CheckpointException;
import jquant.formats.PreTokenizer;
import jquant.formats.Vocabulary;
import jquant.formats.Vocabulary.TokenType;
import org.junit.jupiter.api.Test;

/** tokenizer.ggml.* of a byte-level BPE GGUF: the pre-tokenizer name and what llama.cpp makes of it. */
class GgufVocabularyTest {
    private static final Path FILE = Path.of("model.gguf");

    /** A three-token gpt2 vocabulary ("a", "b", "<|end|>" as control) with the given extra keys. */
    private static Map<String, GgufValue> gpt2(Map<String, GgufValue> extra) {
        Map<String, GgufValue> kv = new LinkedHashMap<>();
        kv.put("tokenizer.ggml.model", GgufValue.string("gpt2"));
        kv.put("tokenizer.ggml.tokens", GgufValue.stringArray(List.of("a", "b", "<|end|>")));
        kv.put("tokenizer.ggml.token_type", GgufValue.array(GgufType.INT32, List.of(GgufValue.int32(1), GgufValue.int32(1), GgufValue.int32(3))));
        kv.put("tokenizer.ggml.merges", GgufValue.stringArray(List.of("a b")));
        kv.put("tokenizer.ggml.bos_token_id", GgufValue.uint32(2));
        kv.putAll(extra);
        return kv;
    }

    private static Vocabulary read(Map<String, GgufValue> extra) throws CheckpointException {
        return GgufVocabulary.read(FILE, gpt2(extra)).orElseThrow();
    }

    @Test
    void llamaBpeIsLlama3sSplitWithWholeWordsAndBos() throws Exception {
        Vocabulary v = read(Map.of("tokenizer.ggml.pre", GgufValue.string("llama-bpe")));
        assertThat(v.preTokenizer().llamaCppName()).contains("llama-bpe");
        assertThat(v.preTokenizer().patterns()).singleElement().asString().startsWith("(?:'[sS]|'[tT]").contains("\\p{N}{1,3}");
        assertThat(v.ignoreMerges()).isTrue();
        assertThat(v.addBos()).isTrue();
        assertThat(v.types()).containsExactly(TokenType.NORMAL, TokenType.NORMAL, TokenType.CONTROL);
        // the file's own add_bos_token wins over the name's default
        assertThat(read(Map.of("tokenizer.ggml.pre", GgufValue.string("llama-bpe"), "tokenizer.ggml.add_bos_token", GgufValue.bool(false))).addBos()).isFalse();
    }

    @Test
    void otherNamesMapToTheirFamilies() throws Exception {
        Vocabulary qwen = read(Map.of("tokenizer.ggml.pre", GgufValue.string("qwen2")));
        assertThat(qwen.preTokenizer().patterns()).singleElement().asString().contains("|\\p{N}|");
        assertThat(qwen.ignoreMerges()).isFalse();
        assertThat(qwen.addBos()).isFalse();
        assertThat(read(Map.of("tokenizer.ggml.pre", GgufValue.string("smollm"))).preTokenizer().patterns()).hasSize(2).first().isEqualTo("\\p{N}");
        assertThat(read(Map.of("tokenizer.ggml.pre", GgufValue.string("gpt-2"))).preTokenizer().patterns()).singleElement().asString()
                .isEqualTo(PreTokenizer.GPT2_PATTERN.replace("|\\s+(?!\\S)|\\s+", "|\\s+(?!\\S)"));
        // no name: llama.cpp's "default"
        assertThat(read(Map.of()).preTokenizer().llamaCppName()).contains("default");
    }

    @Test
    void unknownNameIsRefusedByName() {
        assertThatThrownBy(() -> read(Map.of("tokenizer.ggml.pre", GgufValue.string("kimi-k2"))))
                .isInstanceOf(CheckpointException.class)
                .hasMessageStartingWith("model.gguf: tokenizer.ggml.pre 'kimi-k2' is not supported (supported: a.x-4.0, codeshell, command-r, dbrx, ")
                .hasMessageContaining("llama-bpe").hasMessageContaining("qwen2").hasMessageContaining("smollm").hasMessageEndingWith(")");
    }

    @Test
    void everySupportedPatternCompilesWithUnicodeClasses() {
        for (String name : LlamaCppPreTokenizers.names()) {
            for (String p : LlamaCppPreTokenizers.named(name).orElseThrow().patterns()) {
                assertThat(Pattern.compile(p, Pattern.UNICODE_CHARACTER_CLASS).matcher("Hello, world 123").find()).as(name).isTrue();
            }
        }
    }
}
