/**
 * The orchestration above the stages: {@link jquant.pipeline.Sweep} calibrates, allocates, packs,
 * verifies and evaluates every {@link jquant.pipeline.QuantizationMethod} at every budget into one
 * folder and one report.
 */
package jquant.pipeline;
