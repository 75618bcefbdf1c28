package jquant.calibration;

import jquant.formats.Checkpoint;
import jquant.formats.InputFiles;
import jquant.formats.TensorKind;
import jquant.pack.model.SmoothedSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.SequencedMap;

/**
 * Calibration's side of the stats → pack bridge, what {@code pack --stats} and {@code verify --stats}
 * hand the packer: the {@link SmoothedModel} of the checkpoint, and the SHA-256 of the stats file that
 * names it in the packed file's metadata.
 */
public record StatsSmoothing(SmoothedModel model, String statsSha256) implements SmoothedSource {

    /** Reads the stats and smooths {@code checkpoint} with them (stats of another model are refused). */
    public static StatsSmoothing of(Checkpoint checkpoint, Path statsFile) throws IOException {
        byte[] bytes = InputFiles.readAllBytes(statsFile);
        CalibrationStats stats = CalibrationStatsFile.read(statsFile);
        try {
            String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
            return new StatsSmoothing(Smoothing.apply(checkpoint, stats), sha);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    @Override
    public Checkpoint smoothed() { return model; }

    @Override
    public float[] outputFactor(TensorKind kind, int layer) { return model.outputFactor(kind, layer); }

    @Override
    public float inputScale(TensorKind kind, int layer) { return model.inputScale(kind, layer); }

    @Override
    public float outputScale(TensorKind kind, int layer) { return model.outputScale(kind, layer); }

    @Override
    public float alpha(TensorKind kind, int layer) { return model.alpha(kind, layer); }

    @Override
    public SequencedMap<String, Float> groupAlphas() {
        SequencedMap<String, Float> alphas = new LinkedHashMap<>();
        for (GroupStats g : model.stats().groups()) alphas.put(g.name(), g.alpha());
        return alphas;
    }

    @Override
    public String modelFingerprint() { return model.stats().fingerprint(); }
}
