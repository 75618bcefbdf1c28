package jquant.calibration.allocation;

import jquant.formats.LlamaLayout;
import jquant.formats.ModelConfig;
import jquant.formats.TensorKind;
import jquant.formats.weightlet.ChannelBitWidths;
import jquant.formats.weightlet.WeightletLayout;
import jquant.quantize.ErrorTable;
import jquant.quantize.GreedyBitAllocator;
import jquant.quantize.TensorPlan;

/**
 * The bytes a packed model's tensors take, counted as llama.cpp counts bits per weight: every byte of
 * every tensor (weightlet data with its float32 scales and 4-bit widths, float16 tensors, float32 norms
 * and biases) times 8, over every weight of the source model. The file's metadata (tokenizer, plan) is
 * not counted, as llama.cpp does not count it.
 *
 * <pre>
 *  tensor                    bytes
 *  norm, bias (f32)          4 · length
 *  weightlet rows × cols     Σ_r channelBytes(B_r, cols) + 4 · rows (scales) + ⌈3 · rows / 8⌉ (widths)
 *  float16 rows × cols       2 · rows · cols
 * </pre>
 */
final class WholeFileBudget {
    /** A channel's cost as stored, padding of its last group included, in bits. */
    static final GreedyBitAllocator.ChannelCost CHANNEL = (table, bits) -> 8 * WeightletLayout.channelBytes(bits, table.cols());

    private WholeFileBudget() {}

    /** Every weight of the source model: each tensor it has, counted once (a tied classifier is the embedding). */
    static long modelWeights(ModelConfig c) {
        long weights = 0;
        for (TensorKind kind : TensorKind.values()) {
            if (!kind.presentIn(c) || kind == TensorKind.HEAD && c.tiedEmbeddings()) continue;
            weights += elements(kind, c) * (kind.perLayer() ? c.layers() : 1);
        }
        return weights;
    }

    /** Bytes of the float32 vectors every packed file has: the norms and, where the architecture has them, the q/k/v biases. */
    static long vectorBytes(ModelConfig c) {
        long bytes = 0;
        for (TensorKind kind : TensorKind.values()) {
            if (!kind.presentIn(c) || LlamaLayout.expectedShape(kind, c).length != 1) continue;
            bytes += Float.BYTES * elements(kind, c) * (kind.perLayer() ? c.layers() : 1);
        }
        return bytes;
    }

    /** Bytes of a weightlet tensor's scales and widths: what its channels cost beside their codes. */
    static long channelOverhead(int rows) {
        return (long) Float.BYTES * rows + ChannelBitWidths.encodedBytes(rows);
    }

    /** Bytes of a planned tensor as packed. */
    static long bytes(TensorPlan p) {
        long bytes = channelOverhead(p.rows());
        for (int r = 0; r < p.rows(); r++) bytes += WeightletLayout.channelBytes(p.bits(r), p.cols());
        return bytes;
    }

    /** Bytes of a {@code rows × cols} tensor kept in float16. */
    static long float16Bytes(ErrorTable table) {
        return 2L * table.rows() * table.cols();
    }

    private static long elements(TensorKind kind, ModelConfig c) {
        long n = 1;
        for (long d : LlamaLayout.expectedShape(kind, c)) n *= d;
        return n;
    }
}
