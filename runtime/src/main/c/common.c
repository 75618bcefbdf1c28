#include "jqk.h"
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#include <asm/hwcap.h>
#endif

JQK_EXPORT int32_t jq_abi(void) { return JQK_ABI; }

/* The instruction sets this CPU (and its operating system) runs, among those built into the library. */
JQK_EXPORT int32_t jq_isas(void) {
    int32_t isas = 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) isas |= JQK_AVX2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")
            && __builtin_cpu_supports("avx512vnni")) {
        isas |= JQK_AVX512_VNNI;
        if (__builtin_cpu_supports("gfni")) isas |= JQK_AVX512_GFNI;
    }
#elif defined(__aarch64__) && defined(__linux__)
    if (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) isas |= JQK_NEON_DOTPROD;
#elif defined(__aarch64__) && defined(__APPLE__)
    isas |= JQK_NEON_DOTPROD;   /* every Apple arm64 CPU has the dot-product extension */
#endif
    return isas;
}

/* Each block's sum of q and scale four times (lane 4k + r of a chunk), after the blocks' activations. */
static void sums_and_scales(const int32_t *sums, const float *scales, int32_t blocks, int8_t *after) {
    int32_t *sums4 = (int32_t *) after;
    float *scales4 = (float *) (sums4 + 4 * blocks);
    for (int32_t b = 0; b < blocks; b++) {
        for (int r = 0; r < 4; r++) {
            sums4[4 * b + r] = sums[b];
            scales4[4 * b + r] = scales[b];
        }
    }
}

/*
 * A column of int8 activations q (blocks x 128) with each block's sum of q and scale, as the T2P
 * kernels read it (T2P_ACT + 32 bytes per block, see jqk.h): per block, slot s (0..3), word wd (0..3),
 * 16 bytes = the activations of weights 32wd + 8s + (j mod 8), j = 0..15 (both rows of a pair read
 * them). Every instruction set uses this arrangement: a 512-bit register holds the four words of a
 * slot, a 256-bit one two, a 128-bit one one.
 */
JQK_EXPORT void jq_t2p_arrange(const int8_t *q, const int32_t *sums, const float *scales, int32_t blocks, int8_t *column) {
    for (int32_t b = 0; b < blocks; b++) {
        for (int s = 0; s < 4; s++) {
            for (int wd = 0; wd < 4; wd++) {
                const int8_t *src = q + 128 * b + 32 * wd + 8 * s;
                int8_t *dst = column + T2P_ACT * b + 64 * s + 16 * wd;
                memcpy(dst, src, 8);
                memcpy(dst + 8, src, 8);
            }
        }
    }
    sums_and_scales(sums, scales, blocks, column + (int64_t) blocks * T2P_ACT);
}

/*
 * The same for the TQ2_0 kernels (TQ2_ACT + 32 bytes per 128-block): per 256-block, slot s (0..3) =
 * the activations of weights 32s .. 32s+31, then 128 + 32s .. 128 + 32s + 31 (the weights of code
 * bytes 0..63 at bits 2s).
 */
JQK_EXPORT void jq_tq2_arrange(const int8_t *q, const int32_t *sums, const float *scales, int32_t blocks, int8_t *column) {
    for (int32_t b = 0; b < blocks / 2; b++) {
        for (int s = 0; s < 4; s++) {
            memcpy(column + 256 * b + 64 * s, q + 256 * b + 32 * s, 32);
            memcpy(column + 256 * b + 64 * s + 32, q + 256 * b + 128 + 32 * s, 32);
        }
    }
    sums_and_scales(sums, scales, blocks, column + (int64_t) blocks * TQ2_ACT);
}
