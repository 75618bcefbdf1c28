/*
 * Weightlet lanes (jquant.runtime.WeightletLanes): a copy of a weightlet tensor for weight-only decode, in
 * which a float weight is two instructions away from its bits and no row's width is looked up per group.
 * A B-bit row is cut into steps of 16 weights (the runtime's chains: weight 16s + j goes to chain j), and
 * P steps share a block of 16 dwords, weight 16s + j in dword j at bit WLL_BASE + (s mod P)·B:
 *
 *   block m (64 bytes):  dword j = | ... | field of step mP+2 | field of step mP+1 | field of step mP | (bit 0 unused, B < 8) |
 *
 * P = (32 - WLL_BASE) / B fields a dword (B = 1..8: 31, 15, 10, 7, 6, 5, 4, 4); a row is ceil(ceil(length / 16) / P)
 * blocks, its last step's lanes past the length zero. The field is the weightlet's (the int8 weight 2f − (2^B − 1)),
 * at 8 bits the weight's byte plus 128 (so f − 128: every int8, as the Java layer's byte arithmetic gives).
 *
 * A field f at bit p of a dword, masked into a float's mantissa under the exponent e = 24 - p (one vpternlogd),
 * is the float 2^e + 2f, and one subtraction of 2^e + 2^B - 1 makes it the weight 2f - (2^B - 1), exactly
 * (e = 23 - p and 2^e + 128 at 8 bits; the constant is a float for e <= 23, hence the unused bit 0 below 8
 * bits). Fields above bit 23 are read from the dword shifted right by 9. The rows of a tensor run in an order
 * of equal widths, four at a time, and a four's blocks lie side by side (row j's block m at 256m + 64j from the
 * four's start), so that a tensor is read as one stream.
 */

#define WLL_BASE(B) ((B) == 8 ? 0 : 1)
/* Bytes from one block of a row to its next: a four's blocks lie side by side. */
#define WLL_STRIDE (4 * 64)
#define WLL_FIELDS(B) ((32 - WLL_BASE(B)) / (B))
#define WLL_HIGH(B, i) (WLL_BASE(B) + (i) * (B) + (B) > 23)
#define WLL_AT(B, i) (WLL_BASE(B) + (i) * (B) - (WLL_HIGH(B, i) ? 9 : 0))
#define WLL_BIAS(B) ((B) == 8 ? 128 : (1 << (B)) - 1)

/* The weights of field i of dwords d (h = d >> 9) of a B-bit block, as floats. */
static inline __attribute__((always_inline)) __m512 wll_weights(__m512i d, __m512i h, int B, int i) {
    int at = WLL_AT(B, i), e = (B == 8 ? 23 : 24) - at;
    __m512i f = _mm512_ternarylogic_epi32(WLL_HIGH(B, i) ? h : d, _mm512_set1_epi32(((1 << B) - 1) << at), _mm512_set1_epi32((127 + e) << 23), 0xEA);
    return _mm512_sub_ps(_mm512_castsi512_ps(f), _mm512_set1_ps((float) ((1 << e) + WLL_BIAS(B))));
}

/*
 * Four B-bit rows at rows[0..3] (blocks WLL_STRIDE apart) against x: each block's P steps into the rows'
 * chains, the next four's blocks prefetched non-temporally (next[0..3], null past the last; 1.05-1.08 times
 * the speed of a prefetch into L2, bench/RESULTS.md), then the steps of the last
 * block before the length, then the last partial step's weights one at a time; out[j] = lane_sum(row j's
 * chains) · scales[j], the four sums made together in registers (through memory, a 64-byte store read back
 * by a 64-byte load, they stalled the kernel).
 */
/* Field i of the four rows' block (d0..d3, h0..h3) into their chains against x at xm + 16i. */
#define WLL_STEP(i)                                                      \
    do {                                                                 \
        __m512 xs = _mm512_loadu_ps(xm + 16 * (i));                      \
        a0 = _mm512_fmadd_ps(wll_weights(d0, h0, B, (i)), xs, a0);       \
        a1 = _mm512_fmadd_ps(wll_weights(d1, h1, B, (i)), xs, a1);       \
        a2 = _mm512_fmadd_ps(wll_weights(d2, h2, B, (i)), xs, a2);       \
        a3 = _mm512_fmadd_ps(wll_weights(d3, h3, B, (i)), xs, a3);       \
    } while (0)

static inline __attribute__((always_inline)) void wll_rows4(const uint8_t *const rows[4], const uint8_t *const next[4], int B,
                                                            int32_t length, const float *x, const float *scales, float out[4]) {
    const int P = WLL_FIELDS(B);
    int32_t steps = length / 16, whole = steps / P, rest = steps - whole * P, tail = length - 16 * steps;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int32_t m = 0; m < whole; m++) {
        for (int j = 0; j < 4; j++) if (next[j]) JQK_PREFETCH_NTA(next[j] + WLL_STRIDE * m);
        __m512i d0 = _mm512_loadu_si512(rows[0] + WLL_STRIDE * m), d1 = _mm512_loadu_si512(rows[1] + WLL_STRIDE * m);
        __m512i d2 = _mm512_loadu_si512(rows[2] + WLL_STRIDE * m), d3 = _mm512_loadu_si512(rows[3] + WLL_STRIDE * m);
        __m512i h0 = _mm512_srli_epi32(d0, 9), h1 = _mm512_srli_epi32(d1, 9), h2 = _mm512_srli_epi32(d2, 9), h3 = _mm512_srli_epi32(d3, 9);
        const float *xm = x + 16 * P * m;
#pragma GCC unroll 32
        for (int i = 0; i < P; i++) {
            WLL_STEP(i);
        }
    }
    if (rest > 0) {
        const uint8_t *const last[4] = {rows[0] + WLL_STRIDE * whole, rows[1] + WLL_STRIDE * whole, rows[2] + WLL_STRIDE * whole, rows[3] + WLL_STRIDE * whole};
        __m512i d0 = _mm512_loadu_si512(last[0]), d1 = _mm512_loadu_si512(last[1]), d2 = _mm512_loadu_si512(last[2]), d3 = _mm512_loadu_si512(last[3]);
        __m512i h0 = _mm512_srli_epi32(d0, 9), h1 = _mm512_srli_epi32(d1, 9), h2 = _mm512_srli_epi32(d2, 9), h3 = _mm512_srli_epi32(d3, 9);
        const float *xm = x + 16 * P * whole;
#pragma GCC unroll 32
        for (int i = 0; i < P - 1; i++) {
            if (i >= rest) break;
            WLL_STEP(i);
        }
    }
    if (tail > 0) {
        float chains[4][16] __attribute__((aligned(64)));
        _mm512_store_ps(chains[0], a0);
        _mm512_store_ps(chains[1], a1);
        _mm512_store_ps(chains[2], a2);
        _mm512_store_ps(chains[3], a3);
        for (int j = 0; j < 4; j++) {
            for (int32_t k = 0; k < tail; k++) {
                uint32_t dword;
                memcpy(&dword, rows[j] + WLL_STRIDE * whole + 4 * k, 4);
                int32_t f = (int32_t) (dword >> (WLL_BASE(B) + rest * B)) & ((1 << B) - 1);
                int32_t w = B == 8 ? f - 128 : 2 * f - WLL_BIAS(B);
                chains[j][k] = __builtin_fmaf((float) w, x[16 * steps + k], chains[j][k]);
            }
        }
        a0 = _mm512_load_ps(chains[0]), a1 = _mm512_load_ps(chains[1]), a2 = _mm512_load_ps(chains[2]), a3 = _mm512_load_ps(chains[3]);
    }
    _mm_storeu_ps(out, _mm_mul_ps(lane_sums4(a0, a1, a2, a3), _mm_loadu_ps(scales)));
}
#undef WLL_STEP

#define WLL_ROWS4_OF(b) \
    static void wll_rows4_##b(const uint8_t *const rows[4], const uint8_t *const next[4], int32_t length, const float *x, const float *scales, \
                              float out[4]) {                                                                                                      \
        wll_rows4(rows, next, b, length, x, scales, out);                                                                                          \
    }
WLL_ROWS4_OF(1)
WLL_ROWS4_OF(2)
WLL_ROWS4_OF(3)
WLL_ROWS4_OF(4)
WLL_ROWS4_OF(5)
WLL_ROWS4_OF(6)
WLL_ROWS4_OF(7)
WLL_ROWS4_OF(8)
#undef WLL_ROWS4_OF

/*
 * Weight-only decode on lanes: rows [0, rows) of the tensor's order (a multiple of four, each four of one width),
 * row r's block m at lanes + offsets[r] + WLL_STRIDE·m, bits[r] wide, its result y[order[r]] = (w · x) · scales[r] in the
 * runtime's float order (chains.h), as jq_wl_f32's; a row whose order is negative fills a four and is not written.
 */
JQK_EXPORT void ISA(jq_wl_lanes_f32)(const uint8_t *lanes, const int64_t *offsets, const int32_t *bits, const int32_t *order, int32_t rows,
                                     int32_t length, const float *x, const float *scales, float *y) {
    typedef void (*rows4_fn)(const uint8_t *const[4], const uint8_t *const[4], int32_t, const float *, const float *, float[4]);
    static const rows4_fn BY_WIDTH[9] = {0, wll_rows4_1, wll_rows4_2, wll_rows4_3, wll_rows4_4, wll_rows4_5, wll_rows4_6, wll_rows4_7, wll_rows4_8};
    float sums[4];
    for (int32_t r0 = 0; r0 < rows; r0 += 4) {
        const uint8_t *at[4], *next[4];
        for (int j = 0; j < 4; j++) {
            at[j] = lanes + offsets[r0 + j];
            next[j] = r0 + 4 + j < rows ? lanes + offsets[r0 + 4 + j] : 0;
        }
        BY_WIDTH[bits[r0]](at, next, length, x, scales + r0, sums);
        for (int j = 0; j < 4; j++) {
            if (order[r0 + j] >= 0) y[order[r0 + j]] = sums[j];
        }
    }
}

/*
 * The lanes of rows [0, rows) of a weightlet tensor (data, offsets, bits as jq_wl_f32 takes them), row r's block m
 * written at out + outOffsets[r] + WLL_STRIDE·m (WeightletLanes.rowBytes / 64 blocks, every byte).
 */
JQK_EXPORT void ISA(jq_wl_lanes_pack)(const uint8_t *data, const int64_t *offsets, const int32_t *bits, int32_t rows, int32_t length,
                                      uint8_t *out, const int64_t *outOffsets) {
    int32_t groups = (length + 127) / 128, lastStripes = (length - 128 * (groups - 1) + 15) / 16;
    int32_t whole = lastStripes < 8 ? groups - 1 : groups;
    int8_t *v = aligned_alloc(64, (size_t) 128 * groups);
    uint8_t spread[128] __attribute__((aligned(64)));
    for (int32_t r = 0; r < rows; r++) {
        int B = bits[r], P = WLL_FIELDS(B);
        const uint8_t *row = data + offsets[r];
        wl_groups(row, B, whole, v);
        if (whole < groups) WL_GROUP(wl_whole(row + (int64_t) whole * 16 * B, B, lastStripes, spread), B, v + 128 * whole);
        int32_t steps = (length + 15) / 16;
        __m512i block = _mm512_setzero_si512();
        for (int32_t s = 0; s < steps; s++) {
            __mmask16 live = (__mmask16) (length - 16 * s >= 16 ? 0xFFFF : (1u << (length - 16 * s)) - 1);
            __m512i w = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *) (v + 16 * s)));
            __m512i f = B == 8 ? _mm512_add_epi32(w, _mm512_set1_epi32(128)) : _mm512_srai_epi32(_mm512_add_epi32(w, _mm512_set1_epi32(WLL_BIAS(B))), 1);
            block = _mm512_or_si512(block, _mm512_maskz_sll_epi32(live, f, _mm_cvtsi32_si128(WLL_BASE(B) + (s % P) * B)));
            if (s % P == P - 1 || s == steps - 1) {
                _mm512_storeu_si512(out + outOffsets[r] + WLL_STRIDE * (s / P), block);
                block = _mm512_setzero_si512();
            }
        }
    }
    free(v);
}
