/* AVX-512 kernels (F, BW, VL, VNNI): vpdpbusd multiplies 2-bit codes (unsigned bytes) by int8
   activations and sums each four adjacent products into an int32 lane. Compiled twice: as it is
   (jq_*_avx512) and with JQK_GFNI (jq_*_avx512gfni), whose ternary and weightlet unpackers use GFNI's byte maps. */
#include <immintrin.h>
#include <stdlib.h>
#include "jqk.h"

#ifdef JQK_GFNI
#define ISA(name) name##_avx512gfni
#else
#define ISA(name) name##_avx512
#endif
#define VEC_I __m512i
#define VEC_F4 __m128
#define VEC_F4_ZERO _mm_setzero_ps()
#define VEC_F4_LOAD(p) _mm_load_ps(p)
#define VEC_F4_ADD(a, b) _mm_add_ps(a, b)
#define VEC_F4_STORE(p, v) _mm_storeu_ps(p, v)

#ifdef JQK_GFNI
/* Slot s (bits 2s, 2s + 1) of every code byte brought down to bits 0, 1 by one GF(2) affine map. */
#define SLOT_MAP(s) _mm512_set1_epi64((long long) ((1ULL << (2 * (s))) << 56 | (1ULL << (2 * (s) + 1)) << 48))
/* slots4 returns 2^SUM_SHIFT times the sums */
#define SUM_SHIFT 0
/*
 * The sums of u * q of 64 code bytes (four 2-bit slots each) against four slot vectors of activations
 * x[0..3]: each slot one vgf2p8affineqb, no masks and no shifts (eight instructions where the masks take
 * eleven; the T2P kernel 1.3 times as fast, bench/RESULTS.md). Each int lane sums four adjacent bytes' products.
 */
static inline __attribute__((always_inline)) __m512i slots4(__m512i c, const int8_t *x0, const int8_t *x1, const int8_t *x2, const int8_t *x3) {
    __m512i a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_gf2p8affine_epi64_epi8(c, SLOT_MAP(0), 0), _mm512_loadu_si512(x0));
    a = _mm512_dpbusd_epi32(a, _mm512_gf2p8affine_epi64_epi8(c, SLOT_MAP(1), 0), _mm512_loadu_si512(x1));
    a = _mm512_dpbusd_epi32(a, _mm512_gf2p8affine_epi64_epi8(c, SLOT_MAP(2), 0), _mm512_loadu_si512(x2));
    return _mm512_dpbusd_epi32(a, _mm512_gf2p8affine_epi64_epi8(c, SLOT_MAP(3), 0), _mm512_loadu_si512(x3));
}
#else
#define SUM_SHIFT 4
/*
 * 16 times the sums of u * q of 64 code bytes (four 2-bit slots each) against four slot vectors of
 * activations x[0..3]: masks 0x03 and 0x30 take slots 0 and 2 (as u and 16u) from the codes and slots
 * 1 and 3 from the codes shifted by 2, so one shift serves four slots; the u and 16u sums meet at the
 * end. Each int lane sums four adjacent bytes' products.
 */
static inline __attribute__((always_inline)) __m512i slots4(__m512i c, const int8_t *x0, const int8_t *x1, const int8_t *x2, const int8_t *x3) {
    const __m512i lo = _mm512_set1_epi8(0x03), hi = _mm512_set1_epi8(0x30);
    __m512i c2 = _mm512_srli_epi16(c, 2);
    __m512i a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(c, lo), _mm512_loadu_si512(x0));
    __m512i b = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(c, hi), _mm512_loadu_si512(x2));
    a = _mm512_dpbusd_epi32(a, _mm512_and_si512(c2, lo), _mm512_loadu_si512(x1));
    b = _mm512_dpbusd_epi32(b, _mm512_and_si512(c2, hi), _mm512_loadu_si512(x3));
    return _mm512_add_epi32(_mm512_slli_epi32(a, 4), b);
}
#endif

/* [x q0+q2, x q1+q3, y q0+q2, y q1+q3] in 128-bit quarters. */
static inline __attribute__((always_inline)) __m512i fold_alternate(__m512i x, __m512i y) {
    return _mm512_add_epi32(_mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(1, 0, 1, 0)), _mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
}

/* [x q0+q1, x q2+q3, y q0+q1, y q2+q3] in 128-bit quarters. */
static inline __attribute__((always_inline)) __m512i fold_adjacent(__m512i x, __m512i y) {
    return _mm512_add_epi32(_mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* Per 128-bit quarter: [t l0+l1, t l2+l3, u l0+l1, u l2+l3]. */
static inline __attribute__((always_inline)) __m512i sum_lane_pairs(__m512i t, __m512i u) {
    __m512 tf = _mm512_castsi512_ps(t), uf = _mm512_castsi512_ps(u);
    return _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(tf, uf, _MM_SHUFFLE(2, 0, 2, 0))),
                            _mm512_castps_si512(_mm512_shuffle_ps(tf, uf, _MM_SHUFFLE(3, 1, 3, 1))));
}

/* The terms (float) dot * (d * xs), dot = r / 2^SUM_SHIFT - sum(q), of a chunk whose 16 fp16 scales (lane 4k + r) are d16. */
static inline __attribute__((always_inline)) void quad_terms(__m512i r, __m256i d16, const int32_t *sums4, const float *xs4, float *terms) {
    __m512i dot = _mm512_sub_epi32(_mm512_srai_epi32(r, SUM_SHIFT), _mm512_loadu_si512(sums4));
    _mm512_store_ps(terms, _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(_mm512_cvtph_ps(d16), _mm512_loadu_ps(xs4))));
}

static inline __attribute__((always_inline)) void quad_dots(__m512i r, const int32_t *sums4, int32_t *dots) {
    _mm512_storeu_si512(dots, _mm512_sub_epi32(_mm512_srai_epi32(r, SUM_SHIFT), _mm512_loadu_si512(sums4)));
}

/* ---------------------------------------------------------------- T2P */

/* One T2P pair (64 code bytes = 4 words of 16): per 128-bit word, lanes 0, 1 row a, lanes 2, 3 row b. */
static inline __attribute__((always_inline)) __m512i t2p_pair(const uint8_t *p, const int8_t *x) {
    return slots4(_mm512_loadu_si512(p), x, x + 64, x + 128, x + 192);
}

/* 2^SUM_SHIFT times the sums of a chunk of four T2P blocks against one column: lane 4k + r = block k, row r. */
static inline __attribute__((always_inline)) __m512i t2p_column(const uint8_t *const p[8], int m, const int8_t *a) {
    const int8_t *x1 = a + (m > 1 ? T2P_ACT : 0), *x2 = a + (m > 2 ? 2 * T2P_ACT : 0), *x3 = a + (m > 3 ? 3 * T2P_ACT : 0);
    __m512i a0 = t2p_pair(p[0] + T2P_CODES, a), a1 = t2p_pair(p[1] + T2P_CODES, x1);
    __m512i a2 = t2p_pair(p[2] + T2P_CODES, x2), a3 = t2p_pair(p[3] + T2P_CODES, x3);
    __m512i b0 = t2p_pair(p[0] + T2P_CODES + T2P_PAIR, a), b1 = t2p_pair(p[1] + T2P_CODES + T2P_PAIR, x1);
    __m512i b2 = t2p_pair(p[2] + T2P_CODES + T2P_PAIR, x2), b3 = t2p_pair(p[3] + T2P_CODES + T2P_PAIR, x3);
    /* fold_alternate: per block, words 0+2 and 1+3; fold_adjacent: one quarter per block; then rows (a, a, b, b) -> rows 0..3 */
    return sum_lane_pairs(fold_adjacent(fold_alternate(a0, a1), fold_alternate(a2, a3)), fold_adjacent(fold_alternate(b0, b1), fold_alternate(b2, b3)));
}

static inline __attribute__((always_inline)) void t2p_chunk(const uint8_t *const p[8], int m, const int8_t *a0, const int8_t *a1,
                                                            int two, __m512i *r0, __m512i *r1) {
    *r0 = t2p_column(p, m, a0);
    if (two) *r1 = t2p_column(p, m, a1);
}

static inline __attribute__((always_inline)) void t2p_terms(__m512i r, const uint8_t *const p[8], const int32_t *sums4, const float *xs4, float *terms) {
    quad_terms(r, _mm256_set_epi64x(jqk_load64(p[3]), jqk_load64(p[2]), jqk_load64(p[1]), jqk_load64(p[0])), sums4, xs4, terms);
}

#define t2p_dots quad_dots
#define QUAD(name) t2p_##name
#define QUAD_EXPORT ISA(jq_t2p_multiply)
#define Q_ACT T2P_ACT
#include "quad_drivers.h"

/* ---------------------------------------------------------------- TQ2_0 */

/* 2^SUM_SHIFT times the sums of one row's TQ2_0 block (lanes 0..7 its first 128 weights, 8..15 the second). */
static inline __attribute__((always_inline)) __m512i tq2_block(const uint8_t *p, const int8_t *x) {
    return slots4(_mm512_loadu_si512(p), x, x + 64, x + 128, x + 192);
}

/* 2^SUM_SHIFT times the sums of a chunk (two TQ2_0 blocks of four rows) against one column: lane 4k + r = 128-block k, row r. */
static inline __attribute__((always_inline)) __m512i tq2_column(const uint8_t *const p[8], int m, const int8_t *a) {
    const int8_t *x1 = a + (m > 2 ? 2 * TQ2_ACT : 0);
    __m512i v0 = tq2_block(p[0], a), v1 = tq2_block(p[1], x1), v2 = tq2_block(p[2], a), v3 = tq2_block(p[3], x1);
    __m512i v4 = tq2_block(p[4], a), v5 = tq2_block(p[5], x1), v6 = tq2_block(p[6], a), v7 = tq2_block(p[7], x1);
    /* quarters of fold_adjacent(v_2r, v_2r+1): (row r, 128-blocks 0, 1, 2, 3) partial sums of 4 lanes */
    return sum_lane_pairs(sum_lane_pairs(fold_adjacent(v0, v1), fold_adjacent(v2, v3)), sum_lane_pairs(fold_adjacent(v4, v5), fold_adjacent(v6, v7)));
}

static inline __attribute__((always_inline)) void tq2_chunk(const uint8_t *const p[8], int m, const int8_t *a0, const int8_t *a1,
                                                            int two, __m512i *r0, __m512i *r1) {
    *r0 = tq2_column(p, m, a0);
    if (two) *r1 = tq2_column(p, m, a1);
}

/* Lane 4k + r: row r's scale of TQ2_0 block k / 2. */
static inline __attribute__((always_inline)) void tq2_terms(__m512i r, const uint8_t *const p[8], const int32_t *sums4, const float *xs4, float *terms) {
    /* written out: as a loop over the rows, GCC kept it a loop with variable shifts (the TQ2_0 kernel at 0.6 of T2P's speed) */
    __m128i d = _mm_setr_epi16(jqk_load16(p[0] + TQ2_SCALE), jqk_load16(p[2] + TQ2_SCALE), jqk_load16(p[4] + TQ2_SCALE), jqk_load16(p[6] + TQ2_SCALE),
                               jqk_load16(p[1] + TQ2_SCALE), jqk_load16(p[3] + TQ2_SCALE), jqk_load16(p[5] + TQ2_SCALE), jqk_load16(p[7] + TQ2_SCALE));
    quad_terms(r, _mm256_permute4x64_epi64(_mm256_castsi128_si256(d), _MM_SHUFFLE(1, 1, 0, 0)), sums4, xs4, terms);
}

#define tq2_dots quad_dots
#define QUAD(name) tq2_##name
#define QUAD_EXPORT ISA(jq_tq2_multiply)
#define Q_ACT TQ2_ACT
#include "quad_drivers.h"

#include "ternary_tiles_avx512.h"

/* ---------------------------------------------------------------- float chains (chains.h) */

#define FV __m512
#define FV_LANES 16
#define FV_ZERO _mm512_setzero_ps()
#define FV_LOAD(p) _mm512_loadu_ps(p)
#define FV_STORE(p, v) _mm512_storeu_ps(p, v)
#define FV_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define FV_I8(p) _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *) (p))))
#define FV_F16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (p)))
#define FV_MUL(a, b) _mm512_mul_ps(a, b)
#define FV_SUB(a, b) _mm512_sub_ps(a, b)
#define FV_SET(v) _mm512_set1_ps(v)
#define F16_TILE_ROWS 6
#include "chains.h"

/*
 * lane_sum of sixteen chain sets at once, set j's in lane j: the sets transposed in registers (four
 * stages of shuffles leave lane c of every set in r[c]), then r[0], r[1], … added in order, as lane_sum
 * adds one set's lanes, where lane_sum spends sixteen dependent scalar additions on each set: the F16
 * prefill tile makes a result every 128 multiply-adds at 2,048 columns (bench/RESULTS.md).
 */
static inline __attribute__((always_inline)) __m512 lane_sums16(const __m512 set[16]) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(set[i], set[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(set[i], set[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
    __m512 sum = _mm512_setzero_ps();
    for (int c = 0; c < 16; c++) sum = _mm512_add_ps(sum, r[c]);
    return sum;
}

/*
 * lane_sum of four chain sets at once, set j's in lane j: the sets transposed (lane c of every set in one
 * 128-bit quarter), the quarters then added in lane order, as lane_sum adds one set's lanes.
 */
static inline __attribute__((always_inline)) __m128 lane_sums4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
    __m512 t0 = _mm512_unpacklo_ps(a0, a1), t1 = _mm512_unpackhi_ps(a0, a1);
    __m512 t2 = _mm512_unpacklo_ps(a2, a3), t3 = _mm512_unpackhi_ps(a2, a3);
    /* u[i]'s quarter q holds lane 4q + i of a0..a3 */
    __m512 u[4] = {_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2))),
                   _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2))),
                   _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3))),
                   _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)))};
    __m128 sum = _mm_setzero_ps();
    for (int i = 0; i < 4; i++) sum = _mm_add_ps(sum, _mm512_castps512_ps128(u[i]));
    for (int i = 0; i < 4; i++) sum = _mm_add_ps(sum, _mm512_extractf32x4_ps(u[i], 1));
    for (int i = 0; i < 4; i++) sum = _mm_add_ps(sum, _mm512_extractf32x4_ps(u[i], 2));
    for (int i = 0; i < 4; i++) sum = _mm_add_ps(sum, _mm512_extractf32x4_ps(u[i], 3));
    return sum;
}

/* The F16 tile's 24 results, sums[4j + i] = lane_sum(acc[j][i]): rows 0-3 as one lane_sums16, rows 4-5
   with eight zero sets as another. */
#define F16_TILE_SUMS(acc, sums)                                                                                     \
    do {                                                                                                             \
        const __m512 z = _mm512_setzero_ps();                                                                        \
        const __m512 lo[16] = {acc[0][0], acc[0][1], acc[0][2], acc[0][3], acc[1][0], acc[1][1], acc[1][2], acc[1][3], \
                               acc[2][0], acc[2][1], acc[2][2], acc[2][3], acc[3][0], acc[3][1], acc[3][2], acc[3][3]}; \
        const __m512 hi[16] = {acc[4][0], acc[4][1], acc[4][2], acc[4][3], acc[5][0], acc[5][1], acc[5][2], acc[5][3], \
                               z, z, z, z, z, z, z, z};                                                              \
        _mm512_storeu_ps(sums, lane_sums16(lo));                                                                     \
        _mm512_storeu_ps(sums + 16, lane_sums16(hi));                                                                \
    } while (0)

/* ---------------------------------------------------------------- attention */

#define FV_ADD(a, b) _mm512_add_ps(a, b)
#define ATT_MASK(n) ((__mmask16) ((1u << (n)) - 1))
#define ATT_TAIL_LOAD(p, n) _mm512_maskz_loadu_ps(ATT_MASK(n), p)
#define ATT_TAIL_STORE(p, v, n) _mm512_mask_storeu_ps(p, ATT_MASK(n), v)
#define ATT_INDEX __m512i
#define ATT_STRIDES(stride) _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(stride))
#define ATT_GATHER(p, strides, n) _mm512_mask_i32gather_ps(_mm512_setzero_ps(), ATT_MASK(n), strides, p, 4)
#define ATT_LANE_SUMS(set) lane_sums16(set)
#define ATT_PASS 4
#include "attention.h"
#include "softmax_avx512.h"

/* ---------------------------------------------------------------- weightlets */

/* Exact: vpdpbusd on v + 128 (v with its sign bit flipped, an unsigned byte) and xq, minus vpdpbusd on
   128 and xq. */
#define WL_IACC __m512i
#define WL_IACC_ZERO _mm512_setzero_si512()
#define WL_IACC_SUM(acc) ((int64_t) _mm512_reduce_add_epi32(acc))
static inline __attribute__((always_inline)) __m512i wl_dot(__m512i acc, const int8_t *v, const int8_t *xq) {
    const __m512i k128 = _mm512_set1_epi8((char) 0x80);
    __m512i x0 = _mm512_loadu_si512(xq), x1 = _mm512_loadu_si512(xq + 64);
    acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(_mm512_load_si512(v), k128), x0);
    acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(_mm512_load_si512(v + 64), k128), x1);
    return _mm512_sub_epi32(acc, _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), k128, x0), k128, x1));
}

#ifdef JQK_GFNI
/*
 * A B-bit weightlet group unpacked by GF(2) affine maps (GFNI vgf2p8affineqb: each output bit of a byte
 * is the parity of a chosen set of its input bits, XOR a constant), one map per plane and half group.
 * Below 8 bits the int8 weight v = 2f - (2^B - 1) is an affine function of the field's bits: v's bit 0
 * is 1, bit m + 1 is f's bit m (m < B - 1), and bits B..7 are the complement of f's top bit (the sign).
 * So each plane's slot bits go straight to their places in v and the planes' results are XORed, the
 * constant folded into the first map; at 8 bits the maps place the nibbles and 127 is subtracted. A
 * 128-bit lane of a half group holds one stripe, and its matrix (a qword, twice) picks that stripe's slot.
 */

/* Field bit i of slot t of a b-bit plane: its input bit in the plane's byte (masked: only for i < b). */
#define WL_IN(b, t, i) ((8 - (b) * ((t) + 1) + (i)) & 7)
/* The matrix bits sending input bit `in` (field bit f) to its places in v: byte 7 - o of a matrix is output bit o. */
#define WL_OUT(B, f, in)                                                                     \
    ((B) == 8 ? (1ULL << (in)) << (8 * ((7 - (f)) & 7))                                      \
     : (f) < (B) - 1 ? (1ULL << (in)) << (8 * ((6 - (f)) & 7))                               \
     : (1ULL << (in)) * (0x0101010101010101ULL >> (8 * ((B) & 7))))
#define WL_TERM(B, b, shift, t, i) ((i) < (b) ? WL_OUT(B, (shift) + (i), WL_IN(b, t, i)) : 0)
/* The matrix of stripe s for a b-bit plane holding field bits shift .. shift + b - 1. */
#define WL_MATRIX(B, b, shift, s)                                                                              \
    (WL_TERM(B, b, shift, (s) % (8 / (b)), 0) | WL_TERM(B, b, shift, (s) % (8 / (b)), 1)                    \
     | WL_TERM(B, b, shift, (s) % (8 / (b)), 2) | WL_TERM(B, b, shift, (s) % (8 / (b)), 3))
/* Lane q of half h holds stripe 4h + q. */
#define WL_MATRICES(B, b, shift, h)                                                                            \
    _mm512_set_epi64(WL_MATRIX(B, b, shift, 4 * (h) + 3), WL_MATRIX(B, b, shift, 4 * (h) + 3),               \
                     WL_MATRIX(B, b, shift, 4 * (h) + 2), WL_MATRIX(B, b, shift, 4 * (h) + 2),               \
                     WL_MATRIX(B, b, shift, 4 * (h) + 1), WL_MATRIX(B, b, shift, 4 * (h) + 1),               \
                     WL_MATRIX(B, b, shift, 4 * (h)), WL_MATRIX(B, b, shift, 4 * (h)))

/* The blocks of a b-bit plane (at byte offset) that half h's four stripes read, one per lane. */
static inline __attribute__((always_inline)) __m512i wl_blocks(const uint8_t *g, int b, int offset, int h) {
    if (b == 1) return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *) (g + offset)));
    if (b == 2) return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *) (g + offset + 16 * h)));
    return _mm512_permutexvar_epi64(_mm512_set_epi64(3, 2, 3, 2, 1, 0, 1, 0),
                                    _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *) (g + offset + 32 * h))));
}

/* Plane (width b at byte offset, field bits from shift) of half h of the group at g mapped to its bits of v, XOR constant c. */
#define WL_MAP(g, B, b, offset, shift, h, c) _mm512_gf2p8affine_epi64_epi8(wl_blocks(g, b, offset, h), WL_MATRICES(B, b, shift, h), c)

/*
 * Half h of a B-bit group as int8 weights v, or with flip = 0x80 as v + 128 (v with its sign bit flipped,
 * an unsigned byte for vpdpbusd), the flip folded into the maps' constant.
 */
static inline __attribute__((always_inline)) __m512i wl_half(const uint8_t *g, int B, int h, int flip) {
    /* constant 0x01 | 0xFF << B: v's bit 0 and its complemented sign bits */
    switch (B) {
        case 1: return WL_MAP(g, 1, 1, 0, 0, h, 0xFF ^ flip);
        case 2: return WL_MAP(g, 2, 2, 0, 0, h, 0xFD ^ flip);
        case 3: return _mm512_xor_si512(WL_MAP(g, 3, 1, 0, 2, h, 0xF9 ^ flip), WL_MAP(g, 3, 2, 16, 0, h, 0));
        case 4: return WL_MAP(g, 4, 4, 0, 0, h, 0xF1 ^ flip);
        case 5: return _mm512_xor_si512(WL_MAP(g, 5, 1, 0, 4, h, 0xE1 ^ flip), WL_MAP(g, 5, 4, 16, 0, h, 0));
        case 6: return _mm512_xor_si512(WL_MAP(g, 6, 2, 0, 4, h, 0xC1 ^ flip), WL_MAP(g, 6, 4, 32, 0, h, 0));
        case 7: return _mm512_ternarylogic_epi64(WL_MAP(g, 7, 1, 0, 6, h, 0x81 ^ flip), WL_MAP(g, 7, 2, 16, 4, h, 0), WL_MAP(g, 7, 4, 48, 0, h, 0), 0x96);
        default: {
            __m512i f = _mm512_or_si512(WL_MAP(g, 8, 4, 0, 4, h, 0), WL_MAP(g, 8, 4, 64, 0, h, 0));
            return flip ? _mm512_add_epi8(f, _mm512_set1_epi8(1)) : _mm512_sub_epi8(f, _mm512_set1_epi8(127));
        }
    }
}

static inline __attribute__((always_inline)) void wl_group4_of(const uint8_t *g, int B, int8_t *v) {
    _mm512_storeu_si512(v, wl_half(g, B, 0, 0));
    _mm512_storeu_si512(v + 64, wl_half(g, B, 1, 0));
}

/*
 * NPU decode's sums without the int8 buffer: the count whole B-bit groups from g unpacked as v + 128 and
 * multiplied with xq in vpdpbusd, added to acc; the caller takes 128 · Σ xq back once for every row.
 */
static __m512i wl_udots(const uint8_t *g, int B, int count, const int8_t *xq, __m512i acc) {
#define WL_UDOTS_OF(b)                                                                                          \
    for (int i = 0; i < count; i++) {                                                                           \
        const uint8_t *gi = g + 16 * (b) * i;                                                                   \
        acc = _mm512_dpbusd_epi32(acc, wl_half(gi, b, 0, 0x80), _mm512_loadu_si512(xq + 128 * i));              \
        acc = _mm512_dpbusd_epi32(acc, wl_half(gi, b, 1, 0x80), _mm512_loadu_si512(xq + 128 * i + 64));         \
    }                                                                                                           \
    break
    switch (B) {
        case 1: WL_UDOTS_OF(1);
        case 2: WL_UDOTS_OF(2);
        case 3: WL_UDOTS_OF(3);
        case 4: WL_UDOTS_OF(4);
        case 5: WL_UDOTS_OF(5);
        case 6: WL_UDOTS_OF(6);
        case 7: WL_UDOTS_OF(7);
        default: WL_UDOTS_OF(8);
    }
#undef WL_UDOTS_OF
    return acc;
}
#define WL_UDOTS wl_udots
#else
/*
 * A B-bit weightlet group unpacked four stripes at a time (the Java unpacker's half-group kernel,
 * VectorWeightletUnpacker): per plane, the blocks four stripes need repeated across the four 128-bit
 * lanes, each lane shifted by its own slot (a variable shift of 16-bit lanes: a byte's slot comes down
 * whole, the mask drops what the byte above shifted in), masked, and shifted to its place in the field.
 */
static inline __attribute__((always_inline)) __m512i wl_plane4(const uint8_t *g, int b, int offset, int shift, int h) {
    __m512i blocks, count;
    if (b == 1) {
        blocks = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *) (g + offset)));
        count = h == 0 ? _mm512_set_epi64(0x0004000400040004, 0x0004000400040004, 0x0005000500050005, 0x0005000500050005,
                                          0x0006000600060006, 0x0006000600060006, 0x0007000700070007, 0x0007000700070007)
                       : _mm512_set_epi64(0, 0, 0x0001000100010001, 0x0001000100010001,
                                          0x0002000200020002, 0x0002000200020002, 0x0003000300030003, 0x0003000300030003);
    } else if (b == 2) {
        blocks = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *) (g + offset + 16 * h)));
        count = _mm512_set_epi64(0, 0, 0x0002000200020002, 0x0002000200020002,
                                 0x0004000400040004, 0x0004000400040004, 0x0006000600060006, 0x0006000600060006);
    } else {
        blocks = _mm512_permutexvar_epi64(_mm512_set_epi64(3, 2, 3, 2, 1, 0, 1, 0),
                                          _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *) (g + offset + 32 * h))));
        count = _mm512_set_epi64(0, 0, 0x0004000400040004, 0x0004000400040004, 0, 0, 0x0004000400040004, 0x0004000400040004);
    }
    __m512i slot = _mm512_and_si512(_mm512_srlv_epi16(blocks, count), _mm512_set1_epi8((char) ((1 << b) - 1)));
    return shift ? _mm512_slli_epi16(slot, shift) : slot;
}

static inline __attribute__((always_inline)) void wl_group4_of(const uint8_t *g, int B, int8_t *v) {
    for (int h = 0; h < 2; h++) {
        __m512i f;
        switch (B) {
            case 1: f = wl_plane4(g, 1, 0, 0, h); break;
            case 2: f = wl_plane4(g, 2, 0, 0, h); break;
            case 3: f = _mm512_or_si512(wl_plane4(g, 1, 0, 2, h), wl_plane4(g, 2, 16, 0, h)); break;
            case 4: f = wl_plane4(g, 4, 0, 0, h); break;
            case 5: f = _mm512_or_si512(wl_plane4(g, 1, 0, 4, h), wl_plane4(g, 4, 16, 0, h)); break;
            case 6: f = _mm512_or_si512(wl_plane4(g, 2, 0, 4, h), wl_plane4(g, 4, 32, 0, h)); break;
            case 7: f = _mm512_or_si512(_mm512_or_si512(wl_plane4(g, 1, 0, 6, h), wl_plane4(g, 2, 16, 4, h)), wl_plane4(g, 4, 48, 0, h)); break;
            default: f = _mm512_or_si512(wl_plane4(g, 4, 0, 4, h), wl_plane4(g, 4, 64, 0, h)); break;
        }
        __m512i w = B == 8 ? _mm512_sub_epi8(f, _mm512_set1_epi8(127)) : _mm512_sub_epi8(_mm512_add_epi8(f, f), _mm512_set1_epi8((char) ((1 << B) - 1)));
        _mm512_storeu_si512(v + 64 * h, w);
    }
}
#endif

static void wl_group4(const uint8_t *g, int B, int8_t *v) {
    switch (B) {
        case 1: wl_group4_of(g, 1, v); break;
        case 2: wl_group4_of(g, 2, v); break;
        case 3: wl_group4_of(g, 3, v); break;
        case 4: wl_group4_of(g, 4, v); break;
        case 5: wl_group4_of(g, 5, v); break;
        case 6: wl_group4_of(g, 6, v); break;
        case 7: wl_group4_of(g, 7, v); break;
        default: wl_group4_of(g, 8, v); break;
    }
}
#define WL_GROUP wl_group4
#define WL_GROUP_OF wl_group4_of

#include "weightlet.h"
#include "weightlet_lanes_avx512.h"

/* ---------------------------------------------------------------- llama.cpp's block types and float16 */

#include "gguf_rows.h"
/* GCC 12 vectorizes the plain rows' int8 x int8 sums into vpdpbusd, which takes one side as unsigned: wrong sums. */
#define GG_ROW_ATTRIBUTES __attribute__((optimize("no-tree-vectorize")))
#define GG_VEC_Q8_0
#define GG_VEC_Q4_0
#define GG_VEC_Q4_K
#define GG_VEC_Q5_K
#define GG_VEC_Q6_K
#include "gguf_dots.h"
#include "gguf_dots_avx512.h"
