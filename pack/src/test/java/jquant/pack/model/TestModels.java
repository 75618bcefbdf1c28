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

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assumptions.assumeThat;

/** The real stories260K checkpoint from {@code ../shared}, and bit plans made with quantize's API. */
final class TestModels {
    private TestModels() {}

    static Checkpoint stories260K() throws CheckpointException {
        Path models = Path.of(System.getProperty("jquant.shared", "../shared")).toAbsolutePath().normalize().resolve("models");
        assumeThat(Files.isDirectory(models)).as("shared models at %s", models).isTrue();
        return Checkpoints.open(models.resolve("stories260K.bin"), models.resolve("tok512.bin"));
    }

    /** A greedy plan at {@code budget} over the seven block matrices of every layer, plus {@code extra} kinds. */
    static BitPlan plan(Checkpoint c, double budget, TensorKind... extra) {
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
