package jquant.formats.synthetic;

import jquant.formats.Vocabulary;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A SentencePiece-style vocabulary learnt (crudely, deterministically) from a text, for a
 * {@link SyntheticLlama}: the three special tokens, 256 byte-fallback tokens, then the most frequent
 * word prefixes with their {@code ▁} marker, each prefix reachable by merging shorter pieces. Scores
 * rank longer, more frequent pieces first, so encoding merges towards whole words.
 */
public final class SyntheticVocabulary {
    private SyntheticVocabulary() {}

    public static Vocabulary build(String text, int size) {
        List<String> pieces = new ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        for (int b = 0; b < 256; b++) pieces.add(String.format("<0x%02X>", b));
        Map<String, Integer> counts = new HashMap<>();
        for (String word : text.replace('\n', ' ').split(" ")) {
            if (word.isEmpty()) continue;
            String piece = "\u2581" + word;
            for (int end = 1; end <= piece.length(); end++) counts.merge(piece.substring(0, end), 1, Integer::sum);
            for (int i = 1; i < piece.length(); i++) counts.merge(piece.substring(i, i + 1), 1, Integer::sum);
        }
        // Shorter first so that every piece's prefixes precede it; frequency then text break ties.
        List<String> candidates = new ArrayList<>(counts.keySet());
        candidates.sort(Comparator.comparingInt(String::length)
                .thenComparing(Comparator.comparingInt((String p) -> counts.get(p)).reversed())
                .thenComparing(Comparator.naturalOrder()));
        Set<String> chosen = new LinkedHashSet<>();
        for (String p : candidates) {
            if (pieces.size() + chosen.size() >= size) break;
            if (p.length() == 1 || chosen.contains(p.substring(0, p.length() - 1))) chosen.add(p);
        }
        pieces.addAll(chosen);
        while (pieces.size() < size) pieces.add("<unused" + pieces.size() + ">");
        float[] scores = new float[pieces.size()];
        for (int i = 0; i < scores.length; i++) scores[i] = i < 259 ? 0f : -(size - i);
        return new Vocabulary(Vocabulary.Kind.SENTENCEPIECE, pieces, scores, List.of(), 1, 2, true);
    }
}
