package jquant.formats;

import java.util.Arrays;
import java.util.Optional;

/**
 * The decoder families jquant reads, runs and writes. Both are the same Llama-style decoder (RMSNorm,
 * grouped-query attention with RoPE, SwiGLU); they differ in what llama.cpp's GGUF files make of them:
 *
 * <ul>
 *   <li>{@link #LLAMA}: Llama 1/2/3.x, TinyLlama, SmolLM. GGUF keys {@code llama.*}; q/k rows rotate
 *       adjacent pairs (llama.cpp's convert_hf_to_gguf.py permutes Hugging Face's rows back).</li>
 *   <li>{@link #QWEN2}: Qwen2 / Qwen2.5: biases on the q, k and v projections. GGUF keys {@code qwen2.*};
 *       q/k rows stay in Hugging Face's rotate-half order (llama.cpp runs qwen2 with NEOX RoPE and
 *       convert_hf_to_gguf.py does not permute them).</li>
 * </ul>
 */
public enum Architecture {
    LLAMA("llama", "LlamaForCausalLM", RopeConvention.ADJACENT_PAIRS, false),
    QWEN2("qwen2", "Qwen2ForCausalLM", RopeConvention.ROTATE_HALF, true);

    private final String ggufName;
    private final String hfClass;
    private final RopeConvention ggufRope;
    private final boolean qkvBias;

    Architecture(String ggufName, String hfClass, RopeConvention ggufRope, boolean qkvBias) {
        this.ggufName = ggufName;
        this.hfClass = hfClass;
        this.ggufRope = ggufRope;
        this.qkvBias = qkvBias;
    }

    /** {@code general.architecture} and the prefix of its hyper-parameter keys; also HF's {@code model_type}. */
    public String ggufName() { return ggufName; }

    /** The Hugging Face {@code architectures} entry. */
    public String hfClass() { return hfClass; }

    /** How llama.cpp's GGUF files of this architecture store the q/k rows. */
    public RopeConvention ggufRope() { return ggufRope; }

    /** Whether the q, k and v projections carry a bias vector. */
    public boolean qkvBias() { return qkvBias; }

    /** The architecture whose GGUF / {@code model_type} name is {@code name}. */
    public static Optional<Architecture> byGgufName(String name) {
        return Arrays.stream(values()).filter(a -> a.ggufName.equals(name)).findFirst();
    }

    /** The architecture whose HF class is {@code name}. */
    public static Optional<Architecture> byHfClass(String name) {
        return Arrays.stream(values()).filter(a -> a.hfClass.equals(name)).findFirst();
    }

    /** Every architecture's GGUF name, for error messages. */
    public static String names() {
        return String.join(", ", Arrays.stream(values()).map(Architecture::ggufName).toList());
    }
}
