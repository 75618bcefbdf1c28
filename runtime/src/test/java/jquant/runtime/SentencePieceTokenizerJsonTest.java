package jquant.runtime;

import jquant.testsupport.SharedFiles;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jquant.formats.Vocabulary;
import jquant.formats.tokenizer.HfTokenizerJson;
import jquant.formats.tokenizer.SentencePieceModel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A SentencePiece-style {@code tokenizer.json} (▁ for spaces, BPE merges, byte fallback), made from
 * stories260K's {@code tok512.model} as transformers' Llama converter makes one, against Hugging Face
 * tokenizers reading the same file.
 */
class SentencePieceTokenizerJsonTest {

    @Test
    void matchesHuggingFaceTokenizersWithByteFallback(@TempDir Path dir) throws Exception {
        Path json = writeTokenizerJson(dir);
        Vocabulary v = HfTokenizerJson.read(json);
        assertThat(v.kind()).isEqualTo(Vocabulary.Kind.SENTENCEPIECE);
        assertThat(v.bos()).isEqualTo(1);
        assertThat(v.addBos()).isTrue();
        Tokenizer t = Tokenizer.of(v);
        List<String> texts = new ArrayList<>();
        texts.add(Files.readString(SharedFiles.data("tinystories-valid-sample.txt")));
        // pieces cover ASCII only: everything else falls back to <0xNN> byte tokens
        texts.add(Files.readString(SharedFiles.data("wikitext-2-test.txt")));
        texts.add("  leading spaces, ünïcödé — 日本語 🙂\ttab\nnew line  ");
        try (HuggingFaceTokenizer oracle = HuggingFaceTokenizer.newInstance(json, Map.of("truncation", "false", "padding", "false"))) {
            for (String text : texts) {
                int[] ids = t.encode(text);
                int[] expected = Arrays.stream(oracle.encode(text).getIds()).mapToInt(Math::toIntExact).toArray();
                assertThat(ids.length).as("tokens of %.40s", text).isEqualTo(expected.length);
                assertThat(ids).as("%.40s", text).isEqualTo(expected);
                assertThat(t.decode(ids)).isEqualTo(text);
            }
        }
        // merging by rule gives what merging by score gives on this vocabulary: llama.cpp's counts
        assertThat(t.encode(texts.get(0))).hasSize(145_758);
        assertThat(t.encode(texts.get(1))).hasSize(809_290);
    }

    /**
     * transformers' {@code LlamaConverter}: the vocabulary with {@code <unk>}, {@code <s>}, {@code </s>} as special
     * added tokens; merges from {@code SentencePieceExtractor} — every split of every piece into two pieces, those
     * of one piece by the ids of their halves, all by the piece's score, highest first; BOS by template.
     */
    private static Path writeTokenizerJson(Path dir) throws Exception {
        Vocabulary sp = SentencePieceModel.read(SharedFiles.model("tok512.model"));
        Map<String, Integer> ids = new HashMap<>();
        for (int id = 0; id < sp.size(); id++) ids.putIfAbsent(sp.pieces().get(id), id);
        record Merge(String left, String right, float score) {}
        List<Merge> merges = new ArrayList<>();
        for (int id = 0; id < sp.size(); id++) {
            String piece = sp.pieces().get(id);
            List<Merge> local = new ArrayList<>();
            for (int i = piece.offsetByCodePoints(0, 1); i < piece.length(); i = piece.offsetByCodePoints(i, 1)) {
                String left = piece.substring(0, i), right = piece.substring(i);
                if (ids.containsKey(left) && ids.containsKey(right)) local.add(new Merge(left, right, sp.scores()[id]));
            }
            local.sort(Comparator.comparing((Merge m) -> ids.get(m.left())).thenComparing(m -> ids.get(m.right())));
            merges.addAll(local);
        }
        merges.sort(Comparator.comparing(Merge::score).reversed());  // stable, as Python's sorted

        ObjectMapper mapper = new ObjectMapper();
        ObjectNode root = mapper.createObjectNode().put("version", "1.0");
        ArrayNode added = root.putArray("added_tokens");
        for (int id = 0; id < 3; id++) {
            added.addObject().put("id", id).put("content", sp.pieces().get(id)).put("single_word", false).put("lstrip", false)
                    .put("rstrip", false).put("normalized", false).put("special", true);
        }
        ArrayNode normalizers = root.putObject("normalizer").put("type", "Sequence").putArray("normalizers");
        normalizers.addObject().put("type", "Prepend").put("prepend", "\u2581");
        normalizers.addObject().put("type", "Replace").put("content", "\u2581").putObject("pattern").put("String", " ");
        root.putNull("pre_tokenizer");
        ObjectNode template = root.putObject("post_processor").put("type", "TemplateProcessing");
        template.putArray("single").add(mapper.readTree("{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}}"))
                .add(mapper.readTree("{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}"));
        template.putArray("pair");
        template.putObject("special_tokens").set("<s>", mapper.readTree("{\"id\":\"<s>\",\"ids\":[1],\"tokens\":[\"<s>\"]}"));
        root.set("decoder", mapper.readTree("""
                {"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},
                 {"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}"""));
        ObjectNode model = root.putObject("model").put("type", "BPE").putNull("dropout").put("unk_token", "<unk>")
                .putNull("continuing_subword_prefix").putNull("end_of_word_suffix").put("fuse_unk", true).put("byte_fallback", true)
                .put("ignore_merges", false);
        ObjectNode vocab = model.putObject("vocab");
        for (int id = 0; id < sp.size(); id++) vocab.put(sp.pieces().get(id), id);
        ArrayNode rules = model.putArray("merges");
        for (Merge m : merges) rules.addArray().add(m.left()).add(m.right());
        Path file = dir.resolve("tokenizer.json");
        mapper.writeValue(file.toFile(), root);
        return file;
    }
}
