package jquant.runtime;

import jquant.formats.Vocabulary;
import jquant.formats.Vocabulary.TokenType;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Byte-level BPE as Hugging Face tokenizers runs a {@code tokenizer.json} BPE model and llama.cpp a GGUF
 * {@code tokenizer.ggml.model = "gpt2"} vocabulary (GPT-2, Llama 3, Qwen2, SmolLM …):
 *
 * <ol>
 *   <li>control and user-defined pieces ({@code <|begin_of_text|>}, {@code <|eot_id|>} …) are found in the
 *       text first, leftmost and then longest first, and stand for themselves; the text between them is
 *       encoded on its own;</li>
 *   <li>that text is cut into words by the vocabulary's {@link jquant.formats.PreTokenizer} patterns, each
 *       applied to every piece the previous one left, matches and the text between them both kept
 *       (Hugging Face's Split, behaviour Isolated); the patterns run with Unicode character classes, as
 *       Oniguruma runs them for Hugging Face;</li>
 *   <li>each word's UTF-8 bytes become characters through GPT-2's byte-to-unicode table (printable bytes
 *       stand for themselves, the other 68 map to U+0100 onwards; a space becomes {@code Ġ});</li>
 *   <li>with {@code ignoreMerges}, a word that is itself a piece is that piece; otherwise adjacent symbols
 *       are merged lowest rank first, leftmost on ties, until no listed merge applies — a priority queue
 *       over a linked list of symbols, as Hugging Face's {@code Word::merge_all} and llama.cpp's
 *       {@code llm_tokenizer_bpe_session} do.</li>
 * </ol>
 *
 * Words seen before come from a cache, as in Hugging Face's BPE model. Decoding maps byte characters back
 * to bytes and reads them as UTF-8 (a piece with a character outside the table is taken as its own UTF-8,
 * as Hugging Face's ByteLevel decoder does); control and user-defined pieces are their text; BOS and EOS
 * print nothing.
 */
public final class BytePairTokenizer implements Tokenizer {
    /** Words kept in the word cache; past that, new words are merged every time. */
    private static final int CACHE_LIMIT = 1 << 17;

    private static final char[] BYTE_TO_CHAR = new char[256];
    /** Byte of each character of the byte-to-unicode table (all below U+0144), -1 for others. */
    private static final int[] CHAR_TO_BYTE = new int[0x144];

    static {
        Arrays.fill(CHAR_TO_BYTE, -1);
        int next = 256;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            BYTE_TO_CHAR[b] = (char) (printable ? b : next++);
            CHAR_TO_BYTE[BYTE_TO_CHAR[b]] = b;
        }
    }

    private final Vocabulary vocabulary;
    private final Map<String, Integer> ids = new HashMap<>();
    /** Id of each byte's one-character piece, -1 where the vocabulary lacks it. */
    private final int[] byteIds = new int[256];
    private final MergeTable merges;
    private final Pattern[] patterns;
    private final SpecialPieces specialPieces;
    /** Tokens decoded as their own text: control and user-defined pieces. */
    private final boolean[] literal;
    private final Map<String, int[]> wordCache = new ConcurrentHashMap<>();

    public BytePairTokenizer(Vocabulary vocabulary) {
        if (vocabulary.kind() != Vocabulary.Kind.BPE) throw new IllegalArgumentException("not a BPE vocabulary: " + vocabulary.kind());
        this.vocabulary = vocabulary;
        literal = new boolean[vocabulary.size()];
        List<Integer> special = new ArrayList<>();
        for (int id = 0; id < vocabulary.size(); id++) {
            String piece = vocabulary.pieces().get(id);
            ids.putIfAbsent(piece, id);
            TokenType type = vocabulary.types().get(id);
            if (type == TokenType.CONTROL || type == TokenType.USER_DEFINED) {
                literal[id] = true;
                if (!piece.isEmpty()) special.add(id);
            }
        }
        for (int b = 0; b < 256; b++) byteIds[b] = ids.getOrDefault(String.valueOf(BYTE_TO_CHAR[b]), -1);
        merges = new MergeTable(vocabulary.merges(), ids);
        patterns = vocabulary.preTokenizer().patterns().stream()
                .map(p -> Pattern.compile(p, Pattern.UNICODE_CHARACTER_CLASS)).toArray(Pattern[]::new);
        specialPieces = new SpecialPieces(vocabulary.pieces(), special);
    }

    @Override
    public int bos() { return vocabulary.bos(); }

    @Override
    public int eos() { return vocabulary.eos(); }

    @Override
    public boolean addsBos() { return vocabulary.addBos() && vocabulary.bos() >= 0; }

    @Override
    public int[] encode(String text) {
        return encode(text, addsBos());
    }

    @Override
    public int[] encode(String text, boolean addBos) {
        if (addBos && vocabulary.bos() < 0) throw new IllegalArgumentException("the vocabulary has no BOS token to add");
        IntList out = new IntList(text.length() / 3 + 2);
        if (addBos) out.add(vocabulary.bos());
        int start = 0;
        for (int i = 0; i < text.length(); i++) {
            int special = specialPieces.at(text, i);
            if (special < 0) continue;
            if (start < i) splitAndEncode(text.substring(start, i), 0, out);
            out.add(special);
            i += vocabulary.pieces().get(special).length() - 1;
            start = i + 1;
        }
        if (start < text.length()) splitAndEncode(text.substring(start), 0, out);
        return out.toArray();
    }

    /** Cuts {@code text} by pattern {@code level} and the ones after it, encoding each word. */
    private void splitAndEncode(String text, int level, IntList out) {
        if (level == patterns.length) {
            encodeWord(text, out);
            return;
        }
        Consumer<String> next = piece -> splitAndEncode(piece, level + 1, out);
        Matcher m = patterns[level].matcher(text);
        int end = 0;
        while (m.find()) {
            if (m.end() == m.start()) continue;
            if (m.start() > end) next.accept(text.substring(end, m.start()));
            next.accept(m.group());
            end = m.end();
        }
        if (end < text.length()) next.accept(end == 0 ? text : text.substring(end));
    }

    private void encodeWord(String word, IntList out) {
        int[] cached = wordCache.get(word);
        if (cached == null) {
            cached = merge(word);
            if (wordCache.size() < CACHE_LIMIT) wordCache.put(word, cached);
        }
        out.addAll(cached);
    }

    /** The ids of one word: the whole word if merges are ignored and it is a piece, else its merged byte symbols. */
    private int[] merge(String word) {
        byte[] bytes = word.getBytes(StandardCharsets.UTF_8);
        if (vocabulary.ignoreMerges()) {
            char[] chars = new char[bytes.length];
            for (int i = 0; i < bytes.length; i++) chars[i] = BYTE_TO_CHAR[bytes[i] & 0xFF];
            Integer whole = ids.get(new String(chars));
            if (whole != null) return new int[] {whole};
        }
        int n = bytes.length;
        int[] symbol = new int[n];
        int[] prev = new int[n];
        int[] next = new int[n];
        for (int i = 0; i < n; i++) {
            symbol[i] = byteIds[bytes[i] & 0xFF];
            if (symbol[i] < 0) {
                throw new IllegalArgumentException("BPE symbol \"" + BYTE_TO_CHAR[bytes[i] & 0xFF] + "\" of \"" + word + "\" is not in the vocabulary");
            }
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
        }
        // queue entries are rank << 32 | left position: lowest rank first, then leftmost
        LongHeap queue = new LongHeap(n);
        for (int i = 0; i + 1 < n; i++) offer(queue, symbol, i, i + 1);
        int count = n;
        while (!queue.isEmpty()) {
            long top = queue.poll();
            int left = (int) top;
            int right = next[left];
            // stale: the left symbol was merged away, has no right neighbour, or the pair changed since
            if (symbol[left] < 0 || right < 0) continue;
            int slot = merges.find(symbol[left], symbol[right]);
            if (slot < 0 || merges.rank(slot) != (int) (top >>> 32)) continue;
            symbol[left] = merges.result(slot);
            symbol[right] = -1;
            next[left] = next[right];
            if (next[right] >= 0) prev[next[right]] = left;
            count--;
            if (prev[left] >= 0) offer(queue, symbol, prev[left], left);
            if (next[left] >= 0) offer(queue, symbol, left, next[left]);
        }
        int[] result = new int[count];
        for (int i = 0, k = 0; i >= 0; i = next[i]) result[k++] = symbol[i];
        return result;
    }

    private void offer(LongHeap queue, int[] symbol, int left, int right) {
        int slot = merges.find(symbol[left], symbol[right]);
        if (slot >= 0) queue.add((long) merges.rank(slot) << 32 | left);
    }

    @Override
    public String decode(int[] tokens) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        for (int token : tokens) {
            checkToken(token);
            if (token != vocabulary.bos() && token != vocabulary.eos()) bytes.writeBytes(pieceBytes(token));
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Override
    public byte[] pieceBytes(int token) {
        checkToken(token);
        String piece = vocabulary.pieces().get(token);
        if (literal[token]) return piece.getBytes(StandardCharsets.UTF_8);
        byte[] bytes = new byte[piece.length()];
        for (int i = 0; i < piece.length(); i++) {
            char c = piece.charAt(i);
            if (c >= CHAR_TO_BYTE.length || CHAR_TO_BYTE[c] < 0) return piece.getBytes(StandardCharsets.UTF_8);
            bytes[i] = (byte) CHAR_TO_BYTE[c];
        }
        return bytes;
    }

    private void checkToken(int token) {
        if (token < 0 || token >= vocabulary.size()) {
            throw new IllegalArgumentException("token " + token + " outside the vocabulary [0, " + vocabulary.size() + ")");
        }
    }

    /** GPT-2's byte-to-character table, for tests and tools that build BPE vocabularies. */
    public static char byteChar(int b) {
        return BYTE_TO_CHAR[b];
    }

    /**
     * Merge rules keyed by the ids of their two pieces, in open addressing: a Llama 3 vocabulary has
     * 280,147 of them, so boxed map entries would cost more than the merging they serve.
     */
    private static final class MergeTable {
        private static final long EMPTY = -1;
        private final long[] keys;
        private final int[] ranks;
        private final int[] results;
        private final int mask;

        MergeTable(List<String> rules, Map<String, Integer> ids) {
            int capacity = Integer.highestOneBit(Math.max(4, rules.size() * 2)) << 1;
            keys = new long[capacity];
            Arrays.fill(keys, EMPTY);
            ranks = new int[capacity];
            results = new int[capacity];
            mask = capacity - 1;
            for (int rank = 0; rank < rules.size(); rank++) {
                String rule = rules.get(rank);
                int space = rule.indexOf(' ', 1);  // from 1, as llama.cpp splits: a rule may merge a space piece
                if (space < 0) throw new IllegalArgumentException("merge rule " + rank + " is not \"left right\": \"" + rule + "\"");
                String left = rule.substring(0, space);
                String right = rule.substring(space + 1);
                int l = id(ids, rank, rule, left);
                int r = id(ids, rank, rule, right);
                int merged = id(ids, rank, rule, left + right);
                int slot = slot(l, r);
                if (keys[slot] == EMPTY) {  // a repeated rule keeps its first (lowest) rank
                    keys[slot] = key(l, r);
                    ranks[slot] = rank;
                    results[slot] = merged;
                }
            }
        }

        private static int id(Map<String, Integer> ids, int rank, String rule, String piece) {
            Integer id = ids.get(piece);
            if (id == null) throw new IllegalArgumentException("merge rule " + rank + " \"" + rule + "\": \"" + piece + "\" is not in the vocabulary");
            return id;
        }

        private static long key(int left, int right) {
            return (long) left << 32 | right;
        }

        /** The slot holding (left, right), or the empty slot where it would go. */
        private int slot(int left, int right) {
            long key = key(left, right);
            long h = key * 0x9E3779B97F4A7C15L;
            int slot = (int) (h ^ h >>> 29) & mask;
            while (keys[slot] != EMPTY && keys[slot] != key) slot = (slot + 1) & mask;
            return slot;
        }

        /** The slot of the rule merging {@code left} and {@code right}, or -1. */
        int find(int left, int right) {
            int slot = slot(left, right);
            return keys[slot] == EMPTY ? -1 : slot;
        }

        int rank(int slot) { return ranks[slot]; }

        int result(int slot) { return results[slot]; }
    }

    /** A binary min-heap of longs. */
    private static final class LongHeap {
        private long[] heap;
        private int size;

        LongHeap(int capacity) {
            heap = new long[Math.max(capacity, 4)];
        }

        boolean isEmpty() { return size == 0; }

        void add(long value) {
            if (size == heap.length) heap = Arrays.copyOf(heap, size * 2);
            int i = size++;
            while (i > 0) {
                int parent = (i - 1) >>> 1;
                if (heap[parent] <= value) break;
                heap[i] = heap[parent];
                i = parent;
            }
            heap[i] = value;
        }

        long poll() {
            long top = heap[0];
            long last = heap[--size];
            int i = 0;
            while (true) {
                int child = 2 * i + 1;
                if (child >= size) break;
                if (child + 1 < size && heap[child + 1] < heap[child]) child++;
                if (heap[child] >= last) break;
                heap[i] = heap[child];
                i = child;
            }
            heap[i] = last;
            return top;
        }
    }

    /**
     * Pieces recognised whole in text, by first character, longest first; a scan finds the leftmost
     * match and, there, the longest (Hugging Face's added-vocabulary matcher is leftmost-longest).
     */
    private static final class SpecialPieces {
        private final Map<Character, int[]> byFirstChar = new HashMap<>();
        private final List<String> pieces;

        SpecialPieces(List<String> pieces, List<Integer> ids) {
            this.pieces = pieces;
            Map<Character, List<Integer>> groups = new HashMap<>();
            for (int id : ids) groups.computeIfAbsent(pieces.get(id).charAt(0), c -> new ArrayList<>()).add(id);
            groups.forEach((c, group) -> byFirstChar.put(c, group.stream()
                    .sorted(Comparator.comparingInt((Integer id) -> pieces.get(id).length()).reversed())
                    .mapToInt(Integer::intValue).toArray()));
        }

        /** The id of the longest special piece starting at {@code i} of {@code text}, or -1. */
        int at(String text, int i) {
            if (byFirstChar.isEmpty()) return -1;
            int[] candidates = byFirstChar.get(text.charAt(i));
            if (candidates == null) return -1;
            for (int id : candidates) {
                if (text.startsWith(pieces.get(id), i)) return id;
            }
            return -1;
        }
    }
}
