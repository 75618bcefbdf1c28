package jquant.runtime;

import jquant.formats.Vocabulary;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Byte-level BPE as GPT-2 defined it and llama.cpp runs it for GGUF {@code tokenizer.ggml.model =
 * "gpt2"} vocabularies (and Hugging Face {@code tokenizer.json} BPE models):
 *
 * <ol>
 *   <li>the text is split into pre-tokens by GPT-2's pattern (contractions, letter runs with an
 *       optional leading space, digit runs, punctuation runs, whitespace);</li>
 *   <li>each pre-token's UTF-8 bytes become characters through GPT-2's byte-to-unicode table (printable
 *       bytes stand for themselves, the other 68 map to U+0100 onwards; a space becomes {@code Ġ});</li>
 *   <li>adjacent symbols are merged, lowest merge rank first (leftmost on ties), until no listed merge
 *       applies; each final symbol is a vocabulary piece.</li>
 * </ol>
 *
 * Decoding concatenates pieces, maps the characters back to bytes and reads them as UTF-8; BOS/EOS
 * print nothing. Model-specific pre-tokenizers (Llama 3's digit groups, for example) are not
 * modelled: this is the GPT-2 pattern.
 */
public final class BytePairTokenizer implements Tokenizer {
    /** GPT-2's pre-tokenizer. */
    private static final Pattern PRE_TOKENS = Pattern.compile(
            "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+");

    private static final char[] BYTE_TO_CHAR = new char[256];
    private static final Map<Character, Integer> CHAR_TO_BYTE = new HashMap<>();

    static {
        int next = 256;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            BYTE_TO_CHAR[b] = (char) (printable ? b : next++);
            CHAR_TO_BYTE.put(BYTE_TO_CHAR[b], b);
        }
    }

    private final Vocabulary vocabulary;
    private final Map<String, Integer> ids = new HashMap<>();
    private final Map<String, Integer> mergeRank = new HashMap<>();

    public BytePairTokenizer(Vocabulary vocabulary) {
        if (vocabulary.kind() != Vocabulary.Kind.BPE) throw new IllegalArgumentException("not a BPE vocabulary: " + vocabulary.kind());
        this.vocabulary = vocabulary;
        for (int id = 0; id < vocabulary.size(); id++) ids.putIfAbsent(vocabulary.pieces().get(id), id);
        for (int r = 0; r < vocabulary.merges().size(); r++) {
            String merge = vocabulary.merges().get(r);
            if (merge.indexOf(' ') <= 0) throw new IllegalArgumentException("merge rule " + r + " is not \"left right\": \"" + merge + "\"");
            mergeRank.putIfAbsent(merge, r);
        }
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
        List<Integer> out = new ArrayList<>();
        if (addBos) out.add(vocabulary.bos());
        Matcher m = PRE_TOKENS.matcher(text);
        while (m.find()) {
            for (String symbol : merge(m.group())) {
                Integer id = ids.get(symbol);
                if (id == null) throw new IllegalArgumentException("BPE symbol \"" + symbol + "\" of \"" + m.group() + "\" is not in the vocabulary");
                out.add(id);
            }
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    /** The pre-token as byte characters, merged by rank until no listed merge applies. */
    private List<String> merge(String preToken) {
        byte[] bytes = preToken.getBytes(StandardCharsets.UTF_8);
        List<String> symbols = new ArrayList<>(bytes.length);
        for (byte b : bytes) symbols.add(String.valueOf(BYTE_TO_CHAR[b & 0xFF]));
        while (symbols.size() > 1) {
            int best = -1, bestRank = Integer.MAX_VALUE;
            for (int i = 0; i + 1 < symbols.size(); i++) {
                Integer rank = mergeRank.get(symbols.get(i) + " " + symbols.get(i + 1));
                if (rank != null && rank < bestRank) {
                    bestRank = rank;
                    best = i;
                }
            }
            if (best < 0) break;
            symbols.set(best, symbols.get(best) + symbols.remove(best + 1));
        }
        return symbols;
    }

    @Override
    public String decode(int[] tokens) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        for (int token : tokens) {
            if (token < 0 || token >= vocabulary.size()) {
                throw new IllegalArgumentException("token " + token + " outside the vocabulary [0, " + vocabulary.size() + ")");
            }
            if (token == vocabulary.bos() || token == vocabulary.eos()) continue;
            String piece = vocabulary.pieces().get(token);
            for (int i = 0; i < piece.length(); i++) {
                Integer b = CHAR_TO_BYTE.get(piece.charAt(i));
                if (b == null) {
                    bytes.writeBytes(String.valueOf(piece.charAt(i)).getBytes(StandardCharsets.UTF_8));  // an added token's literal text
                } else {
                    bytes.write(b);
                }
            }
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    /** GPT-2's byte-to-character table, for tests and tools that build BPE vocabularies. */
    public static char byteChar(int b) {
        return BYTE_TO_CHAR[b];
    }
}
