package jquant.calibration;

import jquant.formats.Checkpoint;
import jquant.formats.InputFiles;
import jquant.formats.TensorKind;
import jquant.pack.model.SmoothedSource;
import jquant.quantize.BitPlan;
import jquant.quantize.ErrorCompensatedRounding;
import jquant.quantize.Rounding;
import jquant.quantize.SmoothingRule;

import java.io.IOException;
import java.nio.file.Path;
import java.util.SequencedMap;

/**
 * Calibration's side of the stats → pack bridge, what {@code pack --stats} and {@code verify --stats}
 * hand the packer: the {@link SmoothedModel} of the checkpoint (the smoothing the plan was allocated
 * on), and the SHA-256 of the stats file that names it in the packed file's metadata. The GPTQ Hessian
 * of the group last asked for is kept, since the members of a group are packed one after another.
 */
public final class StatsSmoothing implements SmoothedSource {
    private final SmoothedModel model;
    private final String statsSha256;
    private String hessianGroup;
    private ErrorCompensatedRounding.Hessian hessian;

    public StatsSmoothing(SmoothedModel model, String statsSha256) {
        this.model = model;
        this.statsSha256 = statsSha256;
    }

    /** Reads the stats and smooths {@code checkpoint} as {@code plan} was allocated (stats of another model are refused). */
    public static StatsSmoothing of(Checkpoint checkpoint, Path statsFile, BitPlan plan) throws IOException {
        return of(checkpoint, CalibrationStatsFile.read(statsFile), plan);
    }

    /**
     * Smooths {@code checkpoint} with {@code stats} (as {@link Calibrator#calibrate} returns them) as {@code plan} was
     * allocated (stats of another model are refused); the SHA-256 is of the file the stats were read from.
     *
     * @throws IllegalArgumentException if the stats were not read from a file: the packed file records the file's hash
     */
    public static StatsSmoothing of(Checkpoint checkpoint, CalibrationStats stats, BitPlan plan) throws IOException {
        if (stats.source() == null) {
            throw new IllegalArgumentException("calibration stats not read from a file: a packed file records its stats file's SHA-256, so write them first");
        }
        return new StatsSmoothing(Smoothing.forPlan(checkpoint, stats, plan), InputFiles.sha256(stats.source()));
    }

    public SmoothedModel model() { return model; }

    @Override
    public String statsSha256() { return statsSha256; }

    @Override
    public Checkpoint smoothed() { return model; }

    @Override
    public SmoothingRule rule() { return model.rule(); }

    @Override
    public float[] weights(TensorKind kind, int layer) { return model.weights(kind, layer); }

    @Override
    public float[] outputFactor(TensorKind kind, int layer) { return model.outputFactor(kind, layer); }

    @Override
    public float inputScale(TensorKind kind, int layer) { return model.inputScale(kind, layer); }

    @Override
    public float outputScale(TensorKind kind, int layer) { return model.outputScale(kind, layer); }

    @Override
    public float alpha(TensorKind kind, int layer) { return model.alpha(kind, layer); }

    @Override
    public SequencedMap<String, Float> groupAlphas() { return model.groupAlphas(); }

    @Override
    public String modelFingerprint() { return model.stats().fingerprint(); }

    @Override
    public synchronized ErrorCompensatedRounding.Hessian hessian(TensorKind kind, int layer, Rounding rounding) {
        if (!rounding.compensated()) throw new IllegalArgumentException(rounding.label() + " rounding uses no E[x·xᵀ]");
        String group = LinearGroup.of(kind).canonicalName(layer) + "/" + rounding.label();
        if (!group.equals(hessianGroup)) {
            hessian = null;   // the last group's H and factor go before this group's are made, so one group's are held, not two
            hessianGroup = null;
            float[] moment = model.inputSecondMoment(kind, layer);
            int n = (int) Math.round(Math.sqrt(moment.length));
            hessian = rounding == Rounding.GPTQ ? ErrorCompensatedRounding.Hessian.activationOrder(moment, n)
                    : ErrorCompensatedRounding.Hessian.of(moment, n);
            hessianGroup = group;
        }
        return hessian;
    }
}
