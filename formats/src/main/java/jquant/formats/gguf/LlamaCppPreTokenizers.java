package jquant.formats.gguf;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The byte-level BPE pre-tokenizers llama.cpp knows by the name in {@code tokenizer.ggml.pre}, with the
 * regular expressions and flags its {@code llama-vocab.cpp} gives each ({@code llm_tokenizer_bpe}'s
 * {@code regex_exprs}, and {@code ignore_merges} / {@code add_bos} from {@code llama_vocab::impl::load}).
 *
 * <p>The patterns feed a {@link jquant.formats.PreTokenizer}. Only names whose splitting is plain regular
 * expressions are here; llama.cpp names that need custom code (Kimi-K2, AFMoE digits, Gemma 4's raw
 * UTF-8) or a separator token ({@code roberta-bpe}) are not.
 */
public final class LlamaCppPreTokenizers {

    /** What a name implies: the split patterns, whether whole-word pieces skip merging, and the BOS default. */
    public record Family(List<String> patterns, boolean ignoreMerges, boolean addBos) {}

    // llama.cpp's rewrite of Llama 3's tokenizer.json pattern, (?i:'s|…) spelled out as '[sS]|…
    private static final String LLAMA3 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
            + "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    private static final String QWEN2 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
            + "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    private static final String QWEN35 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+"
            + "|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    // GPT-2's pattern without the final \s+: whitespace it would take is left between matches, a piece all the same
    private static final String GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

    private static final Family LLAMA3_FAMILY = new Family(List.of(LLAMA3), true, true);
    private static final Family LLAMA3_SPLIT = new Family(List.of(LLAMA3), false, false);
    private static final Family GPT2_FAMILY = new Family(List.of(GPT2), false, false);
    private static final Family SMOLLM_FAMILY = new Family(List.of("\\p{N}", GPT2), false, false);
    private static final Family QWEN2_FAMILY = new Family(List.of(QWEN2), false, false);
    private static final Family QWEN35_FAMILY = new Family(List.of(QWEN35), false, false);
    private static final Family FALCON_FAMILY = new Family(List.of("[\\p{P}\\$\\+<=>\\^~\\|`]+", GPT2, "[0-9][0-9][0-9]"), false, false);
    /** What llama.cpp uses when a GGUF names no pre-tokenizer (with a warning that quality will suffer). */
    private static final Family DEFAULT_FAMILY = new Family(List.of("[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2, "\\p{N}+", "[0-9][0-9][0-9]"), false, false);

    private static final Map<String, Family> BY_NAME = new TreeMap<>();

    static {
        for (String n : List.of("llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano")) {
            BY_NAME.put(n, LLAMA3_FAMILY);
        }
        for (String n : List.of("dbrx", "smaug-bpe")) BY_NAME.put(n, LLAMA3_SPLIT);
        for (String n : List.of("gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
                "modern-bert", "exaone4", "mpt", "olmo", "jais", "trillion", "granite-docling")) {
            BY_NAME.put(n, GPT2_FAMILY);
        }
        for (String n : List.of("starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2")) {
            BY_NAME.put(n, SMOLLM_FAMILY);
        }
        for (String n : List.of("qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open")) {
            BY_NAME.put(n, QWEN2_FAMILY);
        }
        BY_NAME.put("qwen35", QWEN35_FAMILY);
        BY_NAME.put("falcon", FALCON_FAMILY);
        BY_NAME.put("default", DEFAULT_FAMILY);
    }

    private LlamaCppPreTokenizers() {}

    /** The family llama.cpp gives {@code name}, if it is one of the supported names. */
    public static Optional<Family> named(String name) {
        return Optional.ofNullable(BY_NAME.get(name));
    }

    /** Every supported name, sorted. */
    public static SortedSet<String> names() {
        return new TreeSet<>(BY_NAME.keySet());
    }
}
