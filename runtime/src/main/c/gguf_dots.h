/*
 * llama.cpp's block types times activations quantized as ggml-cpu quantizes them (Q8_0 for Q4_0 and
 * Q8_0, Q8_K for the K-quants; jquant.runtime.ggml.Q8Activations): exact integer dot products per
 * weight block, then one float term per block added in ascending block order (the formula of
 * jquant.runtime.ggml.BlockDots, no fused multiply-add). Every kernel here gives that class's floats bit
 * for bit.
 *
 * A column c of activations: int8 q[c * cols ..], float scales d[c * cols / B ..] (B = 32 or 256),
 * int16 sums of 16 consecutive q, sums[c * cols / 16 ..].
 *
 * This file has the plain C row functions (the tails of the vector kernels, and the whole kernel on an
 * instruction set that defines no vector one: GG_VEC_<TYPE> unset). An instruction set may set
 * GG_ROW_ATTRIBUTES for them.
 */
#ifndef GG_ROW_ATTRIBUTES
#define GG_ROW_ATTRIBUTES
#endif

/* Sum over 32 (or 16) codes times activations: plain loops the compiler vectorizes. */
static inline GG_ROW_ATTRIBUTES int32_t gg_sum(const int8_t *codes, const int8_t *q, int n) {
    int32_t sum = 0;
    for (int i = 0; i < n; i++) sum += codes[i] * q[i];
    return sum;
}

/* Q8_0 blocks b in [b0, b1) of a row continuing acc: dot = sum of int8 codes times q, term = dot * (d * xd). */
static inline GG_ROW_ATTRIBUTES float gg_q8_0_from(const uint8_t *row, int32_t b0, int32_t b1, const int8_t *q, const float *xd, const int16_t *sums, float acc) {
    (void) sums;
    for (int32_t b = b0; b < b1; b++) {
        const uint8_t *p = row + Q8_0_BYTES * b;
        acc += (float) gg_sum((const int8_t *) p + 2, q + 32 * b, 32) * (gg_half(p) * xd[b]);
    }
    return acc;
}

/* Q4_0: codes nibble - 8, low nibbles weights 0..15, high 16..31. */
static inline GG_ROW_ATTRIBUTES float gg_q4_0_from(const uint8_t *row, int32_t b0, int32_t b1, const int8_t *q, const float *xd, const int16_t *sums, float acc) {
    (void) sums;
    for (int32_t b = b0; b < b1; b++) {
        const uint8_t *p = row + Q4_0_BYTES * b;
        int32_t dot = 0;
        for (int j = 0; j < 16; j++) dot += ((p[2 + j] & 15) - 8) * q[32 * b + j] + ((p[2 + j] >> 4) - 8) * q[32 * b + 16 + j];
        acc += (float) dot * (gg_half(p) * xd[b]);
    }
    return acc;
}

/* Q4_K (qh NULL) and Q5_K superblock terms: dot = sum_s sc_s * sum(code * q), mdot = sum_s m_s * sum(q). */
static inline GG_ROW_ATTRIBUTES float gg_qk_term(const uint8_t *p, const uint8_t *qh, const uint8_t *qs, const int8_t *q, float xd, const int16_t *sums) {
    int8_t codes[256];
    for (int j = 0; j < 4; j++) {
        for (int l = 0; l < 32; l++) {
            codes[64 * j + l] = qs[32 * j + l] & 15;
            codes[64 * j + 32 + l] = qs[32 * j + l] >> 4;
        }
    }
    if (qh) {
        for (int s = 0; s < 8; s++) for (int l = 0; l < 32; l++) codes[32 * s + l] |= ((qh[l] >> s) & 1) << 4;
    }
    int32_t dot = 0, mdot = 0;
    for (int s = 0; s < 8; s++) {
        int scale, min;
        gg_scale_min(p + 4, s, &scale, &min);
        dot += scale * gg_sum(codes + 32 * s, q + 32 * s, 32);
        mdot += min * (sums[2 * s] + sums[2 * s + 1]);
    }
    return (float) dot * (gg_half(p) * xd) - (float) mdot * (gg_half(p + 2) * xd);
}

static inline GG_ROW_ATTRIBUTES float gg_q4_k_from(const uint8_t *row, int32_t b0, int32_t b1, const int8_t *q, const float *xd, const int16_t *sums, float acc) {
    for (int32_t b = b0; b < b1; b++) {
        const uint8_t *p = row + Q4_K_BYTES * b;
        acc += gg_qk_term(p, NULL, p + 16, q + 256 * b, xd[b], sums + 16 * b);
    }
    return acc;
}

static inline GG_ROW_ATTRIBUTES float gg_q5_k_from(const uint8_t *row, int32_t b0, int32_t b1, const int8_t *q, const float *xd, const int16_t *sums, float acc) {
    for (int32_t b = b0; b < b1; b++) {
        const uint8_t *p = row + Q5_K_BYTES * b;
        acc += gg_qk_term(p, p + 16, p + 48, q + 256 * b, xd[b], sums + 16 * b);
    }
    return acc;
}

/* Q6_K: weight e = 128h + 32k + l, code as gg_decode_q6_k's, minus 32; sub-block scales int8 per 16 weights. */
static inline GG_ROW_ATTRIBUTES float gg_q6_k_from(const uint8_t *row, int32_t b0, int32_t b1, const int8_t *q, const float *xd, const int16_t *sums, float acc) {
    (void) sums;
    for (int32_t b = b0; b < b1; b++) {
        const uint8_t *p = row + Q6_K_BYTES * b;
        int8_t codes[256];
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = p + 64 * h, *qh = p + 128 + 32 * h;
            for (int l = 0; l < 32; l++) {
                codes[128 * h + l] = (int8_t) (((ql[l] & 15) | (qh[l] & 3) << 4) - 32);
                codes[128 * h + 32 + l] = (int8_t) (((ql[32 + l] & 15) | ((qh[l] >> 2) & 3) << 4) - 32);
                codes[128 * h + 64 + l] = (int8_t) (((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
                codes[128 * h + 96 + l] = (int8_t) (((ql[32 + l] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
            }
        }
        int32_t dot = 0;
        for (int s = 0; s < 16; s++) dot += (int8_t) p[192 + s] * gg_sum(codes + 16 * s, q + 256 * b + 16 * s, 16);
        acc += (float) dot * (gg_half(p + 208) * xd[b]);
    }
    return acc;
}

/* The exported kernel: y[c * ystride + r] for rows [0, rows) and columns [0, columns), row by row. */
#define GG_PLAIN(type, TYPE, B)                                                                                      \
    JQK_EXPORT void ISA(jq_gg_##type)(const uint8_t *w, int64_t rowBytes, int32_t rows, int32_t cols, int32_t columns, \
                                      const int8_t *q, const float *d, const int16_t *sums, float *y, int64_t ystride) { \
        int32_t blocks = cols / TYPE##_WEIGHTS;                                                                       \
        for (int32_t r = 0; r < rows; r++) {                                                                          \
            for (int32_t c = 0; c < columns; c++) {                                                                   \
                y[c * ystride + r] = gg_##type##_from(w + r * rowBytes, 0, blocks, q + (int64_t) c * cols,            \
                                                      d + (int64_t) c * (cols / (B)), sums + (int64_t) c * (cols / 16), 0.0f); \
            }                                                                                                         \
        }                                                                                                             \
    }

#ifndef GG_VEC_Q8_0
GG_PLAIN(q8_0, Q8_0, 32)
#endif
#ifndef GG_VEC_Q4_0
GG_PLAIN(q4_0, Q4_0, 32)
#endif
#ifndef GG_VEC_Q4_K
GG_PLAIN(q4_k, Q4_K, 256)
#endif
#ifndef GG_VEC_Q5_K
GG_PLAIN(q5_k, Q5_K, 256)
#endif
#ifndef GG_VEC_Q6_K
GG_PLAIN(q6_k, Q6_K, 256)
#endif
