package jquant.distributed;

import jquant.calibration.Calibrator;
import jquant.formats.TensorKind;
import jquant.pack.model.ModelPacker;
import jquant.pipeline.QuantizationMethod;
import jquant.pipeline.Sweep;
import jquant.runtime.PackedModelLoader;

import java.io.Serial;
import java.io.Serializable;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

/**
 * {@link Sweep.Options} as they travel to the workers: paths as absolute strings (a {@link Path} does not serialize, and
 * a worker's working folder is not this JVM's).
 */
record SweepSpec(String model, String tokenizer, String data, String calibrationData, int ctx, ArrayList<Double> budgets,
                 ArrayList<QuantizationMethod> methods, ArrayList<PackedModelLoader.Mode> modes, int tokens, int calibrationContext,
                 int sampleTokens, long seed, EnumSet<TensorKind> keep, ModelPacker.KeepType keepType, ArrayList<String> compare, String out)
        implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    static SweepSpec of(Sweep.Options o) {
        Calibrator.Options c = o.calibration();
        EnumSet<TensorKind> keep = EnumSet.noneOf(TensorKind.class);
        keep.addAll(o.keep());
        return new SweepSpec(string(o.model()), string(o.tokenizer()), string(o.data()), string(o.calibrationData()), o.ctx(),
                new ArrayList<>(o.budgets()), new ArrayList<>(o.methods()), new ArrayList<>(o.modes()), c.maxTokens(), c.context(),
                c.sampleTokens(), c.seed(), keep, o.keepType(), new ArrayList<>(o.compare().stream().map(SweepSpec::string).toList()), string(o.out()));
    }

    Sweep.Options options() {
        return new Sweep.Options(path(model), path(tokenizer), path(data), path(calibrationData), ctx, budgets, methods, modes,
                new Calibrator.Options(tokens, calibrationContext, sampleTokens, List.copyOf(budgets), false, seed), keep, keepType,
                compare.stream().map(Path::of).toList(), path(out));
    }

    private static String string(Path p) {
        return p == null ? null : p.toAbsolutePath().normalize().toString();
    }

    private static Path path(String s) {
        return s == null ? null : Path.of(s);
    }
}
