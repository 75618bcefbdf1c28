/**
 * Bit allocation over a whole model (EdgeFlow Algorithm 1 at model scale): per-channel widths for every
 * linear layer under a budget, on the weights smoothed with the α the calibration stats give
 * ({@link jquant.calibration.allocation.SmoothingChoice}), by the greedy allocator of
 * {@code jquant.quantize}, into a {@link jquant.quantize.BitPlan}.
 */
package jquant.calibration.allocation;
