package jquant.calibration;

import jquant.formats.Checkpoint;
import jquant.formats.Tensor;
import jquant.formats.TensorKind;
import jquant.quantize.BitPlan;
import jquant.quantize.ErrorTable;
import jquant.quantize.GreedyBitAllocator;
import jquant.quantize.Metric;
import jquant.quantize.QuantLimits;
import jquant.quantize.RelativeError;
import jquant.quantize.TensorPlan;

import java.util.ArrayList;
import java.util.List;

/**
 * Bit allocation over a model's linear layers (the seven block matrices of every layer, then the
 * classifier), on the smoothed W' when calibration stats are given, so the allocation is
 * activation-aware (EdgeFlow §4.1).
 *
 * <ul>
 *   <li>{@link Scope#TENSOR}: every tensor gets the budget on its own (the paper).</li>
 *   <li>{@link Scope#MODEL}: one budget over all weights of all tensors (one allocator run).</li>
 *   <li>{@code weighted}: channel errors are weighted per input column by the E[x²] the smoothed
 *       weights see, {@code E[(x/f)²] = E[x²] / f²} ({@link RelativeError}'s importance).</li>
 * </ul>
 * The plan's α per tensor is its group's α (null without stats). Tables are computed row-parallel
 * by code that does not depend on the thread count, and the allocator is sequential, so the plan is
 * the same bytes on any machine.
 */
public final class BitAllocation {

    public enum Scope { TENSOR, MODEL }

    /**
     * @param budget   average bits per weight, [1, 8]
     * @param weighted weigh channel errors by calibration E[x²] (needs stats)
     */
    public record Options(double budget, Scope scope, Metric metric, boolean weighted) {
        public Options {
            if (!QuantLimits.isBudget(budget)) {
                throw new IllegalArgumentException("budget " + budget + " bits per weight is outside " + QuantLimits.BUDGET_RANGE);
            }
        }
    }

    /** Told after each tensor's error table. */
    @FunctionalInterface
    public interface Progress {
        void update(int tensorsDone, int tensors);
    }

    private BitAllocation() {}

    /** The linear layers a plan covers, in file order: blocks (q, k, v, o, gate, up, down), then the classifier. */
    public static List<Linear> linears(int layers) {
        List<Linear> out = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            for (TensorKind kind : TensorKind.values()) {
                if (kind.isBlockLinear()) out.add(new Linear(kind, l));
            }
        }
        out.add(new Linear(TensorKind.HEAD, 0));
        return out;
    }

    /** One linear layer of the model. */
    public record Linear(TensorKind kind, int layer) {
        public String name() { return CalibrationStats.tensorName(kind, layer); }
    }

    /**
     * Allocates bits to every linear layer of {@code checkpoint}.
     *
     * @param stats calibration stats of this checkpoint, or null to allocate on the raw weights
     * @throws IllegalArgumentException if the stats belong to another model, or weighting is asked without stats
     */
    public static BitPlan allocate(Checkpoint checkpoint, CalibrationStats stats, Options options, Progress progress) {
        if (options.weighted() && stats == null) {
            throw new IllegalArgumentException("weighted allocation needs calibration stats (E[x²] per input channel)");
        }
        SmoothedModel smoothed = stats == null ? null : Smoothing.apply(checkpoint, stats);
        List<Linear> linears = linears(checkpoint.config().layers());
        List<ErrorTable> tables = new ArrayList<>();
        for (Linear l : linears) {
            Tensor t = checkpoint.tensor(l.kind(), l.layer());
            float[] weights = smoothed == null ? t.toFloats() : smoothed.weights(l.kind(), l.layer());
            float[] importance = options.weighted() ? importance(smoothed, l) : null;
            tables.add(RelativeError.table(l.name(), weights, t.rows(), t.cols(), options.metric(), importance));
            progress.update(tables.size(), linears.size());
        }
        List<TensorPlan> plans = new ArrayList<>();
        List<TensorPlan> allocated = switch (options.scope()) {
            case TENSOR -> tables.stream().map(table -> GreedyBitAllocator.allocate(table, options.budget())).toList();
            case MODEL -> GreedyBitAllocator.allocate(tables, options.budget()).tensors();
        };
        for (int i = 0; i < allocated.size(); i++) {
            TensorPlan p = allocated.get(i);
            Linear l = linears.get(i);
            Double alpha = smoothed == null ? null : (double) smoothed.alpha(l.kind(), l.layer());
            plans.add(new TensorPlan(p.name(), p.rows(), p.cols(), p.bits(), p.metric(), alpha));
        }
        return new BitPlan(options.budget(), plans, ModelFingerprint.id(checkpoint));
    }

    /** E[(x/f)²] per input column of the smoothed layer. */
    private static float[] importance(SmoothedModel smoothed, Linear l) {
        LinearGroup group = LinearGroup.of(l.kind());
        float[] meanSquare = smoothed.stats().group(group, l.layer()).inputMeanSquare();
        float[] f = smoothed.inputFactors(group, l.layer());
        for (int j = 0; j < meanSquare.length; j++) meanSquare[j] = (float) (meanSquare[j] / ((double) f[j] * f[j]));
        return meanSquare;
    }
}
