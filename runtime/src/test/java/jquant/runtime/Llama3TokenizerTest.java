package jquant.runtime;

import jquant.testsupport.SharedFiles;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.formats.CheckpointException;
import jquant.formats.PreTokenizer;
import jquant.formats.Vocabulary;
import jquant.formats.Vocabulary.TokenType;
import jquant.formats.gguf.LlamaCppPreTokenizers;
import jquant.formats.tokenizer.HfTokenizerJson;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Meta's Llama 3 tokenizer ({@code ../shared/models/llama3-tokenizer/tokenizer.json}) against published
 * ids (llama3-tokenizer-js's test cases, llama.cpp's test vectors for "llama-bpe") and against Hugging
 * Face tokenizers itself (the Rust library through DJL) on whole texts.
 */
class Llama3TokenizerTest {
    private static final int BEGIN_OF_TEXT = 128_000;
    private static final int END_OF_TEXT = 128_001;

    private static final Map<String, String> ORACLE_OPTIONS = Map.of("truncation", "false", "padding", "false", "addSpecialTokens", "true");

    private static Vocabulary vocabulary;
    private static Tokenizer tokenizer;
    private static HuggingFaceTokenizer oracle;

    private static Path tokenizerJson() {
        return SharedFiles.model("llama3-tokenizer").resolve("tokenizer.json");
    }

    private static synchronized Tokenizer llama3() throws CheckpointException {
        if (tokenizer == null) {
            long start = System.nanoTime();
            vocabulary = HfTokenizerJson.read(tokenizerJson());
            long read = System.nanoTime();
            tokenizer = Tokenizer.of(vocabulary);
            System.out.printf("Llama 3 tokenizer.json: read in %.2f s, tokenizer built in %.2f s%n",
                    (read - start) / 1e9, (System.nanoTime() - read) / 1e9);
        }
        return tokenizer;
    }

    /** Hugging Face tokenizers on the same file: no truncation, no padding; this file's post-processor adds no BOS. */
    private static synchronized HuggingFaceTokenizer oracle() throws IOException {
        if (oracle == null) oracle = HuggingFaceTokenizer.newInstance(tokenizerJson(), ORACLE_OPTIONS);
        return oracle;
    }

    private static int[] oracleIds(String text) throws IOException {
        return ids(oracle(), text);
    }

    private static int[] ids(HuggingFaceTokenizer hf, String text) {
        return Arrays.stream(hf.encode(text).getIds()).mapToInt(Math::toIntExact).toArray();
    }

    @AfterAll
    static void closeOracle() {
        if (oracle != null) oracle.close();
    }

    @Test
    void readsLlama3sTokenizerJson() throws Exception {
        llama3();
        assertThat(vocabulary.size()).isEqualTo(128_256);
        assertThat(vocabulary.merges()).hasSize(280_147);
        assertThat(vocabulary.bos()).isEqualTo(BEGIN_OF_TEXT);
        assertThat(vocabulary.eos()).isEqualTo(END_OF_TEXT);
        // no add_bos_token in tokenizer_config.json and no template: BOS as llama.cpp adds it for "llama-bpe"
        assertThat(vocabulary.addBos()).isTrue();
        assertThat(vocabulary.ignoreMerges()).isTrue();
        assertThat(vocabulary.preTokenizer().llamaCppName()).contains("llama-bpe");
        assertThat(vocabulary.preTokenizer().patterns()).hasSize(1);
        assertThat(vocabulary.types().subList(0, 128_000)).containsOnly(TokenType.NORMAL);
        assertThat(vocabulary.types().subList(128_000, 128_256)).containsOnly(TokenType.CONTROL);
        assertThat(tokenizer.encode("I")).containsExactly(BEGIN_OF_TEXT, 40);
    }

    /**
     * Every case llama3-tokenizer-js's runTests() checks, and Hugging Face tokenizers gives the same ids.
     * The package names the special tokens as Llama 3.1 does, so the cases run on this tokenizer.json with
     * 3.1's names ({@link #llama31Name}); vocabulary and merges are the same.
     */
    @Test
    void reproducesLlama3TokenizerJsTestCases(@TempDir Path dir) throws Exception {
        Path renamed = llama31TokenizerJson(dir);
        Tokenizer t = Tokenizer.of(HfTokenizerJson.read(renamed));
        JsonNode cases = resource("llama3-tokenizer-js-cases.json").path("cases");
        int encodes = 0;
        try (HuggingFaceTokenizer oracle31 = HuggingFaceTokenizer.newInstance(renamed, ORACLE_OPTIONS)) {
            for (JsonNode c : cases) {
                String text = c.path("text").asText();
                int[] ids = ints(c.path("ids"));
                if (c.path("kind").asText().equals("encode")) {
                    int[] body = t.encode(text, false);
                    int[] expected = ids;
                    if (c.path("bos").asBoolean()) {
                        assertThat(ids[0]).isEqualTo(BEGIN_OF_TEXT);
                        assertThat(t.encode(text)).containsExactly(IntStream.concat(IntStream.of(BEGIN_OF_TEXT), IntStream.of(body)).toArray());
                        expected = Arrays.copyOfRange(expected, 1, expected.length);
                    }
                    if (c.path("eos").asBoolean()) {  // the package appends EOS on request; encoding a text never does
                        assertThat(expected[expected.length - 1]).isEqualTo(END_OF_TEXT);
                        expected = Arrays.copyOf(expected, expected.length - 1);
                    }
                    assertSameIds(text, expected, body);
                    assertSameIds(text + " (Hugging Face)", expected, ids(oracle31, text));
                    encodes++;
                } else {
                    // the package's decode renders special tokens as their text, as pieceBytes does
                    ByteArrayOutputStream pieces = new ByteArrayOutputStream();
                    for (int id : ids) pieces.writeBytes(t.pieceBytes(id));
                    assertThat(pieces.toString(StandardCharsets.UTF_8)).isEqualTo(text);
                }
            }
        }
        assertThat(encodes).isEqualTo(21);
    }

    /** This tokenizer.json and its tokenizer_config.json, copied into {@code dir} with Llama 3.1's special token names. */
    private static Path llama31TokenizerJson(Path dir) throws IOException {
        ObjectMapper mapper = new ObjectMapper();
        ObjectNode root = (ObjectNode) mapper.readTree(tokenizerJson().toFile());
        for (JsonNode added : root.path("added_tokens")) ((ObjectNode) added).put("content", llama31Name(added.path("id").asInt()));
        Path file = dir.resolve("tokenizer.json");
        mapper.writeValue(file.toFile(), root);
        Files.copy(tokenizerJson().resolveSibling("tokenizer_config.json"), dir.resolve("tokenizer_config.json"));
        return file;
    }

    /**
     * Llama 3.1's name for special token {@code id} (Meta's llama-models tokenizer): 3.0's reserved tokens 2, 4
     * and 5 became {@code finetune_right_pad_id}, {@code eom_id} and {@code python_tag}, and the reserved
     * tokens after them were renumbered.
     */
    private static String llama31Name(int id) {
        return switch (id) {
            case 128_000 -> "<|begin_of_text|>";
            case 128_001 -> "<|end_of_text|>";
            case 128_002 -> "<|reserved_special_token_0|>";
            case 128_003 -> "<|reserved_special_token_1|>";
            case 128_004 -> "<|finetune_right_pad_id|>";
            case 128_005 -> "<|reserved_special_token_2|>";
            case 128_006 -> "<|start_header_id|>";
            case 128_007 -> "<|end_header_id|>";
            case 128_008 -> "<|eom_id|>";
            case 128_009 -> "<|eot_id|>";
            case 128_010 -> "<|python_tag|>";
            default -> "<|reserved_special_token_" + (id - 128_011 + 3) + "|>";
        };
    }

    /** llama.cpp's test-tokenizer-0 vectors for its Llama 3 vocabulary, with llama.cpp's own spelling of the split pattern too. */
    @Test
    void reproducesLlamaCppTestVectors() throws Exception {
        Tokenizer fromJson = llama3();
        Tokenizer llamaCppPattern = Tokenizer.of(asLlamaCppReadsIt(vocabulary));
        JsonNode cases = resource("llama-cpp-vocab-llama-bpe-cases.json").path("cases");
        assertThat(cases.size()).isEqualTo(44);
        for (JsonNode c : cases) {
            String text = c.path("text").asText();
            int[] expected = ints(c.path("ids"));
            assertSameIds(text, expected, fromJson.encode(text, false));
            assertSameIds(text + " (llama.cpp pattern)", expected, llamaCppPattern.encode(text, false));
            assertThat(fromJson.decode(expected)).isEqualTo(text);
        }
    }

    /** The whole of each text in ../shared/data, id for id as Hugging Face tokenizers encodes it, and back. */
    @ParameterizedTest
    @ValueSource(strings = {"wikitext-2-test.txt", "wikitext-2-test-tokens.txt", "tinystories-valid-sample.txt"})
    void wholeTextsMatchHuggingFaceTokenizers(String file) throws Exception {
        Tokenizer t = llama3();
        String text = Files.readString(SharedFiles.data(file));
        long start = System.nanoTime();
        int[] ids = t.encode(text, false);
        double seconds = (System.nanoTime() - start) / 1e9;
        long oracleStart = System.nanoTime();
        int[] expected = oracleIds(text);
        System.out.printf("%s: %,d tokens in %.2f s (Hugging Face tokenizers through DJL: %,d in %.2f s)%n",
                file, ids.length, seconds, expected.length, (System.nanoTime() - oracleStart) / 1e9);
        assertSameIds(file, expected, ids);
        assertThat(t.decode(ids)).isEqualTo(text);
        assertThat(seconds).as("seconds to tokenize %s", file).isLessThan(60);
    }

    /** The same with llama.cpp's spelling of the pattern, as a GGUF with tokenizer.ggml.pre = "llama-bpe" gives it. */
    @Test
    void llamaCppPatternMatchesOnWikitext() throws Exception {
        llama3();
        String text = Files.readString(SharedFiles.data("wikitext-2-test.txt"));
        assertSameIds("wikitext-2-test.txt (llama.cpp pattern)", oracleIds(text), Tokenizer.of(asLlamaCppReadsIt(vocabulary)).encode(text, false));
    }

    /**
     * Where Java's regex engine could part from Oniguruma's: Unicode whitespace, case folding in
     * {@code (?i:'s|…)}, digit groups, lookahead after whitespace runs, letters and digits outside ASCII,
     * lone surrogate-free supplementary characters, and special tokens inside words.
     */
    @Test
    void edgeCasesMatchHuggingFaceTokenizers() throws Exception {
        Tokenizer t = llama3();
        List<String> texts = List.of(
                "a\u00a0b\u2003c\u3000d\u0085e\u2028f\u1680g \u202f h\u001cx\u000by\fz",
                "IT'S 'S 'Ll 'lL 'ſ 'K we'RE they'VE I'M",
                "1234567 ١٢٣٤٥ ⅣⅫ ½¾ 3.14159 1,000,000 x²",
                "   \n\n  \t\t \r\n\r\n  x  \n y\t\t\tz     ",
                "İstanbul straße ΣΊΣΥΦΟΣ Ǆemal ﬁne ǅ",
                "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟏𝟐𝟑 😀😃 👩‍👩‍👧 🇫🇷",
                "abc<|eot_id|>def <|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|eot_id|>",
                "<|begin_of_text|><|end_of_text|> <|not_a_token|> <|reserved_special_token_250|>",
                "'''s '' 's's ---=== ...!!! ?? ``` \"\"\"",
                "",
                " ",
                "\n",
                "x" + " ".repeat(300) + "y" + "!".repeat(500));
        for (String text : texts) {
            int[] ids = t.encode(text, false);
            assertSameIds(text, oracleIds(text), ids);
            if (!text.contains("<|begin_of_text|>") && !text.contains("<|end_of_text|>")) assertThat(t.decode(ids)).isEqualTo(text);
        }
    }

    /** The vocabulary as a GGUF with tokenizer.ggml.pre = "llama-bpe" gives it: llama.cpp's patterns and flags. */
    private static Vocabulary asLlamaCppReadsIt(Vocabulary v) {
        LlamaCppPreTokenizers.Family family = LlamaCppPreTokenizers.named("llama-bpe").orElseThrow();
        assertThat(family.patterns()).isNotEqualTo(v.preTokenizer().patterns());
        return new Vocabulary(v.kind(), v.pieces(), v.scores(), v.merges(), v.bos(), v.eos(), family.addBos(), v.types(),
                new PreTokenizer(Optional.of("llama-bpe"), family.patterns()), family.ignoreMerges());
    }

    private static void assertSameIds(String what, int[] expected, int[] actual) {
        int n = Math.min(expected.length, actual.length);
        for (int i = 0; i < n; i++) {
            if (expected[i] != actual[i]) {
                fail("%s: token %d is %d, expected %d; expected %s…, got %s…", abbreviate(what), i, actual[i], expected[i],
                        Arrays.toString(Arrays.copyOfRange(expected, Math.max(0, i - 3), Math.min(expected.length, i + 6))),
                        Arrays.toString(Arrays.copyOfRange(actual, Math.max(0, i - 3), Math.min(actual.length, i + 6))));
            }
        }
        if (expected.length != actual.length) fail("%s: %d tokens, expected %d", abbreviate(what), actual.length, expected.length);
    }

    private static String abbreviate(String s) {
        return s.length() <= 80 ? s : s.substring(0, 80) + "…";
    }

    private static JsonNode resource(String name) throws IOException {
        try (InputStream in = Llama3TokenizerTest.class.getResourceAsStream(name)) {
            assertThat(in).as(name).isNotNull();
            return new ObjectMapper().readTree(in);
        }
    }

    private static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) out[i] = array.get(i).asInt();
        return out;
    }
}
