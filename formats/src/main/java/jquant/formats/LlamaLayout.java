package jquant.formats;

import java.util.Arrays;
import java.util.Optional;

/**
 * The tensor shapes a Llama-family {@link ModelConfig} implies, and the completeness check every reader
 * runs on open, so that a checkpoint missing a layer's tensor or holding one of the wrong shape is
 * refused up front rather than failing mid-inference.
 */
public final class LlamaLayout {
    private LlamaLayout() {}

    /** Row-major shape of the tensor playing {@code kind}: matrices {@code [out, in]}, norms and biases one dimension. */
    public static long[] expectedShape(TensorKind kind, ModelConfig c) {
        return switch (kind) {
            case EMBEDDING, HEAD -> new long[] {c.vocabSize(), c.dim()};
            case ATTN_NORM, FFN_NORM, FINAL_NORM -> new long[] {c.dim()};
            case WQ -> new long[] {c.qDim(), c.dim()};
            case WO -> new long[] {c.dim(), c.qDim()};
            case WK, WV -> new long[] {c.kvDim(), c.dim()};
            case Q_BIAS -> new long[] {c.qDim()};
            case K_BIAS, V_BIAS -> new long[] {c.kvDim()};
            case W_GATE, W_UP -> new long[] {c.hiddenDim(), c.dim()};
            case W_DOWN -> new long[] {c.dim(), c.hiddenDim()};
        };
    }

    /**
     * Refuses a checkpoint holding tensors the model would not use, naming them: a {@code config.json}
     * with fewer layers than the weights hold, or a tensor of a kind jquant does not know, must not run
     * with those weights silently left out.
     *
     * @param derived names of tensors that only repeat what the config says (rotary inverse
     *                frequencies saved by older writers), allowed to be left out
     */
    public static void requireEveryTensorUsed(Checkpoint checkpoint, java.util.function.Predicate<String> derived) throws CheckpointException {
        ModelConfig c = checkpoint.config();
        java.util.Set<String> used = new java.util.HashSet<>();
        for (TensorKind kind : TensorKind.values()) {
            int layers = kind.perLayer() ? c.layers() : 1;
            for (int layer = 0; layer < layers; layer++) checkpoint.sourceName(kind, layer).ifPresent(used::add);
        }
        java.util.List<String> extras = checkpoint.tensors().keySet().stream().filter(n -> !used.contains(n) && !derived.test(n)).toList();
        if (!extras.isEmpty()) {
            int shown = Math.min(extras.size(), 5);
            throw new CheckpointException(checkpoint.source(), extras.size() + " tensor" + (extras.size() == 1 ? " is" : "s are")
                    + " not used by the " + c.layers() + "-layer model its config describes: " + String.join(", ", extras.subList(0, shown))
                    + (extras.size() > shown ? ", …" : "") + " (does the config's layer count match the weights?)");
        }
    }

    /**
     * Checks that every canonical tensor of every layer is present with its expected shape ({@link TensorKind#HEAD}
     * may be absent when the embeddings are tied; biases are required exactly when the architecture has them).
     */
    public static void verify(Checkpoint checkpoint) throws CheckpointException {
        ModelConfig c = checkpoint.config();
        for (TensorKind kind : TensorKind.values()) {
            if (!kind.presentIn(c)) continue;
            int layers = kind.perLayer() ? c.layers() : 1;
            for (int layer = 0; layer < layers; layer++) {
                Optional<String> name = checkpoint.sourceName(kind, layer);
                Tensor t = name.map(checkpoint.tensors()::get).orElse(null);
                if (t == null) {
                    if (kind == TensorKind.HEAD && c.tiedEmbeddings()) continue;
                    throw new CheckpointException(checkpoint.source(), "missing tensor " + kind.canonicalName(layer)
                            + name.map(n -> " (" + n + ")").orElse(""));
                }
                long[] expected = expectedShape(kind, c);
                if (!Arrays.equals(t.shape(), expected)) {
                    throw new CheckpointException(checkpoint.source(), "tensor " + t.name() + " has shape "
                            + Arrays.toString(t.shape()) + ", the config implies " + Arrays.toString(expected));
                }
            }
        }
    }
}
