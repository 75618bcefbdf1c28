package jquant.core;

/**
 * Told as a stage works (calibrate, allocate, pack, verify, eval): {@code done} of {@code total} units and where
 * the stage is, such as a tensor's name or {@code "layer 3/32: 812 tok/s"} (empty where there is nothing to say).
 * One shape for every stage, so one lambda, or {@code (done, total, where) -> {}}, serves any of them.
 */
@FunctionalInterface
public interface ProgressListener {
    void update(long done, long total, String where);
}
