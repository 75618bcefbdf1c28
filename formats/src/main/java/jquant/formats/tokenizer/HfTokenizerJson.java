package jquant.formats.tokenizer;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import jquant.formats.CheckpointException;
import jquant.formats.InputFiles;
import jquant.formats.PreTokenizer;
import jquant.formats.Vocabulary;
import jquant.formats.Vocabulary.TokenType;
import jquant.formats.gguf.LlamaCppPreTokenizers;

/**
 * Reads a Hugging Face {@code tokenizer.json} of a byte-level BPE model (GPT-2, Llama 3, Qwen2, SmolLM …)
 * into a {@link Vocabulary.Kind#BPE} vocabulary, or of a SentencePiece-style BPE model (Llama 2, TinyLlama:
 * {@code ▁} for spaces, {@code byte_fallback} to {@code <0xNN>} pieces; see {@link #isSentencePieceStyle})
 * into a {@link Vocabulary.Kind#SENTENCEPIECE} one that merges by its rules (special tokens in the text are
 * then not recognised, as SentencePiece does not), refusing by name anything it would not reproduce:
 *
 * <ul>
 *   <li>{@code model}: type "BPE"; {@code vocab} (piece → id), {@code merges} ("a b" strings or ["a", "b"]
 *       pairs, both kept as "a b"), {@code ignore_merges}. Dropout and subword prefixes/suffixes are refused.</li>
 *   <li>{@code normalizer}: none (byte-level), or the SentencePiece-style one.</li>
 *   <li>{@code pre_tokenizer}: {@code Split} (regex or string, behaviour Isolated, not inverted) and
 *       {@code Digits} steps, optionally in a {@code Sequence}, ending in {@code ByteLevel} (without
 *       {@code add_prefix_space}); ByteLevel's {@code use_regex} adds GPT-2's pattern. These become the
 *       {@link PreTokenizer}'s patterns, named by llama.cpp's name where they are one it knows.</li>
 *   <li>{@code added_tokens}: placed at their ids; special ones are {@link TokenType#CONTROL}, the others
 *       {@link TokenType#USER_DEFINED}, so both are recognised whole in text, as Hugging Face tokenizers
 *       does by default. {@code lstrip}, {@code rstrip} and {@code single_word} are refused.</li>
 *   <li>{@code post_processor}: a {@code TemplateProcessing} (alone or in a {@code Sequence}) that puts a
 *       special token before the text adds it as BOS; one that appends tokens is refused.</li>
 * </ul>
 *
 * BOS and EOS are the model config's ids if given, else {@code tokenizer_config.json}'s {@code bos_token} /
 * {@code eos_token} (beside the file), else the template's token. BOS is added if
 * {@code tokenizer_config.json} says {@code add_bos_token}; without that key, if the template adds it;
 * without a template, as llama.cpp does for the pre-tokenizer (for Llama 3, llama.cpp's "llama-bpe", it
 * does). {@code model.byte_fallback} changes nothing for byte-level pieces: every byte is a piece.
 */
public final class HfTokenizerJson {
    /** Llama 3's tokenizer.json pattern. */
    private static final String LLAMA3_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
            + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /** Qwen2's tokenizer.json pattern (as quoted in llama.cpp's llama-vocab.cpp): Llama 3's with single digits. */
    private static final String QWEN2_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
            + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

    /** tokenizer.json pre-tokenizers as patterns, to the llama.cpp name convert_hf_to_gguf.py gives them. */
    private static final Map<List<String>, String> LLAMA_CPP_NAMES = Map.of(
            List.of(LLAMA3_PATTERN), "llama-bpe",
            List.of(QWEN2_PATTERN), "qwen2",
            List.of("\\p{N}", PreTokenizer.GPT2_PATTERN), "smollm",
            List.of(PreTokenizer.GPT2_PATTERN), "gpt-2");

    private HfTokenizerJson() {}

    /** Reads {@code file} on its own (with the {@code tokenizer_config.json} beside it, if any). */
    public static Vocabulary read(Path file) throws CheckpointException {
        return read(file, -1, -1);
    }

    /** Reads {@code file}; {@code bos}/{@code eos} are the model config's ids, -1 where it has none. */
    public static Vocabulary read(Path file, int bos, int eos) throws CheckpointException {
        StreamedJson json = stream(file);
        ObjectNode root = json.root();
        JsonNode model = root.path("model");
        if (!"BPE".equals(model.path("type").asText())) {
            throw new CheckpointException(file, "tokenizer model type '" + model.path("type").asText() + "' is not supported (BPE only)");
        }
        for (String field : List.of("dropout", "continuing_subword_prefix", "end_of_word_suffix")) {
            JsonNode v = model.path(field);
            if (!v.isMissingNode() && !v.isNull() && !v.asText().isEmpty()) {
                throw new CheckpointException(file, "BPE " + field + " " + v + " is not supported");
            }
        }
        if (model.has("vocab") || model.has("merges")) throw new CheckpointException(file, "model.vocab is not an object or model.merges not an array");
        boolean sentencePiece = isSentencePieceStyle(root);
        List<String> patterns = new ArrayList<>();
        if (sentencePiece) {
            if (!model.path("byte_fallback").asBoolean(false)) {
                throw new CheckpointException(file, "a SentencePiece-style BPE without byte_fallback is not supported");
            }
            if (model.path("ignore_merges").asBoolean(false)) {
                throw new CheckpointException(file, "a SentencePiece-style BPE with ignore_merges is not supported");
            }
        } else {
            JsonNode normalizer = root.path("normalizer");
            if (!normalizer.isNull() && !normalizer.isMissingNode()) {
                throw new CheckpointException(file, "normalizer '" + normalizer.path("type").asText() + "' is not supported (none only)");
            }
            if (!splits(file, root.path("pre_tokenizer"), patterns)) {
                throw new CheckpointException(file, "its pre-tokenizer has no ByteLevel step: only byte-level BPE "
                        + "(and SentencePiece-style BPE with a ▁ prefix and byte fallback) is supported");
            }
        }

        List<String> pieces = json.pieces();
        List<TokenType> types = new ArrayList<>(Collections.nCopies(pieces.size(), TokenType.NORMAL));
        for (JsonNode added : root.path("added_tokens")) {
            String content = added.path("content").asText();
            for (String flag : List.of("lstrip", "rstrip", "single_word")) {
                if (added.path(flag).asBoolean(false)) {
                    throw new CheckpointException(file, "added token '" + content + "' sets " + flag + ", which is not supported");
                }
            }
            int id = id(file, content, added.path("id"));
            while (pieces.size() <= id) {
                pieces.add(null);
                types.add(TokenType.NORMAL);
            }
            pieces.set(id, content);
            types.set(id, added.path("special").asBoolean(false) ? TokenType.CONTROL : TokenType.USER_DEFINED);
        }
        int missing = pieces.indexOf(null);
        if (missing >= 0) throw new CheckpointException(file, "no token has id " + missing);

        Optional<String> templateBos = templateBos(file, root.path("post_processor"));
        JsonNode config = tokenizerConfig(file);
        if (bos < 0) bos = tokenId(file, pieces, config.path("bos_token")).orElse(templateBos.map(pieces::indexOf).orElse(-1));
        if (eos < 0) eos = tokenId(file, pieces, config.path("eos_token")).orElse(-1);
        Optional<String> name = sentencePiece ? Optional.empty() : Optional.ofNullable(LLAMA_CPP_NAMES.get(patterns));
        boolean addBos;
        if (config.path("add_bos_token").isBoolean()) {
            addBos = config.path("add_bos_token").asBoolean();
            if (addBos && bos < 0) throw new CheckpointException(file, "tokenizer_config.json sets add_bos_token but names no BOS token");
        } else if (isTemplate(root.path("post_processor"))) {
            addBos = templateBos.isPresent();
        } else {
            // llama.cpp's default for the pre-tokenizer, when there is a BOS token to add
            addBos = bos >= 0 && name.flatMap(LlamaCppPreTokenizers::named).map(LlamaCppPreTokenizers.Family::addBos).orElse(false);
        }
        return new Vocabulary(sentencePiece ? Vocabulary.Kind.SENTENCEPIECE : Vocabulary.Kind.BPE, pieces, new float[pieces.size()],
                json.merges(), bos, eos, addBos, types, new PreTokenizer(name, patterns), model.path("ignore_merges").asBoolean(false));
    }

    /**
     * Whether the text is prepared as SentencePiece prepares it — a {@code ▁} before it and every space
     * made {@code ▁} — and then merged whole: the normalizer {@code Sequence[Prepend("▁"), Replace(" ", "▁")]}
     * with no pre-tokenizer, as transformers' Llama converter writes it. (Its newer {@code Metaspace} form
     * adds no {@code ▁} before a text that starts with a space, unlike SentencePiece, and is refused.)
     */
    private static boolean isSentencePieceStyle(JsonNode root) {
        JsonNode normalizer = root.path("normalizer");
        JsonNode pre = root.path("pre_tokenizer");
        if (!"Sequence".equals(normalizer.path("type").asText()) || normalizer.path("normalizers").size() != 2) return false;
        if (!pre.isNull() && !pre.isMissingNode()) return false;
        JsonNode prepend = normalizer.path("normalizers").get(0);
        JsonNode replace = normalizer.path("normalizers").get(1);
        return "Prepend".equals(prepend.path("type").asText()) && "\u2581".equals(prepend.path("prepend").asText())
                && "Replace".equals(replace.path("type").asText()) && " ".equals(replace.path("pattern").path("String").asText(null))
                && "\u2581".equals(replace.path("content").asText());
    }

    /** A tokenizer.json: {@code model.vocab} as pieces by id and {@code model.merges} as "a b", everything else as a tree. */
    private record StreamedJson(ObjectNode root, List<String> pieces, List<String> merges) {}

    /**
     * Reads {@code file} in one pass, streaming the 100,000s of vocabulary entries and merges straight
     * into lists rather than through a JSON tree; a vocab or merges of another shape stays in the tree.
     */
    private static StreamedJson stream(Path file) throws CheckpointException {
        InputFiles.requireRegularFile(file);
        ObjectMapper mapper = new ObjectMapper();
        ObjectNode root = mapper.createObjectNode();
        List<String> pieces = new ArrayList<>();
        List<String> merges = new ArrayList<>();
        try (JsonParser p = mapper.createParser(file.toFile())) {
            expect(file, p, p.nextToken(), JsonToken.START_OBJECT, "the file");
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                if (!field.equals("model")) {
                    root.set(field, p.readValueAsTree());
                    continue;
                }
                expect(file, p, value, JsonToken.START_OBJECT, "model");
                ObjectNode model = root.putObject("model");
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String modelField = p.currentName();
                    JsonToken modelValue = p.nextToken();
                    if (modelField.equals("vocab") && modelValue == JsonToken.START_OBJECT) streamVocab(file, p, pieces);
                    else if (modelField.equals("merges") && modelValue == JsonToken.START_ARRAY) streamMerges(file, p, merges);
                    else model.set(modelField, p.readValueAsTree());
                }
            }
        } catch (IOException e) {
            if (e instanceof CheckpointException c) throw c;
            throw new CheckpointException(file, "not valid JSON: " + e.getMessage(), e);
        }
        return new StreamedJson(root, pieces, merges);
    }

    /**
     * Ids a vocabulary may reach beyond its entry count: the holes added tokens fill (a hole nothing
     * fills is refused later). Without a bound, one entry with id 944,444,444 in a 3 KB file asked for
     * a list of that many slots (found by fuzzing).
     */
    static final int MAX_UNUSED_IDS = 1 << 16;

    /** {@code "piece": id, …} up to the closing brace, into {@code pieces} by id. */
    private static void streamVocab(Path file, JsonParser p, List<String> pieces) throws IOException {
        List<String> names = new ArrayList<>();
        List<Integer> ids = new ArrayList<>();
        int largest = -1;
        String largestName = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String piece = p.currentName();
            JsonToken id = p.nextToken();
            if (id != JsonToken.VALUE_NUMBER_INT || p.getLongValue() < 0 || p.getLongValue() > Integer.MAX_VALUE - 8) {
                throw new CheckpointException(file, "token '" + piece + "' has invalid id " + p.getText());
            }
            names.add(piece);
            ids.add(p.getIntValue());
            if (p.getIntValue() > largest) {
                largest = p.getIntValue();
                largestName = piece;
            }
        }
        if ((long) largest >= (long) names.size() + MAX_UNUSED_IDS) {
            throw new CheckpointException(file, "token '" + largestName + "' has id " + largest + ", but the vocabulary has only "
                    + names.size() + " entries");
        }
        while (pieces.size() <= largest) pieces.add(null);
        for (int k = 0; k < names.size(); k++) pieces.set(ids.get(k), names.get(k));
    }

    /** {@code "a b"} or {@code ["a", "b"]} elements up to the closing bracket, into {@code merges} as "a b". */
    private static void streamMerges(Path file, JsonParser p, List<String> merges) throws IOException {
        for (JsonToken m = p.nextToken(); m != JsonToken.END_ARRAY; m = p.nextToken()) {
            if (m == JsonToken.VALUE_STRING) {
                merges.add(p.getText());
                continue;
            }
            String left = m == JsonToken.START_ARRAY && p.nextToken() == JsonToken.VALUE_STRING ? p.getText() : null;
            String right = left != null && p.nextToken() == JsonToken.VALUE_STRING ? p.getText() : null;
            if (right == null || p.nextToken() != JsonToken.END_ARRAY) {
                throw new CheckpointException(file, "merge " + merges.size() + " is neither \"a b\" nor [\"a\", \"b\"]");
            }
            merges.add(left + " " + right);
        }
    }

    private static void expect(Path file, JsonParser p, JsonToken actual, JsonToken expected, String what) throws CheckpointException {
        if (actual != expected) throw new CheckpointException(file, what + " is " + actual + " at " + p.currentLocation() + ", expected " + expected);
    }

    private static JsonNode json(Path file) throws CheckpointException {
        byte[] bytes = InputFiles.readAllBytes(file);
        try {
            return new ObjectMapper().readTree(bytes);
        } catch (IOException e) {
            throw new CheckpointException(file, "not valid JSON: " + e.getMessage(), e);
        }
    }

    /** The {@code tokenizer_config.json} beside {@code file}, or an empty node. */
    private static JsonNode tokenizerConfig(Path file) throws CheckpointException {
        Path config = file.resolveSibling("tokenizer_config.json");
        return Files.isRegularFile(config) ? json(config) : new ObjectMapper().createObjectNode();
    }

    /**
     * Adds the patterns of the pre-tokenizer {@code node} to {@code patterns}; returns whether it ends in
     * ByteLevel. Hugging Face tokenizers' Digits splits off runs of {@code char::is_numeric} characters
     * (Unicode N), one by one with {@code individual_digits}.
     */
    private static boolean splits(Path file, JsonNode node, List<String> patterns) throws CheckpointException {
        List<JsonNode> steps = new ArrayList<>();
        if ("Sequence".equals(node.path("type").asText())) node.path("pretokenizers").forEach(steps::add);
        else if (!node.isMissingNode() && !node.isNull()) steps.add(node);
        boolean byteLevel = false;
        for (JsonNode step : steps) {
            String type = step.path("type").asText();
            if (byteLevel) throw new CheckpointException(file, "pre-tokenizer step " + type + " after ByteLevel is not supported");
            switch (type) {
                case "Split" -> {
                    if (!"Isolated".equals(step.path("behavior").asText())) {
                        throw new CheckpointException(file, "Split behaviour '" + step.path("behavior").asText() + "' is not supported (Isolated only)");
                    }
                    if (step.path("invert").asBoolean(false)) throw new CheckpointException(file, "an inverted Split is not supported");
                    JsonNode pattern = step.path("pattern");
                    if (pattern.has("Regex")) patterns.add(pattern.path("Regex").asText());
                    else if (pattern.has("String")) patterns.add(Pattern.quote(pattern.path("String").asText()));
                    else throw new CheckpointException(file, "Split pattern " + pattern + " is neither Regex nor String");
                }
                case "Digits" -> patterns.add(step.path("individual_digits").asBoolean(false) ? "\\p{N}" : "\\p{N}+");
                case "ByteLevel" -> {
                    if (step.path("add_prefix_space").asBoolean(false)) {
                        throw new CheckpointException(file, "ByteLevel add_prefix_space is not supported");
                    }
                    if (step.path("use_regex").asBoolean(true)) patterns.add(PreTokenizer.GPT2_PATTERN);
                    byteLevel = true;
                }
                default -> throw new CheckpointException(file, "pre-tokenizer '" + type + "' is not supported");
            }
        }
        return byteLevel;
    }

    private static boolean isTemplate(JsonNode postProcessor) {
        if ("TemplateProcessing".equals(postProcessor.path("type").asText())) return true;
        for (JsonNode p : postProcessor.path("processors")) {
            if (isTemplate(p)) return true;
        }
        return false;
    }

    /**
     * The special token a {@code TemplateProcessing} post-processor puts before a single text, if any;
     * a template that appends tokens after it, or another processor that adds tokens, is refused.
     */
    private static Optional<String> templateBos(Path file, JsonNode postProcessor) throws CheckpointException {
        String type = postProcessor.path("type").asText();
        switch (type) {
            case "", "ByteLevel" -> { return Optional.empty(); }
            case "Sequence" -> {
                Optional<String> bos = Optional.empty();
                for (JsonNode p : postProcessor.path("processors")) {
                    Optional<String> b = templateBos(file, p);
                    if (b.isPresent()) bos = b;
                }
                return bos;
            }
            case "TemplateProcessing" -> {
                Optional<String> bos = Optional.empty();
                boolean text = false;
                for (JsonNode item : postProcessor.path("single")) {
                    if (item.has("Sequence")) {
                        text = true;
                    } else if (text) {
                        throw new CheckpointException(file, "post-processor template appends " + item.path("SpecialToken").path("id").asText()
                                + " after the text, which is not supported");
                    } else if (bos.isPresent()) {
                        throw new CheckpointException(file, "post-processor template puts more than one token before the text");
                    } else {
                        bos = Optional.of(item.path("SpecialToken").path("id").asText());
                    }
                }
                return bos;
            }
            default -> throw new CheckpointException(file, "post-processor '" + type + "' is not supported");
        }
    }

    /** The id of a tokenizer_config.json token entry (a string or an added-token object), if it names one. */
    private static Optional<Integer> tokenId(Path file, List<String> pieces, JsonNode token) throws CheckpointException {
        String content = token.isObject() ? token.path("content").asText() : token.isTextual() ? token.asText() : null;
        if (content == null) return Optional.empty();
        int id = pieces.indexOf(content);
        if (id < 0) throw new CheckpointException(file.resolveSibling("tokenizer_config.json"), "token '" + content + "' is not in " + file.getFileName());
        return Optional.of(id);
    }

    private static int id(Path file, String piece, JsonNode value) throws CheckpointException {
        if (!value.canConvertToInt() || value.asInt() < 0) throw new CheckpointException(file, "token '" + piece + "' has invalid id " + value);
        return value.asInt();
    }
}
