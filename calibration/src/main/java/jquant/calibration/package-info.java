/**
 * Calibration and NPU-aware smoothing (EdgeFlow §4.1), and bit allocation over a whole model.
 *
 * <pre>
 *  checkpoint + text ──► {@link jquant.calibration.Calibrator#calibrate} ──► {@link jquant.calibration.CalibrationStats}
 *                         (fp32 runtime, observing {@link jquant.runtime.LinearWeightsFactory};
 *                          S_I, E[x²], S_O; α per {@link jquant.calibration.LinearGroup} by {@link jquant.calibration.AlphaSearch})
 *  CalibrationStats ◄──► stats.gguf          {@link jquant.calibration.CalibrationStatsFile}
 *  checkpoint + stats ──► {@link jquant.calibration.Smoothing#apply} ──► {@link jquant.calibration.SmoothedModel}
 *                         (W', folded norms, output factors, static int8 scales; a Checkpoint view)
 *  checkpoint [+ stats] + budget ──► {@link jquant.calibration.allocation.BitAllocation#allocate} ──► {@link jquant.quantize.BitPlan}
 * </pre>
 * The format and the choices are written up in {@code docs/calibration.md}.
 */
package jquant.calibration;
