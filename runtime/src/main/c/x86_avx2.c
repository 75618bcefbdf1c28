/* AVX2 kernels (with FMA and F16C): vpmaddubsw multiplies 2-bit codes (unsigned bytes) by int8
   activations into 16-bit pair sums, vpmaddwd widens them to int32. */
#include <immintrin.h>
#include "jqk.h"

#define ISA(name) name##_avx2
/* A chunk's dots: blocks 0, 1 in lo (lane 4i + r), blocks 2, 3 in hi. */
typedef struct { __m256i lo, hi; } dots16;
#define VEC_I dots16
#define VEC_F4 __m128
#define VEC_F4_ZERO _mm_setzero_ps()
#define VEC_F4_LOAD(p) _mm_load_ps(p)
#define VEC_F4_ADD(a, b) _mm_add_ps(a, b)
#define VEC_F4_STORE(p, v) _mm_storeu_ps(p, v)

/* One T2P pair against one block's arranged activations: per 128-bit word w (lo: words 0, 1; hi:
   words 2, 3 added in), int lanes 0, 1 hold row a's partial dots, 2, 3 row b's. Each 16-bit lane sums
   at most 8 products of 3 · 127: exact. */
static inline __attribute__((always_inline)) __m256i t2p_pair(__m256i lo, __m256i hi, const int8_t *act) {
    const __m256i m = _mm256_set1_epi8(3);
    __m256i s = _mm256_setzero_si256();
    for (int k = 0; k < 4; k++) {
        __m256i xl = _mm256_loadu_si256((const __m256i *) (act + 64 * k)), xh = _mm256_loadu_si256((const __m256i *) (act + 64 * k + 32));
        s = _mm256_add_epi16(s, _mm256_maddubs_epi16(_mm256_and_si256(lo, m), xl));
        s = _mm256_add_epi16(s, _mm256_maddubs_epi16(_mm256_and_si256(hi, m), xh));
        lo = _mm256_srli_epi16(lo, 2);
        hi = _mm256_srli_epi16(hi, 2);
    }
    return _mm256_madd_epi16(s, _mm256_set1_epi16(1));
}

/* Blocks i, i+1 of pair sums a (rows 0, 1) and b (rows 2, 3) -> [block i rows 0..3 | block i+1 rows 0..3]. */
static inline __attribute__((always_inline)) __m256i rows_of(__m256i a0, __m256i b0, __m256i a1, __m256i b1) {
    __m256i h0 = _mm256_hadd_epi32(a0, b0), h1 = _mm256_hadd_epi32(a1, b1);
    return _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20), _mm256_permute2x128_si256(h0, h1, 0x31));
}

/* Exact dots of a chunk of four blocks against one or two columns (see x86_avx512.c). */
static inline __attribute__((always_inline)) void t2p_chunk(const uint8_t *const blk[4], const int8_t *const act0[4],
                                                            const int8_t *const act1[4], int two, dots16 *r0, dots16 *r1) {
#define PAIR(i, pair, act) t2p_pair(_mm256_loadu_si256((const __m256i *) (blk[i] + T2P_CODES + (pair) * T2P_PAIR)), \
                                    _mm256_loadu_si256((const __m256i *) (blk[i] + T2P_CODES + (pair) * T2P_PAIR + 32)), act[i])
    r0->lo = rows_of(PAIR(0, 0, act0), PAIR(0, 1, act0), PAIR(1, 0, act0), PAIR(1, 1, act0));
    r0->hi = rows_of(PAIR(2, 0, act0), PAIR(2, 1, act0), PAIR(3, 0, act0), PAIR(3, 1, act0));
    if (two) {
        r1->lo = rows_of(PAIR(0, 0, act1), PAIR(0, 1, act1), PAIR(1, 0, act1), PAIR(1, 1, act1));
        r1->hi = rows_of(PAIR(2, 0, act1), PAIR(2, 1, act1), PAIR(3, 0, act1), PAIR(3, 1, act1));
    }
#undef PAIR
}

/* The shared formula's terms of a chunk: (float) dot * (d * xs), dot = r - sum(q), exact. */
static inline __attribute__((always_inline)) void t2p_terms(dots16 r, const uint8_t *const blk[4], const int32_t *sums4, const float *xs4, float *terms) {
    __m256 dlo = _mm256_cvtph_ps(_mm_set_epi64x(jqk_load64(blk[1]), jqk_load64(blk[0])));
    __m256 dhi = _mm256_cvtph_ps(_mm_set_epi64x(jqk_load64(blk[3]), jqk_load64(blk[2])));
    __m256i lo = _mm256_sub_epi32(r.lo, _mm256_loadu_si256((const __m256i *) sums4));
    __m256i hi = _mm256_sub_epi32(r.hi, _mm256_loadu_si256((const __m256i *) (sums4 + 8)));
    _mm256_store_ps(terms, _mm256_mul_ps(_mm256_cvtepi32_ps(lo), _mm256_mul_ps(dlo, _mm256_loadu_ps(xs4))));
    _mm256_store_ps(terms + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(hi), _mm256_mul_ps(dhi, _mm256_loadu_ps(xs4 + 8))));
}

static inline __attribute__((always_inline)) void t2p_dots(dots16 r, const int32_t *sums4, int32_t *dots) {
    _mm256_storeu_si256((__m256i *) dots, _mm256_sub_epi32(r.lo, _mm256_loadu_si256((const __m256i *) sums4)));
    _mm256_storeu_si256((__m256i *) (dots + 8), _mm256_sub_epi32(r.hi, _mm256_loadu_si256((const __m256i *) (sums4 + 8))));
}

#include "t2p_drivers.h"
