/**
 * Scalar reference decoders of jquant's block-quantized element types, one class per format, each
 * holding its block layout as named constants and a byte diagram. {@link jquant.formats.Dequantizer#of}
 * hands them out; SIMD kernels elsewhere are tested against them.
 */
package jquant.formats.quant;
