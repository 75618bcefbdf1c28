package jquant.runtime;

import jquant.formats.Vocabulary;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * SentencePiece BPE over a scored vocabulary, as llama.cpp's {@code llm_tokenizer_spm} does it (and,
 * for ordinary text, as llama2.c's {@code run.c} {@code encode}):
 *
 * <ol>
 *   <li>a dummy-prefix space is put before non-empty text, and every space {@code ' '} becomes
 *       {@code ▁} (U+2581); other whitespace is left as it is;</li>
 *   <li>the text is split into characters (code points);</li>
 *   <li>repeatedly, of all adjacent pairs whose concatenation is a piece, the one with the highest
 *       score is merged; ties go to the leftmost pair. A vocabulary with merge rules (a Hugging Face
 *       {@code tokenizer.json} made from a SentencePiece model, BPE with {@code byte_fallback}) merges
 *       by rule instead: the pair with the lowest-ranked rule first, as Hugging Face's BPE model does;</li>
 *   <li>each remaining symbol becomes its piece's id or, if no piece spells it, one byte-fallback
 *       token {@code <0xNN>} per UTF-8 byte.</li>
 * </ol>
 *
 * BOS: {@link #encode(String)} starts with BOS when {@link Vocabulary#addBos()} is set, as llama.cpp
 * and llama2.c do; the whole text is encoded in one go, so a text yields one BOS, not one per line.
 * Control pieces (BOS, EOS) and byte pieces are never produced by merging text.
 *
 * <p>Decoding maps {@code ▁} back to spaces, byte tokens to their bytes (so multi-byte characters
 * split over byte tokens reassemble), drops BOS/EOS, and removes the dummy-prefix space from the
 * first piece of the sequence, as SentencePiece does.
 */
public final class SentencePieceTokenizer implements Tokenizer {
    private static final char SPACE_MARK = '\u2581';

    private final Vocabulary vocabulary;
    private final Map<String, Integer> ids = new HashMap<>();
    private final int[] byteTokens = new int[256];
    /** For each id, the byte it stands for if it is a {@code <0xNN>} token, else -1. */
    private final int[] byteOf;
    /** Rank of each merge rule by its (left id, right id), when the vocabulary lists merges. */
    private final Map<Long, Integer> mergeRanks = new HashMap<>();

    public SentencePieceTokenizer(Vocabulary vocabulary) {
        if (vocabulary.kind() != Vocabulary.Kind.SENTENCEPIECE) {
            throw new IllegalArgumentException("not a SentencePiece vocabulary: " + vocabulary.kind());
        }
        this.vocabulary = vocabulary;
        Arrays.fill(byteTokens, -1);
        byteOf = new int[vocabulary.size()];
        for (int id = 0; id < vocabulary.size(); id++) {
            String piece = vocabulary.pieces().get(id);
            byteOf[id] = byteValue(piece);
            if (byteOf[id] >= 0) {
                if (byteTokens[byteOf[id]] < 0) byteTokens[byteOf[id]] = id;
            } else if (id != vocabulary.bos() && id != vocabulary.eos()) {
                ids.putIfAbsent(piece, id);
            }
        }
        for (int rank = 0; rank < vocabulary.merges().size(); rank++) {
            String rule = vocabulary.merges().get(rank);
            int space = rule.indexOf(' ', 1);
            Integer left = space < 0 ? null : ids.get(rule.substring(0, space));
            Integer right = space < 0 ? null : ids.get(rule.substring(space + 1));
            if (left == null || right == null) throw new IllegalArgumentException("merge rule " + rank + " \"" + rule + "\" is not two pieces of the vocabulary");
            mergeRanks.putIfAbsent(pair(left, right), rank);
        }
    }

    private static long pair(int left, int right) {
        return (long) left << 32 | right;
    }

    /** The byte a {@code <0xNN>} piece stands for, or -1. */
    private static int byteValue(String piece) {
        if (piece.length() != 6 || !piece.startsWith("<0x") || piece.charAt(5) != '>') return -1;
        int hi = Character.digit(piece.charAt(3), 16);
        int lo = Character.digit(piece.charAt(4), 16);
        return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
    }

    @Override
    public int bos() {
        return vocabulary.bos();
    }

    @Override
    public int eos() {
        return vocabulary.eos();
    }

    @Override
    public boolean addsBos() {
        return vocabulary.addBos();
    }

    @Override
    public int[] encode(String text) {
        return encode(text, vocabulary.addBos());
    }

    @Override
    public int[] encode(String text, boolean addBos) {
        if (addBos && vocabulary.bos() < 0) throw new IllegalArgumentException("the vocabulary has no BOS token to add");
        IntList out = new IntList(text.length() / 2 + 2);
        if (addBos) out.add(vocabulary.bos());
        if (!text.isEmpty()) merge(SPACE_MARK + text.replace(' ', SPACE_MARK), out);
        return out.toArray();
    }

    /** A candidate merge of symbol {@code left} with its right neighbour {@code right}. */
    private record Bigram(int left, int right, float score, int length) {}

    private void merge(String s, IntList out) {
        // symbols as linked character runs of s: [start, start + len), prev/next by index
        int count = s.codePointCount(0, s.length());
        int[] start = new int[count];
        int[] len = new int[count];
        int[] prev = new int[count];
        int[] next = new int[count];
        for (int i = 0, off = 0; i < count; i++) {
            int chars = Character.charCount(s.codePointAt(off));
            start[i] = off;
            len[i] = chars;
            prev[i] = i - 1;
            next[i] = i + 1 < count ? i + 1 : -1;
            off += chars;
        }
        PriorityQueue<Bigram> queue = new PriorityQueue<>((a, b) -> a.score() != b.score()
                ? Float.compare(b.score(), a.score())
                : Integer.compare(a.left(), b.left()));
        for (int i = 0; i + 1 < count; i++) offer(queue, s, start, len, i, i + 1);
        while (!queue.isEmpty()) {
            Bigram b = queue.poll();
            int l = b.left();
            int r = b.right();
            // stale: one side was merged away or grew since this pair was offered
            if (len[l] == 0 || len[r] == 0 || len[l] + len[r] != b.length()) continue;
            len[l] += len[r];
            len[r] = 0;
            next[l] = next[r];
            if (next[r] >= 0) prev[next[r]] = l;
            if (prev[l] >= 0) offer(queue, s, start, len, prev[l], l);
            if (next[l] >= 0) offer(queue, s, start, len, l, next[l]);
        }
        for (int i = 0; i >= 0; i = next[i]) {
            String symbol = s.substring(start[i], start[i] + len[i]);
            Integer id = ids.get(symbol);
            if (id != null) {
                out.add(id);
                continue;
            }
            for (byte raw : symbol.getBytes(StandardCharsets.UTF_8)) {
                int token = byteTokens[raw & 0xFF];
                if (token < 0) {
                    throw new IllegalArgumentException("\"" + symbol + "\" (U+" + Integer.toHexString(symbol.codePointAt(0)).toUpperCase()
                            + ") is not in the vocabulary and it has no byte token <0x" + String.format("%02X", raw & 0xFF) + ">");
                }
                out.add(token);
            }
        }
    }

    /** Offers a pair whose concatenation is a piece, by that piece's score or, with merges, by its merge rule's rank. */
    private void offer(PriorityQueue<Bigram> queue, String s, int[] start, int[] len, int left, int right) {
        int length = len[left] + len[right];
        Integer id = ids.get(s.substring(start[left], start[left] + length));
        if (id == null) return;
        if (mergeRanks.isEmpty()) {
            queue.add(new Bigram(left, right, vocabulary.scores()[id], length));
            return;
        }
        Integer l = ids.get(s.substring(start[left], start[left] + len[left]));
        Integer r = ids.get(s.substring(start[right], start[right] + len[right]));
        Integer rank = l == null || r == null ? null : mergeRanks.get(pair(l, r));
        if (rank != null) queue.add(new Bigram(left, right, -rank, length));  // exact: ranks stay below 2^24
    }

    @Override
    public String decode(int[] tokens) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        boolean first = true;
        for (int token : tokens) {
            if (token < 0 || token >= vocabulary.size()) {
                throw new IllegalArgumentException("token " + token + " outside the vocabulary [0, " + vocabulary.size() + ")");
            }
            if (token == vocabulary.bos() || token == vocabulary.eos()) continue;
            if (byteOf[token] >= 0) {
                bytes.write(byteOf[token]);
            } else {
                String text = vocabulary.pieces().get(token).replace(SPACE_MARK, ' ');
                if (first && text.startsWith(" ")) text = text.substring(1);
                bytes.writeBytes(text.getBytes(StandardCharsets.UTF_8));
            }
            first = false;
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Override
    public byte[] pieceBytes(int token) {
        if (token < 0 || token >= vocabulary.size()) {
            throw new IllegalArgumentException("token " + token + " outside the vocabulary [0, " + vocabulary.size() + ")");
        }
        if (byteOf[token] >= 0) return new byte[] {(byte) byteOf[token]};
        return vocabulary.pieces().get(token).replace(SPACE_MARK, ' ').getBytes(StandardCharsets.UTF_8);
    }
}
