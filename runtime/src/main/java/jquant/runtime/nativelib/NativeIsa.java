package jquant.runtime.nativelib;

/** The instruction sets the C library has kernels for, best first within an architecture. */
public enum NativeIsa {
    /** The AVX-512 kernels with GFNI's byte maps (vgf2p8affineqb) unpacking weightlets. */
    AVX512_GFNI(8, "avx512gfni", 512),
    /** AVX-512 F/BW/VL with VNNI (vpdpbusd): 512-bit integer dot products. */
    AVX512_VNNI(2, "avx512", 512),
    /** AVX2 with FMA and F16C (vpmaddubsw + vpmaddwd): 256 bits, any x86-64 of the last decade. */
    AVX2(1, "avx2", 256),
    /** Armv8.2 NEON with the dot-product extension (sdot): 128 bits. */
    NEON_DOTPROD(4, "neon", 128);

    /** The bit of the library's {@code jq_isas()}. */
    final int bit;
    /** The suffix of the library's symbols, e.g. {@code jq_t2p_multiply_avx512}. */
    final String suffix;
    /** Vector width in bits. */
    public final int bits;

    NativeIsa(int bit, String suffix, int bits) {
        this.bit = bit;
        this.suffix = suffix;
        this.bits = bits;
    }
}
