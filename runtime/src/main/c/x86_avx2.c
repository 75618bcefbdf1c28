/* AVX2 kernels (with FMA and F16C): vpmaddubsw multiplies 2-bit codes (unsigned bytes) by int8
   activations into 16-bit pair sums, vpmaddwd widens them to int32. */
#include <immintrin.h>
#include "jqk.h"

#define ISA(name) name##_avx2
/* A chunk's dots: 128-blocks 0, 1 in lo (lane 4k + r), blocks 2, 3 in hi. */
typedef struct { __m256i lo, hi; } dots16;
#define VEC_I dots16
#define VEC_F4 __m128
#define VEC_F4_ZERO _mm_setzero_ps()
#define VEC_F4_LOAD(p) _mm_load_ps(p)
#define VEC_F4_ADD(a, b) _mm_add_ps(a, b)
#define VEC_F4_STORE(p, v) _mm_storeu_ps(p, v)

/*
 * Sums of u * q of 2 x 32 code bytes (four 2-bit slots each) against four slot vectors of activations
 * (32 bytes for lo at x + 64s, 32 for hi at x + 64s + 32), as 16-bit pair sums: each lane sums at most
 * 8 products of 3 * 127, exact. addHi: hi's pair sums added into lo's (else kept apart in *hi16).
 */
static inline __attribute__((always_inline)) __m256i slots4(__m256i lo, __m256i hi, const int8_t *x, int addHi, __m256i *hi16) {
    const __m256i m = _mm256_set1_epi8(3);
    __m256i s = _mm256_setzero_si256(), t = _mm256_setzero_si256();
    for (int k = 0; k < 4; k++) {
        __m256i xl = _mm256_loadu_si256((const __m256i *) (x + 64 * k)), xh = _mm256_loadu_si256((const __m256i *) (x + 64 * k + 32));
        s = _mm256_add_epi16(s, _mm256_maddubs_epi16(_mm256_and_si256(lo, m), xl));
        t = _mm256_add_epi16(t, _mm256_maddubs_epi16(_mm256_and_si256(hi, m), xh));
        lo = _mm256_srli_epi16(lo, 2);
        hi = _mm256_srli_epi16(hi, 2);
    }
    if (addHi) return _mm256_add_epi16(s, t);
    *hi16 = t;
    return s;
}

static inline __attribute__((always_inline)) __m256i widen(__m256i pairs) { return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)); }

/* Per 128-bit half [a + a, b + b ...]: the two 128-bit halves of h0 and h1 -> [h0 lo + h0 hi | h1 lo + h1 hi]. */
static inline __attribute__((always_inline)) __m256i halves(__m256i h0, __m256i h1) {
    return _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20), _mm256_permute2x128_si256(h0, h1, 0x31));
}

/* The terms (float) dot * (d * xs), dot = r - sum(q), of a chunk whose fp16 scales (lane 4k + r) are dlo (k = 0, 1) and dhi. */
static inline __attribute__((always_inline)) void quad_terms(dots16 r, __m128i dlo, __m128i dhi, const int32_t *sums4, const float *xs4, float *terms) {
    __m256i lo = _mm256_sub_epi32(r.lo, _mm256_loadu_si256((const __m256i *) sums4));
    __m256i hi = _mm256_sub_epi32(r.hi, _mm256_loadu_si256((const __m256i *) (sums4 + 8)));
    _mm256_store_ps(terms, _mm256_mul_ps(_mm256_cvtepi32_ps(lo), _mm256_mul_ps(_mm256_cvtph_ps(dlo), _mm256_loadu_ps(xs4))));
    _mm256_store_ps(terms + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(hi), _mm256_mul_ps(_mm256_cvtph_ps(dhi), _mm256_loadu_ps(xs4 + 8))));
}

static inline __attribute__((always_inline)) void quad_dots(dots16 r, const int32_t *sums4, int32_t *dots) {
    _mm256_storeu_si256((__m256i *) dots, _mm256_sub_epi32(r.lo, _mm256_loadu_si256((const __m256i *) sums4)));
    _mm256_storeu_si256((__m256i *) (dots + 8), _mm256_sub_epi32(r.hi, _mm256_loadu_si256((const __m256i *) (sums4 + 8))));
}

/* ---------------------------------------------------------------- T2P */

/* One T2P pair against a block's arranged activations: per 128-bit half, lanes 0, 1 row a, 2, 3 row b. */
static inline __attribute__((always_inline)) __m256i t2p_pair(const uint8_t *p, const int8_t *x) {
    return widen(slots4(_mm256_loadu_si256((const __m256i *) p), _mm256_loadu_si256((const __m256i *) (p + 32)), x, 1, NULL));
}

/* Blocks k, k+1 of pair sums a (rows 0, 1) and b (rows 2, 3) -> [block k rows 0..3 | block k+1 rows 0..3]. */
static inline __attribute__((always_inline)) __m256i t2p_rows(__m256i a0, __m256i b0, __m256i a1, __m256i b1) {
    return halves(_mm256_hadd_epi32(a0, b0), _mm256_hadd_epi32(a1, b1));
}

static inline __attribute__((always_inline)) dots16 t2p_column(const uint8_t *const p[8], int m, const int8_t *a) {
    const int8_t *x1 = a + (m > 1 ? T2P_ACT : 0), *x2 = a + (m > 2 ? 2 * T2P_ACT : 0), *x3 = a + (m > 3 ? 3 * T2P_ACT : 0);
    dots16 r;
    r.lo = t2p_rows(t2p_pair(p[0] + T2P_CODES, a), t2p_pair(p[0] + T2P_CODES + T2P_PAIR, a),
                    t2p_pair(p[1] + T2P_CODES, x1), t2p_pair(p[1] + T2P_CODES + T2P_PAIR, x1));
    r.hi = t2p_rows(t2p_pair(p[2] + T2P_CODES, x2), t2p_pair(p[2] + T2P_CODES + T2P_PAIR, x2),
                    t2p_pair(p[3] + T2P_CODES, x3), t2p_pair(p[3] + T2P_CODES + T2P_PAIR, x3));
    return r;
}

static inline __attribute__((always_inline)) void t2p_chunk(const uint8_t *const p[8], int m, const int8_t *a0, const int8_t *a1,
                                                            int two, dots16 *r0, dots16 *r1) {
    *r0 = t2p_column(p, m, a0);
    if (two) *r1 = t2p_column(p, m, a1);
}

static inline __attribute__((always_inline)) void t2p_terms(dots16 r, const uint8_t *const p[8], const int32_t *sums4, const float *xs4, float *terms) {
    quad_terms(r, _mm_set_epi64x(jqk_load64(p[1]), jqk_load64(p[0])), _mm_set_epi64x(jqk_load64(p[3]), jqk_load64(p[2])), sums4, xs4, terms);
}

#define t2p_dots quad_dots
#define QUAD(name) t2p_##name
#define QUAD_EXPORT ISA(jq_t2p_multiply)
#define Q_ACT T2P_ACT
#include "quad_drivers.h"

/* ---------------------------------------------------------------- TQ2_0 */

/* Rows 0..3 of one 128-block: per 128-bit half partial sums of the four rows' int vectors -> [r0, r1, r2, r3] twice. */
static inline __attribute__((always_inline)) __m256i tq2_rows(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
    return _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1), _mm256_hadd_epi32(v2, v3));
}

static inline __attribute__((always_inline)) dots16 tq2_column(const uint8_t *const p[8], int m, const int8_t *a) {
    const int8_t *x1 = a + (m > 2 ? 2 * TQ2_ACT : 0);
    __m256i h[2][4][2];   /* [TQ2_0 block][row][half] */
    for (int b = 0; b < 2; b++) {
        for (int r = 0; r < 4; r++) {
            const uint8_t *c = p[2 * r + b];
            __m256i hi;
            __m256i lo = slots4(_mm256_loadu_si256((const __m256i *) c), _mm256_loadu_si256((const __m256i *) (c + 32)), b ? x1 : a, 0, &hi);
            h[b][r][0] = widen(lo);
            h[b][r][1] = widen(hi);
        }
    }
    dots16 r;
    r.lo = halves(tq2_rows(h[0][0][0], h[0][1][0], h[0][2][0], h[0][3][0]), tq2_rows(h[0][0][1], h[0][1][1], h[0][2][1], h[0][3][1]));
    r.hi = halves(tq2_rows(h[1][0][0], h[1][1][0], h[1][2][0], h[1][3][0]), tq2_rows(h[1][0][1], h[1][1][1], h[1][2][1], h[1][3][1]));
    return r;
}

static inline __attribute__((always_inline)) void tq2_chunk(const uint8_t *const p[8], int m, const int8_t *a0, const int8_t *a1,
                                                            int two, dots16 *r0, dots16 *r1) {
    *r0 = tq2_column(p, m, a0);
    if (two) *r1 = tq2_column(p, m, a1);
}

static inline __attribute__((always_inline)) void tq2_terms(dots16 r, const uint8_t *const p[8], const int32_t *sums4, const float *xs4, float *terms) {
    /* written out: as a loop over the rows, GCC kept it a loop with variable shifts (the TQ2_0 kernel at 0.6 of T2P's speed) */
    __m128i d = _mm_setr_epi16(jqk_load16(p[0] + TQ2_SCALE), jqk_load16(p[2] + TQ2_SCALE), jqk_load16(p[4] + TQ2_SCALE), jqk_load16(p[6] + TQ2_SCALE),
                               jqk_load16(p[1] + TQ2_SCALE), jqk_load16(p[3] + TQ2_SCALE), jqk_load16(p[5] + TQ2_SCALE), jqk_load16(p[7] + TQ2_SCALE));
    quad_terms(r, _mm_unpacklo_epi64(d, d), _mm_unpackhi_epi64(d, d), sums4, xs4, terms);
}

#define tq2_dots quad_dots
#define QUAD(name) tq2_##name
#define QUAD_EXPORT ISA(jq_tq2_multiply)
#define Q_ACT TQ2_ACT
#include "quad_drivers.h"

/* ---------------------------------------------------------------- float chains (chains.h) */

#define FV __m256
#define FV_LANES 8
#define FV_ZERO _mm256_setzero_ps()
#define FV_LOAD(p) _mm256_loadu_ps(p)
#define FV_STORE(p, v) _mm256_storeu_ps(p, v)
#define FV_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define FV_I8(p) _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *) (p))))
#define FV_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (p)))
#define FV_MUL(a, b) _mm256_mul_ps(a, b)
#define FV_SUB(a, b) _mm256_sub_ps(a, b)
#define FV_SET(v) _mm256_set1_ps(v)
#include "chains.h"

/* ---------------------------------------------------------------- attention */

/*
 * lane_sum of eight chain sets at once, set j's in lane j: the sets transposed in registers (lane c of
 * every set in r[c]), then r[0], r[1], … added in order, as lane_sum adds one set's lanes.
 */
static inline __attribute__((always_inline)) __m256 lane_sums8(const __m256 set[8]) {
    __m256 t[8], u[8], r[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(set[i], set[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(set[i], set[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
    __m256 sum = _mm256_setzero_ps();
    for (int c = 0; c < 8; c++) sum = _mm256_add_ps(sum, r[c]);
    return sum;
}

/* Lanes [0, n) set: att_ones + 8 - n. */
static const int32_t att_ones[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
#define FV_ADD(a, b) _mm256_add_ps(a, b)
#define ATT_MASK(n) _mm256_loadu_si256((const __m256i *) (att_ones + 8 - (n)))
#define ATT_TAIL_LOAD(p, n) _mm256_maskload_ps(p, ATT_MASK(n))
#define ATT_TAIL_STORE(p, v, n) _mm256_maskstore_ps(p, ATT_MASK(n), v)
#define ATT_INDEX __m256i
#define ATT_STRIDES(stride) _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(stride))
#define ATT_GATHER(p, strides, n) _mm256_mask_i32gather_ps(_mm256_setzero_ps(), p, strides, _mm256_castsi256_ps(ATT_MASK(n)), 4)
#define ATT_LANE_SUMS(set) lane_sums8(set)
#define ATT_PASS 1
#include "attention.h"

/* ---------------------------------------------------------------- weightlets */

/* Exact: vpmaddubsw on |v| and xq with v's sign (pair sums at most 2 · 127 · 127), widened by vpmaddwd. */
#define WL_IACC __m256i
#define WL_IACC_ZERO _mm256_setzero_si256()
#define WL_IACC_SUM(acc) wl_sum(acc)
static inline __attribute__((always_inline)) int64_t wl_sum(__m256i acc) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}
static inline __attribute__((always_inline)) __m256i wl_dot(__m256i acc, const int8_t *v, const int8_t *xq) {
    for (int i = 0; i < 128; i += 32) {
        __m256i w = _mm256_load_si256((const __m256i *) (v + i)), x = _mm256_loadu_si256((const __m256i *) (xq + i));
        acc = _mm256_add_epi32(acc, widen(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w))));
    }
    return acc;
}

#include "weightlet.h"

/* ---------------------------------------------------------------- llama.cpp's block types and float16 */

#include "gguf_rows.h"
#include "gguf_dots.h"
