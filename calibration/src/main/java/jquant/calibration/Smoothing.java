package jquant.calibration;

import jquant.formats.Checkpoint;

/** Entry point of NPU-aware smoothing: a checkpoint plus its calibration stats give a {@link SmoothedModel}. */
public final class Smoothing {

    private Smoothing() {}

    /**
     * The smoothed view of {@code checkpoint}.
     *
     * @throws IllegalArgumentException if {@code stats} were measured on another model (fingerprints differ)
     */
    public static SmoothedModel apply(Checkpoint checkpoint, CalibrationStats stats) {
        checkBelongs(checkpoint, stats);
        return new SmoothedModel(checkpoint, stats);
    }

    /** Refuses stats whose {@link ModelFingerprint} is not this checkpoint's. */
    public static void checkBelongs(Checkpoint checkpoint, CalibrationStats stats) {
        String fingerprint = ModelFingerprint.of(checkpoint);
        if (!fingerprint.equals(stats.fingerprint())) {
            throw new IllegalArgumentException("the calibration stats were measured on another model (" + stats.model() + ", fingerprint "
                    + stats.fingerprint().substring(0, 12) + "…), not on " + checkpoint.source().getFileName() + " (fingerprint "
                    + fingerprint.substring(0, 12) + "…)");
        }
        int layers = checkpoint.config().layers();
        for (LinearGroup g : LinearGroup.values()) {
            for (int l = 0; l < g.count(layers); l++) stats.group(g, l);
        }
    }
}
