/* NEON kernels with the dot-product extension (Armv8.2 sdot): vdotq_s32 multiplies int8 codes by
   int8 activations and sums each four adjacent products into an int32 lane. */
#include <arm_neon.h>
#include "jqk.h"

#define ISA(name) name##_neon
/* A chunk's dots: block i's rows 0..3 in b[i]. */
typedef struct { int32x4_t b[4]; } dots16;
#define VEC_I dots16
#define VEC_F4 float32x4_t
#define VEC_F4_ZERO vdupq_n_f32(0.0f)
#define VEC_F4_LOAD(p) vld1q_f32(p)
#define VEC_F4_ADD(a, b) vaddq_f32(a, b)
#define VEC_F4_STORE(p, v) vst1q_f32(p, v)

/* One T2P pair (4 words of 16 code bytes) against a block's arranged activations: lanes 0, 1 hold
   row a's partial dots, 2, 3 row b's; two accumulators halve the chain of dependent sdots. */
static inline __attribute__((always_inline)) int32x4_t t2p_pair(const uint8_t *p, const int8_t *act) {
    const uint8x16_t m = vdupq_n_u8(3);
    int32x4_t e = vdupq_n_s32(0), o = vdupq_n_s32(0);
    for (int wd = 0; wd < 4; wd++) {
        uint8x16_t c = vld1q_u8(p + 16 * wd);
        e = vdotq_s32(e, vreinterpretq_s8_u8(vandq_u8(c, m)), vld1q_s8(act + 16 * wd));
        o = vdotq_s32(o, vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(c, 2), m)), vld1q_s8(act + 64 + 16 * wd));
        e = vdotq_s32(e, vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(c, 4), m)), vld1q_s8(act + 128 + 16 * wd));
        o = vdotq_s32(o, vreinterpretq_s8_u8(vshrq_n_u8(c, 6)), vld1q_s8(act + 192 + 16 * wd));
    }
    return vaddq_s32(e, o);
}

/* Exact dots of a chunk of four blocks against one or two columns: per block, [a+a, b+b] of pair 0
   and [c+c, d+d] of pair 1 give rows 0..3. */
static inline __attribute__((always_inline)) void t2p_chunk(const uint8_t *const blk[4], const int8_t *const act0[4],
                                                            const int8_t *const act1[4], int two, dots16 *r0, dots16 *r1) {
    for (int i = 0; i < 4; i++) {
        const uint8_t *p = blk[i] + T2P_CODES;
        r0->b[i] = vpaddq_s32(t2p_pair(p, act0[i]), t2p_pair(p + T2P_PAIR, act0[i]));
        if (two) r1->b[i] = vpaddq_s32(t2p_pair(p, act1[i]), t2p_pair(p + T2P_PAIR, act1[i]));
    }
}

/* The shared formula's terms of a chunk: (float) dot * (d * xs), dot = r - sum(q), exact. */
static inline __attribute__((always_inline)) void t2p_terms(dots16 r, const uint8_t *const blk[4], const int32_t *sums4, const float *xs4, float *terms) {
    for (int i = 0; i < 4; i++) {
        float32x4_t d = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *) blk[i])));
        float32x4_t dot = vcvtq_f32_s32(vsubq_s32(r.b[i], vld1q_s32(sums4 + 4 * i)));
        vst1q_f32(terms + 4 * i, vmulq_f32(dot, vmulq_f32(d, vld1q_f32(xs4 + 4 * i))));
    }
}

static inline __attribute__((always_inline)) void t2p_dots(dots16 r, const int32_t *sums4, int32_t *dots) {
    for (int i = 0; i < 4; i++) vst1q_s32(dots + 4 * i, vsubq_s32(r.b[i], vld1q_s32(sums4 + 4 * i)));
}

#include "t2p_drivers.h"
