package jquant.cli;

import jquant.testsupport.SharedFiles;
import jquant.formats.Vocabulary;
import jquant.formats.gguf.GgufFile;
import jquant.formats.gguf.GgufType;
import jquant.formats.gguf.GgufValue;
import jquant.formats.gguf.GgufWriter;
import jquant.formats.tokenizer.HfTokenizerJson;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;

import static org.assertj.core.api.Assertions.assertThat;

class TokenizeCommandTest {

    private static Path data(String name) {
        return SharedFiles.data(name);
    }

    private static Path llama3Json() {
        return SharedFiles.model("llama3-tokenizer/tokenizer.json");
    }

    @Test
    void countsListsAndShowsLlama3Tokens(@TempDir Path dir) throws Exception {
        // 289,076 tokens as Hugging Face tokenizers splits the text (Llama3TokenizerTest), and BOS
        CliTest.Result count = CliTest.run("tokenize", llama3Json().toString(), "--file", data("wikitext-2-test.txt").toString(), "--count");
        assertThat(count.code()).as(count.err()).isZero();
        assertThat(count.out()).isEqualTo("289077\n");

        Path text = Files.writeString(dir.resolve("t.txt"), "This is a test sentence.");
        CliTest.Result ids = CliTest.run("tokenize", llama3Json().toString(), "--file", text.toString(), "--ids");
        assertThat(ids.out()).isEqualTo("[128000, 2028, 374, 264, 1296, 11914, 13]\n");
        assertThat(CliTest.run("tokenize", llama3Json().toString(), "--file", text.toString(), "--ids", "--no-bos").out())
                .isEqualTo("[2028, 374, 264, 1296, 11914, 13]\n");

        // 🦙 is not a piece: its four bytes fall into three byte-level pieces, none a whole character
        Files.writeString(text, "Hi 🦙<|eot_id|>");
        CliTest.Result pieces = CliTest.run("tokenize", llama3Json().toString(), "--file", text.toString());
        assertThat(pieces.out()).isEqualTo("""
                128000 -> '<|begin_of_text|>'
                 13347 -> 'Hi'
                 11410 -> ' \\xF0\\x9F'
                    99 -> '\\xA6'
                   247 -> '\\x99'
                128009 -> '<|eot_id|>'
                """);
    }

    /** stories260K's one SentencePiece vocabulary through every way jquant opens it: llama.cpp's 145,758 tokens each time. */
    @Test
    void everyFormatOfAModelAndItsTokenizerFiles(@TempDir Path dir) throws Exception {
        Path plan = dir.resolve("plan.json"), jqw = dir.resolve("m.jqw");
        Path model = SharedFiles.model("stories260K.bin");
        assertThat(CliTest.run("allocate", model.toString(), "--budget", "5", "--out", plan.toString()).code()).isZero();
        assertThat(CliTest.run("pack", model.toString(), "--plan", plan.toString(), "--out", jqw.toString()).code()).isZero();
        List<Path> sources = List.of(model, SharedFiles.model("stories260K-v1.bin"), SharedFiles.model("stories260K-f32.gguf"),
                SharedFiles.model("stories260K-hf"), jqw, SharedFiles.model("tok512.bin"), SharedFiles.model("tok512.model"));
        for (Path source : sources) {
            CliTest.Result r = CliTest.run("tokenize", source.toString(), "--file", data("tinystories-valid-sample.txt").toString(), "--count");
            assertThat(r.code()).as(source + ": " + r.err()).isZero();
            assertThat(r.out()).as(source.toString()).isEqualTo("145758\n");
        }
        Path text = Files.writeString(dir.resolve("t.txt"), "Once upon a time");
        assertThat(CliTest.run("tokenize", SharedFiles.model("tok512.model").toString(), "--file", text.toString()).out()).isEqualTo("""
                     1 -> '<s>'
                   403 -> ' Once'
                   407 -> ' upon'
                   261 -> ' a'
                   378 -> ' time'
                """);
    }

    /** A GGUF whose tokenizer is Llama 3's under llama.cpp's name "llama-bpe" (stories260K's tensors, as only the vocabulary is read). */
    @Test
    void ggufWithLlamaBpeAndAnUnknownPreTokenizer(@TempDir Path dir) throws Exception {
        Vocabulary v = HfTokenizerJson.read(llama3Json());
        SequencedMap<String, GgufValue> kv = new LinkedHashMap<>();
        try (GgufFile stories = GgufFile.open(SharedFiles.model("stories260K-f32.gguf"))) {
            stories.metadata().forEach((k, value) -> { if (!k.startsWith("tokenizer.")) kv.put(k, value); });
            kv.put("tokenizer.ggml.model", GgufValue.string("gpt2"));
            kv.put("tokenizer.ggml.pre", GgufValue.string("llama-bpe"));
            kv.put("tokenizer.ggml.tokens", GgufValue.stringArray(v.pieces()));
            kv.put("tokenizer.ggml.token_type", GgufValue.array(GgufType.INT32, v.types().stream().map(t -> GgufValue.int32(t.code())).toList()));
            kv.put("tokenizer.ggml.merges", GgufValue.stringArray(v.merges()));
            kv.put("tokenizer.ggml.bos_token_id", GgufValue.uint32(v.bos()));
            kv.put("tokenizer.ggml.eos_token_id", GgufValue.uint32(v.eos()));
            Path gguf = dir.resolve("llama-bpe.gguf");
            GgufWriter.write(gguf, kv, stories.tensors().values());
            CliTest.Result count = CliTest.run("tokenize", gguf.toString(), "--file", data("wikitext-2-test.txt").toString(), "--count");
            assertThat(count.code()).as(count.err()).isZero();
            assertThat(count.out()).isEqualTo("289077\n");

            kv.put("tokenizer.ggml.pre", GgufValue.string("kimi-k2"));
            Path unknown = dir.resolve("unknown.gguf");
            GgufWriter.write(unknown, kv, stories.tensors().values());
            CliTest.Result refused = CliTest.run("tokenize", unknown.toString(), "--file", data("wikitext-2-test.txt").toString());
            assertThat(refused.code()).isEqualTo(1);
            assertThat(refused.err()).startsWith("jquant: " + unknown + ": tokenizer.ggml.pre 'kimi-k2' is not supported (supported: a.x-4.0, ")
                    .contains("llama-bpe").endsWith(")\n");
            assertThat(refused.out()).isEmpty();
        }
    }

    /** As llama-tokenize -p: the text on the command line or on standard input (--file -), the tokenizer as its folder. */
    @Test
    void textAsAnArgumentOrOnStandardInputAndATokenizerFolder() {
        String folder = SharedFiles.model("llama3-tokenizer").toString(), ids = "[128000, 2028, 374, 264, 1296, 11914, 13]\n";
        CliTest.Result prompt = CliTest.run("tokenize", folder, "-p", "This is a test sentence.", "--ids");
        assertThat(prompt.code()).as(prompt.err()).isZero();
        assertThat(prompt.out()).isEqualTo(ids);
        assertThat(CliTest.run("tokenize", llama3Json().toString(), "--prompt", "This is a test sentence.", "--ids").out()).isEqualTo(ids);
        assertThat(withStandardInput("This is a test sentence.".getBytes(StandardCharsets.UTF_8), "tokenize", folder, "--file", "-", "--ids").out())
                .isEqualTo(ids);
        // as a prompt may be, standard input may be empty: BOS alone
        assertThat(withStandardInput(new byte[0], "tokenize", folder, "--file", "-", "--ids").out()).isEqualTo("[128000]\n");
        CliTest.Result latin1 = withStandardInput(new byte[] {'c', 'a', 'f', (byte) 0xE9}, "tokenize", folder, "--file", "-");
        assertThat(latin1.code()).isEqualTo(1);
        assertThat(latin1.err()).isEqualTo("jquant: -: not valid UTF-8 text near byte 3\n");
        // the stories260K Hugging Face folder holds a model: its tokenizer.model is read through it
        assertThat(CliTest.run("tokenize", SharedFiles.model("stories260K-hf").toString(), "-p", "Once upon a time", "--ids").out())
                .isEqualTo("[1, 403, 407, 261, 378]\n");
    }

    private static CliTest.Result withStandardInput(byte[] input, String... args) {
        InputStream in = System.in;
        System.setIn(new ByteArrayInputStream(input));
        try {
            return CliTest.run(args);
        } finally {
            System.setIn(in);
        }
    }

    @Test
    void usageAndInputErrors(@TempDir Path dir) throws Exception {
        Path json = llama3Json();
        assertThat(CliTest.run("tokenize", json.toString()).code()).isEqualTo(2);
        CliTest.Result both = CliTest.run("tokenize", json.toString(), "-p", "hi", "--file", "x");
        assertThat(both.code()).isEqualTo(2);
        assertThat(both.err()).contains("--file", "--prompt");
        assertThat(CliTest.run("tokenize", json.toString(), "--file", "x", "--ids", "--count").code()).isEqualTo(2);
        CliTest.Result missing = CliTest.run("tokenize", json.toString(), "--file", dir.resolve("none.txt").toString());
        assertThat(missing.code()).isEqualTo(1);
        assertThat(missing.err()).isEqualTo("jquant: " + dir.resolve("none.txt") + ": no such file\n");
        Path text = Files.writeString(dir.resolve("t.txt"), "hi");
        Path bad = Files.writeString(dir.resolve("tokenizer.json"), "{\"model\":{\"type\":\"WordPiece\"}}");
        CliTest.Result refused = CliTest.run("tokenize", bad.toString(), "--file", text.toString());
        assertThat(refused.code()).isEqualTo(1);
        assertThat(refused.err()).isEqualTo("jquant: " + bad + ": tokenizer model type 'WordPiece' is not supported (BPE only)\n");
    }
}
