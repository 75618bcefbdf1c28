/*
 * AVX-512 VNNI kernels for gguf_dots.h's arithmetic, four rows at a time against one column (every
 * column of a batch in turn, the four rows' bytes staying in L1). The codes meet the activations in
 * vpdpbusd (unsigned codes times int8: Q4_0's nibbles, Q8_0's codes with the sign bit flipped, the
 * offsets taken back with the activations' block sums) or, where a sub-block scale weighs the codes
 * (the K-quants), vpmaddubsw into 16-bit pair sums (exact: at most 2 · 63 · 127) weighed by the scales
 * in vpdpwssd, as ggml-cpu's x86 kernels do. Then each row's terms are added in block order.
 */

/* Lane 4k + r: the sum of the four lanes of 128-bit quarter k of a_r. */
static inline __attribute__((always_inline)) __m512i gg_quarters4(__m512i a0, __m512i a1, __m512i a2, __m512i a3) {
    return sum_lane_pairs(sum_lane_pairs(a0, a1), sum_lane_pairs(a2, a3));
}

/* Lane r: the sum of all lanes of a_r. */
static inline __attribute__((always_inline)) __m128i gg_totals4(__m512i a0, __m512i a1, __m512i a2, __m512i a3) {
    __m512i u = gg_quarters4(a0, a1, a2, a3);
    __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(u), _mm512_extracti64x4_epi64(u, 1));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* Adds the four quarters of t (lane 4k + r: row r's term of block k) to acc, block by block. */
static inline __attribute__((always_inline)) __m128 gg_add_quarters(__m128 acc, __m512 t) {
    acc = _mm_add_ps(acc, _mm512_castps512_ps128(t));
    acc = _mm_add_ps(acc, _mm512_extractf32x4_ps(t, 1));
    acc = _mm_add_ps(acc, _mm512_extractf32x4_ps(t, 2));
    return _mm_add_ps(acc, _mm512_extractf32x4_ps(t, 3));
}

/* Lane 4k + r = v[k] (k < 4). */
static inline __attribute__((always_inline)) __m512i gg_spread4(__m128i v) {
    return _mm512_permutexvar_epi32(_mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0), _mm512_castsi128_si512(v));
}

/*
 * Bytes ahead that the decode kernels prefetch, every cache line, into L2 (prefetcht1), in each row's own
 * stream: a row's data goes on in the same row of the next four, the row this lane of four reads next.
 * Prefetched into L1 the four rows' streams read memory at 7-11 GB/s on one thread, into L2 at 15-23,
 * ggml-cpu's one-row kernels' speed; and a plain "8 KiB past the current block" fell inside the four
 * rows being read where a row is 4-8 KiB long (ffn_down's 5,632 weights), at half that (bench/RESULTS.md).
 */
#define GG_AHEAD 8192

/* Where the prefetch of a lane of four rows stands: `at` bytes into the row `wrap` bytes past the current one. */
typedef struct {
    int64_t wrap, at;
} gg_ahead;

static inline __attribute__((always_inline)) gg_ahead gg_ahead_start(int64_t rowBytes) {
    gg_ahead a = {GG_AHEAD / rowBytes * 4 * rowBytes, GG_AHEAD % rowBytes};
    return a;
}

/* Prefetches the next `bytes` of each of the four rows' streams, GG_AHEAD ahead, and moves on. */
static inline __attribute__((always_inline)) void gg_ahead_step(const uint8_t *const rp[4], gg_ahead *a, int bytes, int64_t rowBytes) {
    for (int j = 0; j < 4; j++)
        for (int l = 0; l < bytes; l += 64) JQK_PREFETCH_L2(rp[j] + a->wrap + a->at + l);
    a->at += bytes;
    if (a->at >= rowBytes) {
        a->at -= rowBytes;
        a->wrap += 4 * rowBytes;
    }
}

/*
 * Q4_0 and Q8_0, four blocks of four rows per step: lane 4k + r holds row r's dot of block k, its fp16
 * scale (gg_block_scales), the column's block scale and sum.
 */
#ifdef JQK_GFNI
/* A byte's low or high nibble as a byte, by one GF(2) affine map (vgf2p8affineqb): no shift, no mask. */
#define GG_NIBBLE_LO(v) _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(0x0102040800000000LL), 0)
#define GG_NIBBLE_HI(v) _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(0x1020408000000000LL), 0)
#else
#define GG_NIBBLE_LO(v) _mm512_and_si512(v, _mm512_set1_epi8(15))
#define GG_NIBBLE_HI(v) _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(15))
#endif

static inline __attribute__((always_inline)) __m512i gg_q4_0_row(const uint8_t *p, __m512i xl, __m512i xh) {
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *) (p + 2)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *) (p + 2 + Q4_0_BYTES)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *) (p + 2 + 2 * Q4_0_BYTES)), 2);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *) (p + 2 + 3 * Q4_0_BYTES)), 3);
    __m512i acc = _mm512_dpbusd_epi32(_mm512_setzero_si512(), GG_NIBBLE_LO(v), xl);
    return _mm512_dpbusd_epi32(acc, GG_NIBBLE_HI(v), xh);
}

static inline __attribute__((always_inline)) __m512i gg_q8_0_row(const uint8_t *p, __m512i x01, __m512i x23) {
    const __m512i k128 = _mm512_set1_epi8((char) 0x80);
    __m512i v01 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *) (p + 2))),
                                     _mm256_loadu_si256((const __m256i *) (p + 2 + Q8_0_BYTES)), 1);
    __m512i v23 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *) (p + 2 + 2 * Q8_0_BYTES))),
                                     _mm256_loadu_si256((const __m256i *) (p + 2 + 3 * Q8_0_BYTES)), 1);
    __m512i a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(v01, k128), x01);
    __m512i b = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(v23, k128), x23);
    return fold_adjacent(a, b);
}

/*
 * The fp16 scales of a step's four blocks of the four rows as floats, lane 4k + r = row r's block k: each
 * row's four words picked (idx, words 0-3) from two 64-byte loads of its blocks, at `at` and `at + second`,
 * then the rows interleaved. A gather of them took half of Q8_0's decode time from L2 (bench/RESULTS.md).
 */
static inline __attribute__((always_inline)) __m512 gg_block_scales(const uint8_t *const rp[4], int64_t at, int second, __m128i idx) {
    __m128i w[4];
    for (int r = 0; r < 4; r++) {
        w[r] = _mm512_castsi512_si128(_mm512_permutex2var_epi16(_mm512_loadu_si512(rp[r] + at), _mm512_castsi128_si512(idx),
                                                                _mm512_loadu_si512(rp[r] + at + second)));
    }
    __m128i a = _mm_unpacklo_epi16(w[0], w[1]), b = _mm_unpacklo_epi16(w[2], w[3]);
    return _mm512_cvtph_ps(_mm256_set_m128i(_mm_unpackhi_epi32(a, b), _mm_unpacklo_epi32(a, b)));
}

#define GG_Q32_QUAD(type, TYPE, SHIFT)                                                                                 \
    static void gg_##type##_quad(const uint8_t *const rp[4], int64_t rowBytes, int32_t blocks, const int8_t *q,       \
                                 const float *xd, const int16_t *sums, float out[4]) {                                \
        __m128 acc = _mm_setzero_ps();                                                                                \
        gg_ahead ahead = gg_ahead_start(rowBytes);                                                                    \
        int32_t b = 0;                                                                                                \
        for (; b + 4 <= blocks; b += 4) {                                                                             \
            const int64_t at = (int64_t) b * TYPE##_BYTES;                                                            \
            gg_ahead_step(rp, &ahead, 4 * TYPE##_BYTES, rowBytes);                                                    \
            __m512i x0 = _mm512_loadu_si512(q + 32 * b), x1 = _mm512_loadu_si512(q + 32 * b + 64), dots;              \
            if (TYPE##_BYTES == Q4_0_BYTES) {                                                                         \
                __m512i xl = _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(2, 0, 2, 0));                                   \
                __m512i xh = _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(3, 1, 3, 1));                                   \
                dots = gg_quarters4(gg_##type##_row(rp[0] + at, xl, xh), gg_##type##_row(rp[1] + at, xl, xh),         \
                                    gg_##type##_row(rp[2] + at, xl, xh), gg_##type##_row(rp[3] + at, xl, xh));        \
            } else {                                                                                                  \
                dots = gg_quarters4(gg_##type##_row(rp[0] + at, x0, x1), gg_##type##_row(rp[1] + at, x0, x1),         \
                                    gg_##type##_row(rp[2] + at, x0, x1), gg_##type##_row(rp[3] + at, x0, x1));        \
            }                                                                                                         \
            __m128i s = _mm_madd_epi16(_mm_loadu_si128((const __m128i *) (sums + 2 * b)), _mm_set1_epi16(1));         \
            dots = _mm512_sub_epi32(dots, _mm512_slli_epi32(gg_spread4(s), SHIFT));                                   \
            __m512 d = TYPE##_BYTES == Q4_0_BYTES ? gg_block_scales(rp, at, 8, _mm_set_epi16(0, 0, 0, 0, 55, 46, 9, 0))  \
                                                  : gg_block_scales(rp, at, 68, _mm_set_epi16(0, 0, 0, 0, 49, 32, 17, 0)); \
            __m512 x = _mm512_castsi512_ps(gg_spread4(_mm_castps_si128(_mm_loadu_ps(xd + b))));                       \
            acc = gg_add_quarters(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(dots), _mm512_mul_ps(d, x)));                 \
        }                                                                                                             \
        _mm_storeu_ps(out, acc);                                                                                      \
        for (int j = 0; j < 4; j++) out[j] = gg_##type##_from(rp[j], b, blocks, q, xd, sums, out[j]);                \
    }

GG_Q32_QUAD(q4_0, Q4_0, 3)
GG_Q32_QUAD(q8_0, Q8_0, 7)

/* The 6-bit scales (int16 lanes 0..7) and minimums (8..15) of a Q4_K / Q5_K superblock (ggml's kmask unpacking). */
static inline __attribute__((always_inline)) __m256i gg_k_scales(const uint8_t *p) {
    const uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
    uint32_t u[4];
    memcpy(u, p + 4, 12);
    u[3] = ((u[2] >> 4) & kmask2) | (((u[1] >> 6) & kmask3) << 4);
    const uint32_t uaux = u[1] & kmask1;
    u[1] = (u[2] & kmask2) | (((u[0] >> 6) & kmask3) << 4);
    u[2] = uaux;
    u[0] &= kmask1;
    return _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *) u));
}

/* int16 lanes 0..15 = s[a], 16..31 = s[b]. */
#define GG_PAIR(a, b) _mm512_set_epi32(b * 0x10001, b * 0x10001, b * 0x10001, b * 0x10001, b * 0x10001, b * 0x10001, b * 0x10001, b * 0x10001, \
                                       a * 0x10001, a * 0x10001, a * 0x10001, a * 0x10001, a * 0x10001, a * 0x10001, a * 0x10001, a * 0x10001)

/*
 * A Q4_K (five = 0) or Q5_K superblock's 256 codes as bytes: n[i] holds sub-blocks s = 2i - i % 2 ... as
 * pairs (0,2) (1,3) (4,6) (5,7); Q5_K's bit 4 of sub-block s's codes is bit s of qh[l].
 */
static inline __attribute__((always_inline)) void gg_k_codes(const uint8_t *p, int five, __m512i n[4]) {
    const uint8_t *qs = p + (five ? 48 : 16);
    __m512i q0 = _mm512_loadu_si512(qs), q1 = _mm512_loadu_si512(qs + 64);
    n[0] = GG_NIBBLE_LO(q0);
    n[1] = GG_NIBBLE_HI(q0);
    n[2] = GG_NIBBLE_LO(q1);
    n[3] = GG_NIBBLE_HI(q1);
    if (five) {
        __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *) (p + 16)));
        const __m512i sixteen = _mm512_set1_epi8(16);
        n[0] = _mm512_mask_add_epi8(n[0], _mm512_test_epi8_mask(qh, _mm512_inserti64x4(_mm512_set1_epi8(0x01), _mm256_set1_epi8(0x04), 1)), n[0], sixteen);
        n[1] = _mm512_mask_add_epi8(n[1], _mm512_test_epi8_mask(qh, _mm512_inserti64x4(_mm512_set1_epi8(0x02), _mm256_set1_epi8(0x08), 1)), n[1], sixteen);
        n[2] = _mm512_mask_add_epi8(n[2], _mm512_test_epi8_mask(qh, _mm512_inserti64x4(_mm512_set1_epi8(0x10), _mm256_set1_epi8(0x40), 1)), n[2], sixteen);
        n[3] = _mm512_mask_add_epi8(n[3], _mm512_test_epi8_mask(qh, _mm512_inserti64x4(_mm512_set1_epi8(0x20), _mm256_set1_epi8((char) 0x80), 1)), n[3], sixteen);
    }
}

/* One row's Q4_K (five = 0) or Q5_K superblock: the 16 lanes of sum_s sc_s * (codes . q) and the 4 of sum_s m_s * sum(q). */
static inline __attribute__((always_inline)) void gg_k_row(const uint8_t *p, int five, const __m512i x[4], __m128i s32, __m512i *dot, __m128i *mdot) {
    __m256i ms = gg_k_scales(p);
    __m512i sc = _mm512_castsi256_si512(ms);
    *mdot = _mm_madd_epi16(_mm256_extracti128_si256(ms, 1), s32);
    __m512i n[4];
    gg_k_codes(p, five, n);
    __m512i acc = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_maddubs_epi16(n[0], x[0]), _mm512_permutexvar_epi16(GG_PAIR(0, 2), sc));
    acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(n[1], x[1]), _mm512_permutexvar_epi16(GG_PAIR(1, 3), sc));
    acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(n[2], x[2]), _mm512_permutexvar_epi16(GG_PAIR(4, 6), sc));
    *dot = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(n[3], x[3]), _mm512_permutexvar_epi16(GG_PAIR(5, 7), sc));
}

#define GG_K_QUAD(type, TYPE, FIVE)                                                                                    \
    static void gg_##type##_quad(const uint8_t *const rp[4], int64_t rowBytes, int32_t blocks, const int8_t *q,       \
                                 const float *xd, const int16_t *sums, float out[4]) {                                \
        __m128 acc = _mm_setzero_ps();                                                                                \
        gg_ahead ahead = gg_ahead_start(rowBytes);                                                                    \
        for (int32_t b = 0; b < blocks; b++) {                                                                        \
            const int64_t at = (int64_t) b * TYPE##_BYTES;                                                            \
            gg_ahead_step(rp, &ahead, TYPE##_BYTES, rowBytes);                                                        \
            const int8_t *xb = q + 256 * b;                                                                           \
            __m512i z0 = _mm512_loadu_si512(xb), z1 = _mm512_loadu_si512(xb + 64);                                    \
            __m512i z2 = _mm512_loadu_si512(xb + 128), z3 = _mm512_loadu_si512(xb + 192);                            \
            const __m512i x[4] = {_mm512_shuffle_i64x2(z0, z1, _MM_SHUFFLE(1, 0, 1, 0)),                              \
                                  _mm512_shuffle_i64x2(z0, z1, _MM_SHUFFLE(3, 2, 3, 2)),                              \
                                  _mm512_shuffle_i64x2(z2, z3, _MM_SHUFFLE(1, 0, 1, 0)),                              \
                                  _mm512_shuffle_i64x2(z2, z3, _MM_SHUFFLE(3, 2, 3, 2))};                             \
            __m256i s16 = _mm256_loadu_si256((const __m256i *) (sums + 16 * b));                                      \
            __m128i s32 = _mm_hadd_epi16(_mm256_castsi256_si128(s16), _mm256_extracti128_si256(s16, 1));              \
            __m512i d0, d1, d2, d3;                                                                                   \
            __m128i m0, m1, m2, m3;                                                                                   \
            gg_k_row(rp[0] + at, FIVE, x, s32, &d0, &m0);                                                             \
            gg_k_row(rp[1] + at, FIVE, x, s32, &d1, &m1);                                                             \
            gg_k_row(rp[2] + at, FIVE, x, s32, &d2, &m2);                                                             \
            gg_k_row(rp[3] + at, FIVE, x, s32, &d3, &m3);                                                             \
            __m128i dots = gg_totals4(d0, d1, d2, d3);                                                                \
            __m128i mdots = _mm_hadd_epi32(_mm_hadd_epi32(m0, m1), _mm_hadd_epi32(m2, m3));                           \
            uint32_t w[4];                                                                                            \
            for (int j = 0; j < 4; j++) memcpy(&w[j], rp[j] + at, 4);                                                 \
            __m256 dd = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) w));                                        \
            __m128 lo = _mm256_castps256_ps128(dd), hi = _mm256_extractf128_ps(dd, 1);                                \
            __m128 xs = _mm_set1_ps(xd[b]);                                                                           \
            __m128 d = _mm_mul_ps(_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)), xs);                               \
            __m128 dm = _mm_mul_ps(_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)), xs);                              \
            acc = _mm_add_ps(acc, _mm_sub_ps(_mm_mul_ps(_mm_cvtepi32_ps(dots), d), _mm_mul_ps(_mm_cvtepi32_ps(mdots), dm))); \
        }                                                                                                             \
        _mm_storeu_ps(out, acc);                                                                                      \
    }

GG_K_QUAD(q4_k, Q4_K, 0)
GG_K_QUAD(q5_k, Q5_K, 1)

/* int16 lanes of 128-bit quarter k = s[4t + 8h + k]: the scales of the 16-weight groups of Q6_K half h's codes t (low or high nibbles). */
#define GG_Q6_SC(h, t) _mm512_set_epi32((8 * h + 4 * t + 3) * 0x10001, (8 * h + 4 * t + 3) * 0x10001, (8 * h + 4 * t + 3) * 0x10001, (8 * h + 4 * t + 3) * 0x10001, \
                                        (8 * h + 4 * t + 2) * 0x10001, (8 * h + 4 * t + 2) * 0x10001, (8 * h + 4 * t + 2) * 0x10001, (8 * h + 4 * t + 2) * 0x10001, \
                                        (8 * h + 4 * t + 1) * 0x10001, (8 * h + 4 * t + 1) * 0x10001, (8 * h + 4 * t + 1) * 0x10001, (8 * h + 4 * t + 1) * 0x10001, \
                                        (8 * h + 4 * t) * 0x10001, (8 * h + 4 * t) * 0x10001, (8 * h + 4 * t) * 0x10001, (8 * h + 4 * t) * 0x10001)

/* One row's Q6_K superblock: 16 lanes summing to sum_s sc_s * ((codes - 32) . q). */
static inline __attribute__((always_inline)) __m512i gg_q6_k_row(const uint8_t *p, const int8_t *xb, __m256i s16) {
    const __m512i m = _mm512_set1_epi8(15), top = _mm512_set1_epi8(0x30);
    __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *) (p + 192)));
    __m512i sc = _mm512_castsi256_si512(sc16);
    /* codes' high bits: low half (k = 0) bits 0-1 up by 4, high half (k = 1) bits 2-3 up by 2; for the high nibbles (k = 2, 3) bits 4-5 in place, 6-7 down by 2 */
    const __m512i up = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1), down = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    __m512i acc = _mm512_setzero_si512();
    for (int h = 0; h < 2; h++) {
        __m512i ql = _mm512_loadu_si512(p + 64 * h);
        __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *) (p + 128 + 32 * h)));
        __m512i lo = _mm512_or_si512(_mm512_and_si512(ql, m), _mm512_and_si512(_mm512_sllv_epi16(qh, up), top));
        __m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m), _mm512_and_si512(_mm512_srlv_epi16(qh, down), top));
        acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(lo, _mm512_loadu_si512(xb + 128 * h)),
                                  _mm512_permutexvar_epi16(h ? GG_Q6_SC(1, 0) : GG_Q6_SC(0, 0), sc));
        acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(hi, _mm512_loadu_si512(xb + 128 * h + 64)),
                                  _mm512_permutexvar_epi16(h ? GG_Q6_SC(1, 1) : GG_Q6_SC(0, 1), sc));
    }
    /* the codes' offset 32: 32 * sum_s sc_s * sum(q of s) */
    __m512i offset = _mm512_zextsi256_si512(_mm256_madd_epi16(sc16, s16));
    return _mm512_sub_epi32(acc, _mm512_slli_epi32(offset, 5));
}

static void gg_q6_k_quad(const uint8_t *const rp[4], int64_t rowBytes, int32_t blocks, const int8_t *q, const float *xd,
                         const int16_t *sums, float out[4]) {
    __m128 acc = _mm_setzero_ps();
    gg_ahead ahead = gg_ahead_start(rowBytes);
    for (int32_t b = 0; b < blocks; b++) {
        const int64_t at = (int64_t) b * Q6_K_BYTES;
        gg_ahead_step(rp, &ahead, Q6_K_BYTES, rowBytes);
        const int8_t *xb = q + 256 * b;
        __m256i s16 = _mm256_loadu_si256((const __m256i *) (sums + 16 * b));
        __m128i dots = gg_totals4(gg_q6_k_row(rp[0] + at, xb, s16), gg_q6_k_row(rp[1] + at, xb, s16),
                                  gg_q6_k_row(rp[2] + at, xb, s16), gg_q6_k_row(rp[3] + at, xb, s16));
        __m128 d = _mm_cvtph_ps(_mm_set_epi16(0, 0, 0, 0, (short) jqk_load16(rp[3] + at + 208), (short) jqk_load16(rp[2] + at + 208),
                                              (short) jqk_load16(rp[1] + at + 208), (short) jqk_load16(rp[0] + at + 208)));
        acc = _mm_add_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(dots), _mm_mul_ps(d, _mm_set1_ps(xd[b]))));
    }
    _mm_storeu_ps(out, acc);
}

/*
 * Prefill: sixteen columns per 512-bit register, one lane each, so that a row's dot of a block lands in
 * the lanes with no horizontal sum (as ggml's repacked GEMM kernels have rows in lanes; here the
 * activations are the ones rearranged, once per call). Per group of four weights: the row's four codes
 * broadcast to every lane (vpermd), times the sixteen columns' four activations (vpdpbusd). Each lane
 * then adds its terms in block order: gguf_dots.h's formula, bit for bit.
 */
#define GG_TILE 16
/* Batches of at least this many columns take the tiles (a tile with fewer columns leaves lanes idle). */
#define GG_TILE_MIN 8

/* A tile's columns [t0, t0 + n), zeros past them: X[16g + c] = column c's activations 4g .. 4g + 3, XD[16b + c] its
   block scales, and S its sums: per block of 32 (pairs = 0), or in int16 pairs per 32 (pairs = 32) or per 16 (pairs = 16). */
static void gg_tile_arrange(int32_t cols, int32_t B, int pairs, const int8_t *q, const float *d, const int16_t *sums, int32_t t0, int32_t n,
                            int32_t *X, float *XD, int32_t *S) {
    for (int32_t g = 0; g < cols / 4; g++) {
        for (int c = 0; c < GG_TILE; c++) {
            int32_t v = 0;
            if (c < n) memcpy(&v, q + (int64_t) (t0 + c) * cols + 4 * g, 4);
            X[GG_TILE * g + c] = v;
        }
    }
    for (int32_t b = 0; b < cols / B; b++) {
        for (int c = 0; c < GG_TILE; c++) XD[GG_TILE * b + c] = c < n ? d[(int64_t) (t0 + c) * (cols / B) + b] : 0.0f;
    }
    int32_t per = pairs == 0 ? 32 : 2 * pairs;
    for (int32_t j = 0; j < cols / per; j++) {
        for (int c = 0; c < GG_TILE; c++) {
            int32_t v = 0;
            if (c < n) {
                const int16_t *s16 = sums + (int64_t) (t0 + c) * (cols / 16);
                if (pairs == 0) v = s16[2 * j] + s16[2 * j + 1];
                else if (pairs == 32) v = (uint16_t) (s16[4 * j] + s16[4 * j + 1]) | (uint32_t) (uint16_t) (s16[4 * j + 2] + s16[4 * j + 3]) << 16;
                else v = (uint16_t) s16[2 * j] | (uint32_t) (uint16_t) s16[2 * j + 1] << 16;
            }
            S[GG_TILE * j + c] = v;
        }
    }
}

/* Dword g of v in every lane. */
#define GG_BCAST(v, g) _mm512_permutexvar_epi32(_mm512_set1_epi32(g), v)

/* Sum over groups g0 .. g0 + count - 1 (4 or 8) of dword (base + g) of plane times X's group g0 + g: two chains of
   vpdpbusd (one would wait out each one's latency). */
static inline __attribute__((always_inline)) __m512i gg_groups(__m512i plane, int base, int count, const int32_t *X, int32_t g0) {
    __m512i t0 = _mm512_setzero_si512(), t1 = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int g = 0; g < count; g += 2) {
        t0 = _mm512_dpbusd_epi32(t0, GG_BCAST(plane, base + g), _mm512_loadu_si512(X + GG_TILE * (g0 + g)));
        t1 = _mm512_dpbusd_epi32(t1, GG_BCAST(plane, base + g + 1), _mm512_loadu_si512(X + GG_TILE * (g0 + g + 1)));
    }
    return _mm512_add_epi32(t0, t1);
}

/* gg_groups for two rows' planes at once, each load of X serving both. */
static inline __attribute__((always_inline)) void gg_groups2(__m512i p0, __m512i p1, int base, int count, const int32_t *X, int32_t g0, __m512i dots[2]) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, b0 = a0, b1 = a0;
#pragma GCC unroll 4
    for (int g = 0; g < count; g += 2) {
        __m512i x0 = _mm512_loadu_si512(X + GG_TILE * (g0 + g)), x1 = _mm512_loadu_si512(X + GG_TILE * (g0 + g + 1));
        a0 = _mm512_dpbusd_epi32(a0, GG_BCAST(p0, base + g), x0);
        a1 = _mm512_dpbusd_epi32(a1, GG_BCAST(p0, base + g + 1), x1);
        b0 = _mm512_dpbusd_epi32(b0, GG_BCAST(p1, base + g), x0);
        b1 = _mm512_dpbusd_epi32(b1, GG_BCAST(p1, base + g + 1), x1);
    }
    dots[0] = _mm512_add_epi32(a0, a1);
    dots[1] = _mm512_add_epi32(b0, b1);
}

/* A Q4_0 block's 32 codes as bytes (low nibbles, then high), or a Q8_0 block's as v + 128. */
static inline __attribute__((always_inline)) __m512i gg_codes_q4_0(const uint8_t *p) {
    const __m128i m = _mm_set1_epi8(15);
    __m128i v = _mm_loadu_si128((const __m128i *) (p + 2));
    return _mm512_castsi256_si512(_mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m)));
}

static inline __attribute__((always_inline)) __m512i gg_codes_q8_0(const uint8_t *p) {
    return _mm512_castsi256_si512(_mm256_xor_si256(_mm256_loadu_si256((const __m256i *) (p + 2)), _mm256_set1_epi8((char) 0x80)));
}

/* Two rows against a tile: lane c of out[j] = row j's output for column c; each load of X serves both rows (at 5,632
   columns a tile's X outgrows L1, and one row at a time ran Q4_0's prefill 1.4 times as slow). */
#define GG_TILE_PAIR(type, TYPE, SHIFT)                                                                                          \
    static inline __attribute__((always_inline)) void gg_tile2_##type(const uint8_t *r0, const uint8_t *r1, int32_t blocks,    \
                                                                      const int32_t *X, const float *XD, const int32_t *S, __m512 out[2]) { \
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();                                                           \
        for (int32_t b = 0; b < blocks; b++) {                                                                                   \
            const uint8_t *p0 = r0 + TYPE##_BYTES * b, *p1 = r1 + TYPE##_BYTES * b;                                              \
            __m512i dots[2];                                                                                                     \
            gg_groups2(gg_codes_##type(p0), gg_codes_##type(p1), 0, 8, X, 8 * b, dots);                                          \
            __m512i s = _mm512_slli_epi32(_mm512_loadu_si512(S + GG_TILE * b), SHIFT);                                           \
            __m512 xd = _mm512_loadu_ps(XD + GG_TILE * b);                                                                       \
            acc0 = _mm512_add_ps(acc0, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(dots[0], s)), _mm512_mul_ps(_mm512_set1_ps(gg_half(p0)), xd))); \
            acc1 = _mm512_add_ps(acc1, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(dots[1], s)), _mm512_mul_ps(_mm512_set1_ps(gg_half(p1)), xd))); \
        }                                                                                                                        \
        out[0] = acc0;                                                                                                           \
        out[1] = acc1;                                                                                                           \
    }
GG_TILE_PAIR(q4_0, Q4_0, 3)
GG_TILE_PAIR(q8_0, Q8_0, 7)

/* Q4_K (five = 0) and Q5_K: sub-block s's codes are dwords 8 ((s / 2) % 2) .. + 7 of plane n[2 (s / 4) + s % 2]. */
static inline __attribute__((always_inline)) __m512 gg_tile_k(const uint8_t *row, int five, int32_t blocks, const int32_t *X, const float *XD, const int32_t *S) {
    const int bytes = five ? Q5_K_BYTES : Q4_K_BYTES;
    __m512 acc = _mm512_setzero_ps();
    for (int32_t b = 0; b < blocks; b++) {
        const uint8_t *p = row + (int64_t) bytes * b;
        uint8_t sm[16];
        _mm_storeu_si128((__m128i *) sm, _mm256_cvtepi16_epi8(gg_k_scales(p)));
        __m512i n[4];
        gg_k_codes(p, five, n);
        __m512i dot = _mm512_setzero_si512(), mdot = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int s = 0; s < 8; s++) {
            __m512i t = gg_groups(n[2 * (s / 4) + s % 2], 8 * ((s / 2) % 2), 8, X, 64 * b + 8 * s);
            dot = _mm512_add_epi32(dot, _mm512_mullo_epi32(t, _mm512_set1_epi32(sm[s])));
        }
        for (int i = 0; i < 4; i++) {
            mdot = _mm512_dpwssd_epi32(mdot, _mm512_loadu_si512(S + GG_TILE * (4 * b + i)), _mm512_set1_epi32(sm[8 + 2 * i] | sm[9 + 2 * i] << 16));
        }
        __m512 xd = _mm512_loadu_ps(XD + GG_TILE * b);
        __m512 t = _mm512_sub_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(_mm512_set1_ps(gg_half(p)), xd)),
                                 _mm512_mul_ps(_mm512_cvtepi32_ps(mdot), _mm512_mul_ps(_mm512_set1_ps(gg_half(p + 2)), xd)));
        acc = _mm512_add_ps(acc, t);
    }
    return acc;
}

static inline __attribute__((always_inline)) __m512 gg_tile_q4_k(const uint8_t *row, int32_t blocks, const int32_t *X, const float *XD, const int32_t *S) {
    return gg_tile_k(row, 0, blocks, X, XD, S);
}

static inline __attribute__((always_inline)) __m512 gg_tile_q5_k(const uint8_t *row, int32_t blocks, const int32_t *X, const float *XD, const int32_t *S) {
    return gg_tile_k(row, 1, blocks, X, XD, S);
}

/* Q6_K: sub-block s = 8h + 2k + half (16 weights) is dwords 8 (k % 2) + 4 half .. + 3 of half h's plane for k / 2. */
static inline __attribute__((always_inline)) __m512 gg_tile_q6_k(const uint8_t *row, int32_t blocks, const int32_t *X, const float *XD, const int32_t *S) {
    const __m512i m = _mm512_set1_epi8(15), top = _mm512_set1_epi8(0x30);
    const __m512i up = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1), down = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    __m512 acc = _mm512_setzero_ps();
    for (int32_t b = 0; b < blocks; b++) {
        const uint8_t *p = row + (int64_t) Q6_K_BYTES * b;
        const int8_t *sc = (const int8_t *) p + 192;
        __m512i planes[2][2];
        for (int h = 0; h < 2; h++) {
            __m512i ql = _mm512_loadu_si512(p + 64 * h);
            __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *) (p + 128 + 32 * h)));
            planes[h][0] = _mm512_or_si512(_mm512_and_si512(ql, m), _mm512_and_si512(_mm512_sllv_epi16(qh, up), top));
            planes[h][1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m), _mm512_and_si512(_mm512_srlv_epi16(qh, down), top));
        }
        __m512i dot = _mm512_setzero_si512(), off = _mm512_setzero_si512();
#pragma GCC unroll 16
        for (int s = 0; s < 16; s++) {
            int h = s / 8, k = (s % 8) / 2, half = s % 2;
            __m512i t = gg_groups(planes[h][k / 2], 8 * (k % 2) + 4 * half, 4, X, 64 * b + 4 * s);
            dot = _mm512_add_epi32(dot, _mm512_mullo_epi32(t, _mm512_set1_epi32(sc[s])));
        }
        for (int i = 0; i < 8; i++) {
            off = _mm512_dpwssd_epi32(off, _mm512_loadu_si512(S + GG_TILE * (8 * b + i)),
                                      _mm512_set1_epi32((uint16_t) sc[2 * i] | (uint32_t) (uint16_t) sc[2 * i + 1] << 16));
        }
        dot = _mm512_sub_epi32(dot, _mm512_slli_epi32(off, 5));
        acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(_mm512_set1_ps(gg_half(p + 208)), _mm512_loadu_ps(XD + GG_TILE * b))));
    }
    return acc;
}

/* The types without a pair tile: two rows, one after the other. */
#define GG_TILE_TWICE(type)                                                                                            \
    static inline __attribute__((always_inline)) void gg_tile2_##type(const uint8_t *r0, const uint8_t *r1, int32_t blocks, \
                                                                      const int32_t *X, const float *XD, const int32_t *S, __m512 out[2]) { \
        out[0] = gg_tile_##type(r0, blocks, X, XD, S);                                                                 \
        out[1] = gg_tile_##type(r1, blocks, X, XD, S);                                                                 \
    }
GG_TILE_TWICE(q4_k)
GG_TILE_TWICE(q5_k)
GG_TILE_TWICE(q6_k)

/* Every row against tiles of sixteen columns; the arranged tile (cols * 16 bytes and its scales and sums) is made once per call. */
#define GG_TILES(type, TYPE, B, PAIRS)                                                                                \
    static void gg_##type##_tiles(const uint8_t *w, int64_t rowBytes, int32_t rows, int32_t cols, int32_t columns,    \
                                  const int8_t *q, const float *d, const int16_t *sums, float *y, int64_t ystride) {    \
        int32_t blocks = cols / TYPE##_WEIGHTS;                                                                       \
        int32_t *X = aligned_alloc(64, (size_t) cols / 4 * GG_TILE * 4 + (size_t) cols / 16 * GG_TILE * 4);          \
        float *XD = aligned_alloc(64, (size_t) (cols / (B)) * GG_TILE * 4 + 64);                                      \
        int32_t *S = X + cols / 4 * GG_TILE;                                                                          \
        for (int32_t t0 = 0; t0 < columns; t0 += GG_TILE) {                                                           \
            int32_t n = columns - t0 < GG_TILE ? columns - t0 : GG_TILE;                                              \
            gg_tile_arrange(cols, B, PAIRS, q, d, sums, t0, n, X, XD, S);                                             \
            for (int32_t r = 0; r < rows; r += 2) {                                                                   \
                int two = r + 1 < rows;   /* a last odd row is computed twice, written once */                         \
                float out[2][GG_TILE];                                                                                \
                __m512 o[2];                                                                                          \
                gg_tile2_##type(w + r * rowBytes, w + (r + two) * rowBytes, blocks, X, XD, S, o);                     \
                _mm512_storeu_ps(out[0], o[0]);                                                                       \
                _mm512_storeu_ps(out[1], o[1]);                                                                       \
                for (int c = 0; c < n; c++) {                                                                         \
                    y[(t0 + c) * ystride + r] = out[0][c];                                                            \
                    if (two) y[(t0 + c) * ystride + r + 1] = out[1][c];                                               \
                }                                                                                                     \
            }                                                                                                         \
        }                                                                                                             \
        free(X);                                                                                                      \
        free(XD);                                                                                                     \
    }

GG_TILES(q8_0, Q8_0, 32, 0)
GG_TILES(q4_0, Q4_0, 32, 0)
GG_TILES(q4_k, Q4_K, 256, 32)
GG_TILES(q5_k, Q5_K, 256, 32)
GG_TILES(q6_k, Q6_K, 256, 16)

/* Rows in fours (a last partial four repeats its first row), each four against every column in turn. */
#define GG_VEC_EXPORT(type, TYPE, B)                                                                                  \
    JQK_EXPORT void ISA(jq_gg_##type)(const uint8_t *w, int64_t rowBytes, int32_t rows, int32_t cols, int32_t columns, \
                                      const int8_t *q, const float *d, const int16_t *sums, float *y, int64_t ystride) { \
        if (columns >= GG_TILE_MIN) {                                                                                 \
            gg_##type##_tiles(w, rowBytes, rows, cols, columns, q, d, sums, y, ystride);                              \
            return;                                                                                                   \
        }                                                                                                             \
        int32_t blocks = cols / TYPE##_WEIGHTS;                                                                       \
        for (int32_t r0 = 0; r0 < rows; r0 += 4) {                                                                    \
            int n = rows - r0 < 4 ? rows - r0 : 4;                                                                    \
            const uint8_t *rp[4];                                                                                     \
            for (int j = 0; j < 4; j++) rp[j] = w + (int64_t) (j < n ? r0 + j : r0) * rowBytes;                       \
            for (int32_t c = 0; c < columns; c++) {                                                                   \
                float out[4];                                                                                         \
                gg_##type##_quad(rp, rowBytes, blocks, q + (int64_t) c * cols, d + (int64_t) c * (cols / (B)),                  \
                                 sums + (int64_t) c * (cols / 16), out);                                              \
                for (int j = 0; j < n; j++) y[c * ystride + r0 + j] = out[j];                                         \
            }                                                                                                         \
        }                                                                                                             \
    }

GG_VEC_EXPORT(q8_0, Q8_0, 32)
GG_VEC_EXPORT(q4_0, Q4_0, 32)
GG_VEC_EXPORT(q4_k, Q4_K, 256)
GG_VEC_EXPORT(q5_k, Q5_K, 256)
GG_VEC_EXPORT(q6_k, Q6_K, 256)
