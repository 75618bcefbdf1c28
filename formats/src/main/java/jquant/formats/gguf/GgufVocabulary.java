package jquant.formats.gguf;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import jquant.formats.CheckpointException;
import jquant.formats.PreTokenizer;
import jquant.formats.Vocabulary;
import jquant.formats.Vocabulary.TokenType;

/**
 * The tokenizer stored in GGUF metadata: {@code tokenizer.ggml.model} ("llama" → SentencePiece, "gpt2" →
 * byte-level BPE), {@code .tokens}, {@code .scores} (0 where absent), {@code .token_type} (normal where
 * absent), {@code .merges}, {@code .bos_token_id}, {@code .eos_token_id} and {@code .add_bos_token}.
 *
 * <p>A BPE vocabulary's {@code tokenizer.ggml.pre} names its pre-tokenizer, which also sets whether whole
 * words skip merging and the default of {@code add_bos_token} ({@link LlamaCppPreTokenizers}); a name
 * jquant does not know is refused, and a missing one means llama.cpp's "default". SentencePiece adds BOS
 * by default, as llama.cpp does.
 */
final class GgufVocabulary {
    private static final String PREFIX = "tokenizer.ggml.";

    private GgufVocabulary() {}

    static Optional<Vocabulary> read(Path path, Map<String, GgufValue> kv) throws CheckpointException {
        GgufValue model = kv.get(PREFIX + "model");
        GgufValue tokens = kv.get(PREFIX + "tokens");
        if (model == null || tokens == null) return Optional.empty();
        Vocabulary.Kind kind = switch (model.asString()) {
            case "llama" -> Vocabulary.Kind.SENTENCEPIECE;
            case "gpt2" -> Vocabulary.Kind.BPE;
            default -> throw new CheckpointException(path, "tokenizer model '" + model.asString() + "' is not supported (llama or gpt2)");
        };
        List<String> pieces = strings(path, tokens, "tokens");
        float[] scores = new float[pieces.size()];
        GgufValue scoreValue = kv.get(PREFIX + "scores");
        if (scoreValue != null) {
            List<GgufValue> s = array(path, scoreValue, "scores").elements();
            if (s.size() != pieces.size()) {
                throw new CheckpointException(path, PREFIX + "scores has " + s.size() + " entries for " + pieces.size() + " tokens");
            }
            for (int i = 0; i < scores.length; i++) scores[i] = s.get(i).asFloat();
        }
        List<String> merges = kv.containsKey(PREFIX + "merges") ? strings(path, kv.get(PREFIX + "merges"), "merges") : List.of();
        int bos = tokenId(path, kv, "bos_token_id", pieces.size());
        int eos = tokenId(path, kv, "eos_token_id", pieces.size());
        PreTokenizer pre = PreTokenizer.NONE;
        boolean ignoreMerges = false;
        boolean add = kind == Vocabulary.Kind.SENTENCEPIECE;
        if (kind == Vocabulary.Kind.BPE) {
            GgufValue preValue = kv.get(PREFIX + "pre");
            String name = preValue == null ? "default" : preValue.asString();
            LlamaCppPreTokenizers.Family family = LlamaCppPreTokenizers.named(name).orElseThrow(() -> new CheckpointException(path,
                    PREFIX + "pre '" + name + "' is not supported (supported: " + String.join(", ", LlamaCppPreTokenizers.names()) + ")"));
            pre = new PreTokenizer(Optional.of(name), family.patterns());
            ignoreMerges = family.ignoreMerges();
            add = family.addBos();
        }
        GgufValue addBos = kv.get(PREFIX + "add_bos_token");
        if (addBos != null) add = addBos.asBoolean();
        return Optional.of(new Vocabulary(kind, pieces, scores, merges, bos, eos, add, types(path, kv, pieces.size()), pre, ignoreMerges));
    }

    private static List<TokenType> types(Path path, Map<String, GgufValue> kv, int vocabSize) throws CheckpointException {
        GgufValue value = kv.get(PREFIX + "token_type");
        if (value == null) return Collections.nCopies(vocabSize, TokenType.NORMAL);
        List<GgufValue> codes = array(path, value, "token_type").elements();
        if (codes.size() != vocabSize) {
            throw new CheckpointException(path, PREFIX + "token_type has " + codes.size() + " entries for " + vocabSize + " tokens");
        }
        List<TokenType> types = new ArrayList<>(vocabSize);
        for (GgufValue code : codes) types.add(TokenType.of(code.asLong()));
        return types;
    }

    private static GgufValue.GgufArray array(Path path, GgufValue v, String key) throws CheckpointException {
        if (v.type() != GgufType.ARRAY) throw new CheckpointException(path, PREFIX + key + " is a " + v.type() + ", not an array");
        return v.asArray();
    }

    private static List<String> strings(Path path, GgufValue v, String key) throws CheckpointException {
        GgufValue.GgufArray a = array(path, v, key);
        if (a.elementType() != GgufType.STRING) throw new CheckpointException(path, PREFIX + key + " holds " + a.elementType() + ", not strings");
        return a.elements().stream().map(GgufValue::asString).toList();
    }

    private static int tokenId(Path path, Map<String, GgufValue> kv, String key, int vocabSize) throws CheckpointException {
        GgufValue v = kv.get(PREFIX + key);
        if (v == null) return -1;
        long id = v.asLong();
        if (id < 0 || id >= vocabSize) throw new CheckpointException(path, PREFIX + key + " " + id + " is outside the " + vocabSize + "-token vocabulary");
        return (int) id;
    }
}
