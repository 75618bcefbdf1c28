package jquant.formats.gguf;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import jquant.formats.CheckpointException;
import jquant.formats.Vocabulary;

/**
 * The tokenizer stored in GGUF metadata: {@code tokenizer.ggml.model} ("llama" → SentencePiece, "gpt2" →
 * byte-level BPE), {@code .tokens}, {@code .scores} (0 where absent), {@code .merges},
 * {@code .bos_token_id}, {@code .eos_token_id}, {@code .add_bos_token} (default: true for SentencePiece,
 * false for BPE, as llama.cpp defaults).
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
        GgufValue addBos = kv.get(PREFIX + "add_bos_token");
        boolean add = addBos != null ? addBos.asBoolean() : kind == Vocabulary.Kind.SENTENCEPIECE;
        return Optional.of(new Vocabulary(kind, pieces, scores, merges, bos, eos, add));
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
