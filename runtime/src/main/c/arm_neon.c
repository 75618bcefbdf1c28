/* NEON kernels with the dot-product extension (Armv8.2 sdot): vdotq_s32 multiplies int8 codes by
   int8 activations and sums each four adjacent products into an int32 lane. */
#include <arm_neon.h>
#include "jqk.h"

#define ISA(name) name##_neon
/* A chunk's dots: 128-block k's rows 0..3 in b[k]. */
typedef struct { int32x4_t b[4]; } dots16;
#define VEC_I dots16
#define VEC_F4 float32x4_t
#define VEC_F4_ZERO vdupq_n_f32(0.0f)
#define VEC_F4_LOAD(p) vld1q_f32(p)
#define VEC_F4_ADD(a, b) vaddq_f32(a, b)
#define VEC_F4_STORE(p, v) vst1q_f32(p, v)

/* Sums of u * q of 16 code bytes (four 2-bit slots each) against four slot vectors x, x + 64, x + 128, x + 192. */
static inline __attribute__((always_inline)) int32x4_t slots4(uint8x16_t c, const int8_t *x) {
    const uint8x16_t m = vdupq_n_u8(3);
    int32x4_t e = vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(vandq_u8(c, m)), vld1q_s8(x));
    int32x4_t o = vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(c, 2), m)), vld1q_s8(x + 64));
    e = vdotq_s32(e, vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(c, 4), m)), vld1q_s8(x + 128));
    o = vdotq_s32(o, vreinterpretq_s8_u8(vshrq_n_u8(c, 6)), vld1q_s8(x + 192));
    return vaddq_s32(e, o);
}

/* The terms (float) dot * (d * xs), dot = r - sum(q), of a chunk whose row scales of block k are d[k]. */
static inline __attribute__((always_inline)) void quad_terms(dots16 r, const float32x4_t d[4], const int32_t *sums4, const float *xs4, float *terms) {
    for (int k = 0; k < 4; k++) {
        float32x4_t dot = vcvtq_f32_s32(vsubq_s32(r.b[k], vld1q_s32(sums4 + 4 * k)));
        vst1q_f32(terms + 4 * k, vmulq_f32(dot, vmulq_f32(d[k], vld1q_f32(xs4 + 4 * k))));
    }
}

static inline __attribute__((always_inline)) void quad_dots(dots16 r, const int32_t *sums4, int32_t *dots) {
    for (int k = 0; k < 4; k++) vst1q_s32(dots + 4 * k, vsubq_s32(r.b[k], vld1q_s32(sums4 + 4 * k)));
}

static inline __attribute__((always_inline)) float32x4_t fp16x4(uint16x4_t bits) { return vcvt_f32_f16(vreinterpret_f16_u16(bits)); }

/* ---------------------------------------------------------------- T2P */

/* One T2P pair (4 words of 16 bytes): lanes 0, 1 row a, lanes 2, 3 row b. */
static inline __attribute__((always_inline)) int32x4_t t2p_pair(const uint8_t *p, const int8_t *x) {
    int32x4_t s = slots4(vld1q_u8(p), x);
    for (int wd = 1; wd < 4; wd++) s = vaddq_s32(s, slots4(vld1q_u8(p + 16 * wd), x + 16 * wd));
    return s;
}

static inline __attribute__((always_inline)) dots16 t2p_column(const uint8_t *const p[8], int m, const int8_t *a) {
    dots16 r;
    for (int k = 0; k < 4; k++) {
        const int8_t *x = a + (k < m ? k * T2P_ACT : 0);
        /* [a+a, b+b] of pair 0 and [c+c, d+d] of pair 1: rows 0..3 */
        r.b[k] = vpaddq_s32(t2p_pair(p[k] + T2P_CODES, x), t2p_pair(p[k] + T2P_CODES + T2P_PAIR, x));
    }
    return r;
}

static inline __attribute__((always_inline)) void t2p_chunk(const uint8_t *const p[8], int m, const int8_t *a0, const int8_t *a1,
                                                            int two, dots16 *r0, dots16 *r1) {
    *r0 = t2p_column(p, m, a0);
    if (two) *r1 = t2p_column(p, m, a1);
}

static inline __attribute__((always_inline)) void t2p_terms(dots16 r, const uint8_t *const p[8], const int32_t *sums4, const float *xs4, float *terms) {
    float32x4_t d[4];
    for (int k = 0; k < 4; k++) d[k] = fp16x4(vld1_u16((const uint16_t *) p[k]));
    quad_terms(r, d, sums4, xs4, terms);
}

#define t2p_dots quad_dots
#define QUAD(name) t2p_##name
#define QUAD_EXPORT ISA(jq_t2p_multiply)
#define Q_ACT T2P_ACT
#include "quad_drivers.h"

/* ---------------------------------------------------------------- TQ2_0 */

static inline __attribute__((always_inline)) dots16 tq2_column(const uint8_t *const p[8], int m, const int8_t *a) {
    int32x4_t h[4][4];   /* [128-block k][row] */
    for (int b = 0; b < 2; b++) {
        const int8_t *x = a + (b && m > 2 ? 2 * TQ2_ACT : 0);
        for (int r = 0; r < 4; r++) {
            const uint8_t *c = p[2 * r + b];
            h[2 * b][r] = vaddq_s32(slots4(vld1q_u8(c), x), slots4(vld1q_u8(c + 16), x + 16));
            h[2 * b + 1][r] = vaddq_s32(slots4(vld1q_u8(c + 32), x + 32), slots4(vld1q_u8(c + 48), x + 48));
        }
    }
    dots16 r;
    for (int k = 0; k < 4; k++) r.b[k] = vpaddq_s32(vpaddq_s32(h[k][0], h[k][1]), vpaddq_s32(h[k][2], h[k][3]));
    return r;
}

static inline __attribute__((always_inline)) void tq2_chunk(const uint8_t *const p[8], int m, const int8_t *a0, const int8_t *a1,
                                                            int two, dots16 *r0, dots16 *r1) {
    *r0 = tq2_column(p, m, a0);
    if (two) *r1 = tq2_column(p, m, a1);
}

static inline __attribute__((always_inline)) void tq2_terms(dots16 r, const uint8_t *const p[8], const int32_t *sums4, const float *xs4, float *terms) {
    float32x4_t d[4];
    for (int b = 0; b < 2; b++) {
        uint16_t bits[4];
        for (int row = 0; row < 4; row++) bits[row] = jqk_load16(p[2 * row + b] + TQ2_SCALE);
        d[2 * b] = d[2 * b + 1] = fp16x4(vld1_u16(bits));
    }
    quad_terms(r, d, sums4, xs4, terms);
}

#define tq2_dots quad_dots
#define QUAD(name) tq2_##name
#define QUAD_EXPORT ISA(jq_tq2_multiply)
#define Q_ACT TQ2_ACT
#include "quad_drivers.h"

/* ---------------------------------------------------------------- float chains (chains.h) */

static inline __attribute__((always_inline)) float32x4_t i8x4_floats(const int8_t *p) {
    int32_t four;
    memcpy(&four, p, 4);
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four))))));
}

#define FV float32x4_t
#define FV_LANES 4
#define FV_ZERO vdupq_n_f32(0.0f)
#define FV_LOAD(p) vld1q_f32(p)
#define FV_STORE(p, v) vst1q_f32(p, v)
#define FV_FMA(a, b, c) vfmaq_f32(c, a, b)
#define FV_I8(p) i8x4_floats(p)
#define FV_F16(p) vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *) (p))))
#define FV_MUL(a, b) vmulq_f32(a, b)
#define FV_SUB(a, b) vsubq_f32(a, b)
#define FV_SET(v) vdupq_n_f32(v)
#include "chains.h"

/* ---------------------------------------------------------------- attention (attention.h) */

/* Lane j: lane_sum(set[j]), four sums at once: the sets transposed, then added in lane order from zero. */
static inline __attribute__((always_inline)) float32x4_t lane_sums4(const float32x4_t set[4]) {
    float32x4x2_t a = vtrnq_f32(set[0], set[1]), b = vtrnq_f32(set[2], set[3]);
    float32x4_t sum = vdupq_n_f32(0.0f);
    sum = vaddq_f32(sum, vcombine_f32(vget_low_f32(a.val[0]), vget_low_f32(b.val[0])));
    sum = vaddq_f32(sum, vcombine_f32(vget_low_f32(a.val[1]), vget_low_f32(b.val[1])));
    sum = vaddq_f32(sum, vcombine_f32(vget_high_f32(a.val[0]), vget_high_f32(b.val[0])));
    return vaddq_f32(sum, vcombine_f32(vget_high_f32(a.val[1]), vget_high_f32(b.val[1])));
}

/* Lanes [0, n) of p (n < 4), the others zero; lanes [0, n) stored; lane j < n: p[j · stride], the others zero. */
static inline __attribute__((always_inline)) float32x4_t att_tail_load(const float *p, int n) {
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    memcpy(t, p, 4 * (size_t) n);
    return vld1q_f32(t);
}
static inline __attribute__((always_inline)) void att_tail_store(float *p, float32x4_t v, int n) {
    float t[4];
    vst1q_f32(t, v);
    memcpy(p, t, 4 * (size_t) n);
}
static inline __attribute__((always_inline)) float32x4_t att_gather(const float *p, int64_t stride, int n) {
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int j = 0; j < n; j++) t[j] = p[j * stride];
    return vld1q_f32(t);
}
#define FV_ADD(a, b) vaddq_f32(a, b)
#define ATT_TAIL_LOAD(p, n) att_tail_load(p, n)
#define ATT_TAIL_STORE(p, v, n) att_tail_store(p, v, n)
#define ATT_INDEX int64_t
#define ATT_STRIDES(stride) ((int64_t) (stride))
#define ATT_GATHER(p, strides, n) att_gather(p, strides, n)
#define ATT_LANE_SUMS(set) lane_sums4(set)
#define ATT_PASS 4
#include "attention.h"

/* ---------------------------------------------------------------- weightlets */

#define WL_IACC int32x4_t
#define WL_IACC_ZERO vdupq_n_s32(0)
#define WL_IACC_SUM(acc) ((int64_t) vaddvq_s32(acc))
static inline __attribute__((always_inline)) int32x4_t wl_dot(int32x4_t acc, const int8_t *v, const int8_t *xq) {
    for (int i = 0; i < 128; i += 16) acc = vdotq_s32(acc, vld1q_s8(v + i), vld1q_s8(xq + i));
    return acc;
}

#include "weightlet.h"

/* ---------------------------------------------------------------- llama.cpp's block types and float16 */

#include "gguf_rows.h"
#include "gguf_dots.h"
