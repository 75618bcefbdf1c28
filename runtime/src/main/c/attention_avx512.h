/*
 * Attention's scores and weighted sums (jquant.runtime.kernels.Kernels#scores and #weightedSums) with the
 * Java vector kernels' bits on 16 float lanes (jquant.runtime.kernels.VectorKernels): in Java a short
 * context takes the per-row definitions (axpy, dot) because the blocked kernels cost compilation time in a
 * run's first tokens, and those definitions spend most of their time on lane sums and tails; here every
 * length runs blocked from the first token. Keys and values are stored dimension-major (element
 * [d · stride + p]); offsets are in floats.
 *
 * Scores: s[r][p] = Σ_d (q[r][d] · scale) · k[d][p], per position a fused multiply-add chain over
 * ascending d from zero (axpy's vector steps), the positions past the last whole 16 a multiply then an add
 * (axpy's tail). Weighted sums: out[r][d] = lane_sum(chains) + tail, the chains 16 fused multiply-add
 * chains over the whole 16s of positions (chain c the positions ≡ c), lane_sum their sum in lane order from
 * zero, the tail the positions past them, multiplied then added in order from zero (dot's formula).
 */

/* Rows [0, NR) of the scores at positions [0, len). */
static inline __attribute__((always_inline)) void att_scores_rows(const float *q, int32_t qStride, const int NR, int32_t dims, float scale,
                                                                  const float *k, int64_t kStride, int32_t len, float *s, int64_t sStride) {
    int32_t bound = len & ~15, p = 0;
    for (; p + 64 <= bound; p += 64) {
        __m512 a[4][4];
        for (int r = 0; r < NR; r++) for (int i = 0; i < 4; i++) a[r][i] = _mm512_setzero_ps();
        for (int32_t d = 0; d < dims; d++) {
            const float *kd = k + d * kStride + p;
            __m512 k0 = _mm512_loadu_ps(kd), k1 = _mm512_loadu_ps(kd + 16), k2 = _mm512_loadu_ps(kd + 32), k3 = _mm512_loadu_ps(kd + 48);
            for (int r = 0; r < NR; r++) {
                __m512 b = _mm512_set1_ps(q[r * qStride + d] * scale);
                a[r][0] = _mm512_fmadd_ps(k0, b, a[r][0]);
                a[r][1] = _mm512_fmadd_ps(k1, b, a[r][1]);
                a[r][2] = _mm512_fmadd_ps(k2, b, a[r][2]);
                a[r][3] = _mm512_fmadd_ps(k3, b, a[r][3]);
            }
        }
        for (int r = 0; r < NR; r++) for (int i = 0; i < 4; i++) _mm512_storeu_ps(s + r * sStride + p + 16 * i, a[r][i]);
    }
    for (; p < bound; p += 16) {
        __m512 a[4];
        for (int r = 0; r < NR; r++) a[r] = _mm512_setzero_ps();
        for (int32_t d = 0; d < dims; d++) {
            __m512 kv = _mm512_loadu_ps(k + d * kStride + p);
            for (int r = 0; r < NR; r++) a[r] = _mm512_fmadd_ps(kv, _mm512_set1_ps(q[r * qStride + d] * scale), a[r]);
        }
        for (int r = 0; r < NR; r++) _mm512_storeu_ps(s + r * sStride + p, a[r]);
    }
    if (bound == len) return;
    __mmask16 tail = (__mmask16) ((1u << (len - bound)) - 1);
    __m512 a[4];
    for (int r = 0; r < NR; r++) a[r] = _mm512_setzero_ps();
    for (int32_t d = 0; d < dims; d++) {
        __m512 kv = _mm512_maskz_loadu_ps(tail, k + d * kStride + bound);
        for (int r = 0; r < NR; r++) a[r] = _mm512_add_ps(a[r], _mm512_mul_ps(kv, _mm512_set1_ps(q[r * qStride + d] * scale)));
    }
    for (int r = 0; r < NR; r++) _mm512_mask_storeu_ps(s + r * sStride + bound, tail, a[r]);
}

JQK_EXPORT void ISA(jq_attn_scores)(const float *q, int32_t qOff, int32_t qStride, int32_t rows, int32_t dims, float scale,
                                    const float *k, int32_t kOff, int32_t kStride, int32_t len, float *s, int32_t sOff, int32_t sStride) {
    q += qOff;
    k += kOff;
    s += sOff;
    int32_t r = 0;
    for (; r + 4 <= rows; r += 4) att_scores_rows(q + (int64_t) r * qStride, qStride, 4, dims, scale, k, kStride, len, s + (int64_t) r * sStride, sStride);
    switch (rows - r) {
        case 3: att_scores_rows(q + (int64_t) r * qStride, qStride, 3, dims, scale, k, kStride, len, s + (int64_t) r * sStride, sStride); break;
        case 2: att_scores_rows(q + (int64_t) r * qStride, qStride, 2, dims, scale, k, kStride, len, s + (int64_t) r * sStride, sStride); break;
        case 1: att_scores_rows(q + (int64_t) r * qStride, qStride, 1, dims, scale, k, kStride, len, s + (int64_t) r * sStride, sStride); break;
        default: break;
    }
}

/* The chains of rows [0, NR) against value dimensions [d, d + ND) over positions [0, bound), into chains[r][d]. */
static inline __attribute__((always_inline)) void att_chains(const float *s, int64_t sStride, const int NR, const float *v, int64_t vStride,
                                                             int32_t d, const int ND, int32_t bound, __m512 chains[4][16]) {
    __m512 a[4][4];
    for (int r = 0; r < NR; r++) for (int j = 0; j < ND; j++) a[r][j] = _mm512_setzero_ps();
    for (int32_t p = 0; p < bound; p += 16) {
        __m512 x[4];
        for (int r = 0; r < NR; r++) x[r] = _mm512_loadu_ps(s + r * sStride + p);
        for (int j = 0; j < ND; j++) {
            __m512 vv = _mm512_loadu_ps(v + (d + j) * vStride + p);
            for (int r = 0; r < NR; r++) a[r][j] = _mm512_fmadd_ps(x[r], vv, a[r][j]);
        }
    }
    for (int r = 0; r < NR; r++) for (int j = 0; j < ND; j++) chains[r][d % 16 + j] = a[r][j];
}

/* Rows [0, NR) of the weighted sums, sixteen value dimensions at a time: their lane sums in one lane_sums16,
   their tails sixteen at once (a gather of the dimensions' values at each tail position: 15 · vStride must
   be an int32). */
static inline __attribute__((always_inline)) void att_sums_rows(const float *s, int32_t sStride, const int NR, const float *v, int32_t vStride,
                                                                int32_t dims, int32_t len, float *out, int32_t outStride) {
    int32_t bound = len & ~15;
    __m512i index = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(vStride));
    for (int32_t d0 = 0; d0 < dims; d0 += 16) {
        int32_t nd = dims - d0 < 16 ? dims - d0 : 16;
        __mmask16 m = (__mmask16) (nd == 16 ? 0xFFFF : (1u << nd) - 1);
        __m512 chains[4][16];
        for (int r = 0; r < NR; r++) for (int j = 0; j < 16; j++) chains[r][j] = _mm512_setzero_ps();
        int32_t d = d0;
        for (; d + 4 <= d0 + nd; d += 4) att_chains(s, sStride, NR, v, vStride, d, 4, bound, chains);
        for (; d < d0 + nd; d++) att_chains(s, sStride, NR, v, vStride, d, 1, bound, chains);
        __m512 t[4];
        for (int r = 0; r < NR; r++) t[r] = _mm512_setzero_ps();
        for (int32_t p = bound; p < len; p++) {
            __m512 g = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, index, v + (int64_t) d0 * vStride + p, 4);
            for (int r = 0; r < NR; r++) t[r] = _mm512_add_ps(t[r], _mm512_mul_ps(_mm512_set1_ps(s[r * sStride + p]), g));
        }
        for (int r = 0; r < NR; r++) _mm512_mask_storeu_ps(out + r * outStride + d0, m, _mm512_add_ps(lane_sums16(chains[r]), t[r]));
    }
}

JQK_EXPORT void ISA(jq_attn_sums)(const float *s, int32_t sOff, int32_t sStride, int32_t rows, const float *v, int32_t vOff, int32_t vStride,
                                  int32_t dims, int32_t len, float *out, int32_t outOff, int32_t outStride) {
    s += sOff;
    v += vOff;
    out += outOff;
    int32_t r = 0;
    for (; r + 4 <= rows; r += 4) att_sums_rows(s + (int64_t) r * sStride, sStride, 4, v, vStride, dims, len, out + (int64_t) r * outStride, outStride);
    switch (rows - r) {
        case 3: att_sums_rows(s + (int64_t) r * sStride, sStride, 3, v, vStride, dims, len, out + (int64_t) r * outStride, outStride); break;
        case 2: att_sums_rows(s + (int64_t) r * sStride, sStride, 2, v, vStride, dims, len, out + (int64_t) r * outStride, outStride); break;
        case 1: att_sums_rows(s + (int64_t) r * sStride, sStride, 1, v, vStride, dims, len, out + (int64_t) r * outStride, outStride); break;
        default: break;
    }
}
