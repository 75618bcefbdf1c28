/**
 * jquant's block formats, one class per format: its layout as named constants with a byte diagram,
 * its scalar reference decoder ({@code dequantize}) and, for the ternary formats, its encoder to and
 * from {@link jquant.formats.quant.TernaryTensor}. SIMD kernels elsewhere are tested against these.
 *
 * <p>A class is named after its format, spelled once: ggml's type name for the Q and K families
 * ({@code Q4_0Block}, {@code Q6_KBlock}), and for the ternary family the spelling its kernels share
 * ({@code Tq1Block}, {@code Tq2Block}, {@code Pq2Block}, {@code Ptq1Block}, {@code T2pBlock} beside
 * {@code Pq2Matrix}, {@code Ptq1Matrix}, {@code T2pMatrix}). This package knows nothing of
 * {@link jquant.formats.DType}: the type table names each type's codec here, in that one direction.
 */
package jquant.formats.quant;
