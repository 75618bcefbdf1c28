/* AVX-512 kernels (F, BW, VL, VNNI): vpdpbusd multiplies 2-bit codes (unsigned bytes) by int8
   activations and sums each four adjacent products into an int32 lane. */
#include <immintrin.h>
#include "jqk.h"

#define ISA(name) name##_avx512
#define VEC_I __m512i
#define VEC_F4 __m128
#define VEC_F4_ZERO _mm_setzero_ps()
#define VEC_F4_LOAD(p) _mm_load_ps(p)
#define VEC_F4_ADD(a, b) _mm_add_ps(a, b)
#define VEC_F4_STORE(p, v) _mm_storeu_ps(p, v)

/*
 * 16 times the sum of u * q over one T2P pair (64 code bytes = 4 words of 16) against a block's
 * arranged activations: per 128-bit word, int lanes 0, 1 hold row a's partial sums, lanes 2, 3 row
 * b's. Masks 0x03 and 0x30 take slots 0 and 2 (as u and 16u) from the codes and slots 1 and 3 from the
 * codes shifted by 2, so one shift serves four slots; the u and 16u sums meet at the end.
 */
static inline __attribute__((always_inline)) __m512i t2p_pair(const uint8_t *p, const int8_t *x) {
    const __m512i lo = _mm512_set1_epi8(0x03), hi = _mm512_set1_epi8(0x30);
    __m512i c = _mm512_loadu_si512(p), c2 = _mm512_srli_epi16(c, 2);
    __m512i a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(c, lo), _mm512_loadu_si512(x));
    __m512i b = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(c, hi), _mm512_loadu_si512(x + 128));
    a = _mm512_dpbusd_epi32(a, _mm512_and_si512(c2, lo), _mm512_loadu_si512(x + 64));
    b = _mm512_dpbusd_epi32(b, _mm512_and_si512(c2, hi), _mm512_loadu_si512(x + 192));
    return _mm512_add_epi32(_mm512_slli_epi32(a, 4), b);
}

/* [x w0+w2, x w1+w3, y w0+w2, y w1+w3] in 128-bit words. */
static inline __attribute__((always_inline)) __m512i fold_words(__m512i x, __m512i y) {
    return _mm512_add_epi32(_mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(1, 0, 1, 0)), _mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
}

/* Two fold_words results of blocks (0, 1) and (2, 3) -> one 128-bit word per block. */
static inline __attribute__((always_inline)) __m512i fold_pairs(__m512i s, __m512i t) {
    return _mm512_add_epi32(_mm512_shuffle_i32x4(s, t, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_i32x4(s, t, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* Per 128-bit word i (block i): [row 0, row 1, row 2, row 3] from pair 0's word (a, a, b, b) in t
   and pair 1's in u. */
static inline __attribute__((always_inline)) __m512i rows_of(__m512i t, __m512i u) {
    __m512 tf = _mm512_castsi512_ps(t), uf = _mm512_castsi512_ps(u);
    return _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(tf, uf, _MM_SHUFFLE(2, 0, 2, 0))),
                            _mm512_castps_si512(_mm512_shuffle_ps(tf, uf, _MM_SHUFFLE(3, 1, 3, 1))));
}

/* 16 times the sums of u * q of a chunk of four blocks against one column: lane 4i + r = block i, row r. */
static inline __attribute__((always_inline)) __m512i t2p_column(const uint8_t *const blk[4], const int8_t *const act[4]) {
    __m512i a0 = t2p_pair(blk[0] + T2P_CODES, act[0]), a1 = t2p_pair(blk[1] + T2P_CODES, act[1]);
    __m512i a2 = t2p_pair(blk[2] + T2P_CODES, act[2]), a3 = t2p_pair(blk[3] + T2P_CODES, act[3]);
    __m512i b0 = t2p_pair(blk[0] + T2P_CODES + T2P_PAIR, act[0]), b1 = t2p_pair(blk[1] + T2P_CODES + T2P_PAIR, act[1]);
    __m512i b2 = t2p_pair(blk[2] + T2P_CODES + T2P_PAIR, act[2]), b3 = t2p_pair(blk[3] + T2P_CODES + T2P_PAIR, act[3]);
    return rows_of(fold_pairs(fold_words(a0, a1), fold_words(a2, a3)), fold_pairs(fold_words(b0, b1), fold_words(b2, b3)));
}

/* The chunk against one or two columns (the second's code loads and masks are the first's, reused). */
static inline __attribute__((always_inline)) void t2p_chunk(const uint8_t *const blk[4], const int8_t *const act0[4],
                                                            const int8_t *const act1[4], int two, __m512i *r0, __m512i *r1) {
    *r0 = t2p_column(blk, act0);
    if (two) *r1 = t2p_column(blk, act1);
}

/* The shared formula's terms of a chunk: (float) dot * (d * xs), dot = r / 16 - sum(q), exact. */
static inline __attribute__((always_inline)) void t2p_terms(__m512i r, const uint8_t *const blk[4], const int32_t *sums4, const float *xs4, float *terms) {
    __m512i dot = _mm512_sub_epi32(_mm512_srai_epi32(r, 4), _mm512_loadu_si512(sums4));
    __m512 d = _mm512_cvtph_ps(_mm256_set_epi64x(jqk_load64(blk[3]), jqk_load64(blk[2]), jqk_load64(blk[1]), jqk_load64(blk[0])));
    _mm512_store_ps(terms, _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(d, _mm512_loadu_ps(xs4))));
}

static inline __attribute__((always_inline)) void t2p_dots(__m512i r, const int32_t *sums4, int32_t *dots) {
    _mm512_storeu_si512(dots, _mm512_sub_epi32(_mm512_srai_epi32(r, 4), _mm512_loadu_si512(sums4)));
}

#include "t2p_drivers.h"
