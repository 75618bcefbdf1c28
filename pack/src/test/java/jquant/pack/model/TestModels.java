package jquant.pack.model;

import jquant.formats.Checkpoint;
import jquant.formats.CheckpointException;
import jquant.formats.Checkpoints;
import jquant.formats.TensorKind;
import jquant.quantize.BitPlan;
import jquant.quantize.ErrorTable;
import jquant.quantize.GreedyBitAllocator;
import jquant.quantize.Metric;
import jquant.quantize.RelativeError;
import jquant.testsupport.Stories260K;

import java.util.ArrayList;
import java.util.List;

/** The real stories260K checkpoint, and bit plans made with quantize's API. */
public final class TestModels {
    private TestModels() {}

    public static Checkpoint stories260K() throws CheckpointException {
        return Checkpoints.open(Stories260K.model(), Stories260K.tokenizer());
    }

    /** A greedy plan at {@code budget} over the seven block matrices of every layer, plus {@code extra} kinds. */
    public static BitPlan plan(Checkpoint c, double budget, TensorKind... extra) {
        List<ErrorTable> tables = new ArrayList<>();
        for (int l = 0; l < c.config().layers(); l++) {
            for (TensorKind k : TensorKind.values()) {
                if (k.isBlockLinear()) tables.add(table(c, k, l));
            }
        }
        for (TensorKind k : extra) tables.add(table(c, k, 0));
        return GreedyBitAllocator.allocate(tables, budget);
    }

    private static ErrorTable table(Checkpoint c, TensorKind k, int layer) {
        var t = c.tensor(k, layer);
        return RelativeError.table(k.canonicalName(layer), t.toFloats(), t.rows(), t.cols(), Metric.APPROX, null);
    }
}
