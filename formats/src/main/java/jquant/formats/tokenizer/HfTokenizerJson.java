package jquant.formats.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import jquant.formats.CheckpointException;
import jquant.formats.Vocabulary;

/**
 * Best-effort reader of a Hugging Face {@code tokenizer.json} whose {@code model.type} is "BPE", for
 * checkpoints that ship no {@code tokenizer.model}. It takes {@code model.vocab} (piece → id),
 * {@code model.merges} (either "a b" strings or ["a", "b"] pairs, both kept as "a b") and
 * {@code added_tokens} (placed at their ids). Normalizers, pre-tokenizers and decoders are not read,
 * so whether pieces are byte-level (GPT-2 style) or SentencePiece-style is left to the caller; the
 * vocabulary is always {@link Vocabulary.Kind#BPE} with zero scores.
 */
public final class HfTokenizerJson {
    private HfTokenizerJson() {}

    /** Reads {@code file}; {@code bos}/{@code eos} come from the model's config (-1 if unknown). */
    public static Vocabulary read(Path file, int bos, int eos, boolean addBos) throws CheckpointException {
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(file.toFile());
        } catch (IOException e) {
            throw new CheckpointException(file, "not valid JSON: " + e.getMessage(), e);
        }
        JsonNode model = root.path("model");
        if (!"BPE".equals(model.path("type").asText())) {
            throw new CheckpointException(file, "tokenizer model type '" + model.path("type").asText() + "' is not supported (BPE only)");
        }
        JsonNode vocab = model.path("vocab");
        if (!vocab.isObject()) throw new CheckpointException(file, "model.vocab is not an object");
        List<String[]> entries = new ArrayList<>();
        vocab.properties().forEach(e -> entries.add(new String[] {e.getKey(), e.getValue().asText()}));
        for (JsonNode added : root.path("added_tokens")) {
            entries.add(new String[] {added.path("content").asText(), added.path("id").asText()});
        }
        int size = 0;
        for (String[] e : entries) size = Math.max(size, id(file, e) + 1);
        String[] pieces = new String[size];
        for (String[] e : entries) pieces[id(file, e)] = e[0];
        for (int i = 0; i < size; i++) {
            if (pieces[i] == null) throw new CheckpointException(file, "no token has id " + i);
        }
        List<String> merges = new ArrayList<>();
        for (JsonNode m : model.path("merges")) {
            merges.add(m.isArray() ? m.path(0).asText() + " " + m.path(1).asText() : m.asText());
        }
        return new Vocabulary(Vocabulary.Kind.BPE, Arrays.asList(pieces), new float[size], merges, bos, eos, addBos);
    }

    private static int id(Path file, String[] entry) throws CheckpointException {
        try {
            int id = Integer.parseInt(entry[1]);
            if (id < 0) throw new NumberFormatException();
            return id;
        } catch (NumberFormatException e) {
            throw new CheckpointException(file, "token '" + entry[0] + "' has invalid id " + entry[1]);
        }
    }
}
