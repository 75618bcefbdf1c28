/*
 * Attention's scores and weighted sums (jquant.runtime.kernels.Kernels#scores and #weightedSums) with the
 * Java vector kernels' bits on FV_LANES float lanes (jquant.runtime.kernels.VectorKernels): in Java a short
 * context takes the per-row definitions (axpy, dot) because the blocked kernels cost compilation time in a
 * run's first tokens, and those definitions spend most of their time on lane sums and tails; here every
 * length runs blocked from the first token. Keys and values are stored dimension-major (element
 * [d · stride + p]); offsets are in floats.
 *
 * Scores: s[r][p] = Σ_d (q[r][d] · scale) · k[d][p], per position a fused multiply-add chain over
 * ascending d from zero (axpy's vector steps), the positions past the last whole vector a multiply then an
 * add (axpy's tail). Weighted sums: out[r][d] = lane_sum(chains) + tail, the chains FV_LANES fused
 * multiply-add chains over the whole vectors of positions (chain c the positions ≡ c), lane_sum their sum in
 * lane order from zero, the tail the positions past them, multiplied then added in order from zero (dot's
 * formula).
 *
 * The ISA defines, besides chains.h's FV macros: FV_ADD(a, b); ATT_TAIL_LOAD(p, n) (n < FV_LANES floats,
 * the other lanes zero) and ATT_TAIL_STORE(p, v, n) (n <= FV_LANES lanes); ATT_INDEX (an int vector),
 * ATT_STRIDES(stride) (lane j: j · stride, wrapping) and ATT_GATHER(p, strides, n) (lane j < n:
 * p[j · stride], else zero; j · stride for j < n is an int32, as the caller's bounds on the value array
 * keep it); ATT_LANE_SUMS(set) (lane j: lane_sum(set[j]), for FV_LANES sets); ATT_PASS (1 or 4), the most
 * vectors of positions a pass of the scores takes (its four rows' accumulators held in registers).
 */

/*
 * Rows [0, NR) of the scores at positions [p, p + NV · FV_LANES + n): NV < 4 whole vectors and, where n > 0, the
 * tail of n < FV_LANES positions, in one pass over the dimensions (a pass each left its four chains waiting on the
 * fused multiply-add's latency).
 */
static inline __attribute__((always_inline)) void att_scores_pass(const float *q, int32_t qStride, int32_t dims, float scale, const int NR, const float *k,
                                                                  int64_t kStride, int32_t p, const int NV, int32_t n,
                                                                  float *s, int64_t sStride) {
    FV a[4][4];
    for (int r = 0; r < NR; r++) for (int i = 0; i <= NV; i++) a[r][i] = FV_ZERO;
    for (int32_t d = 0; d < dims; d++) {
        const float *kd = k + d * kStride + p;
        FV kv[4];
        for (int i = 0; i < NV; i++) kv[i] = FV_LOAD(kd + i * FV_LANES);
        if (n > 0) kv[NV] = ATT_TAIL_LOAD(kd + NV * FV_LANES, n);
        for (int r = 0; r < NR; r++) {
            FV b = FV_SET(q[r * qStride + d] * scale);
            for (int i = 0; i < NV; i++) a[r][i] = FV_FMA(kv[i], b, a[r][i]);
            if (n > 0) a[r][NV] = FV_ADD(a[r][NV], FV_MUL(kv[NV], b));
        }
    }
    for (int r = 0; r < NR; r++) {
        for (int i = 0; i < NV; i++) FV_STORE(s + r * sStride + p + i * FV_LANES, a[r][i]);
        if (n > 0) ATT_TAIL_STORE(s + r * sStride + p + NV * FV_LANES, a[r][NV], n);
    }
}

/*
 * Rows [0, NR) of the scores at positions [0, len): blocks of four vectors, then what is left (up to three
 * vectors and the tail) in one pass, or, where the ISA has fewer registers, in passes of ATT_PASS whole vectors
 * and one for the tail.
 */
static inline __attribute__((always_inline)) void att_scores_rows(const float *q, int32_t qStride, const int NR, int32_t dims, float scale,
                                                                  const float *k, int64_t kStride, int32_t len, float *s, int64_t sStride) {
    int32_t bound = len / FV_LANES * FV_LANES, p = 0;
    for (; p + 4 * FV_LANES <= bound; p += 4 * FV_LANES) {
        FV a[4][4];
        for (int r = 0; r < NR; r++) for (int i = 0; i < 4; i++) a[r][i] = FV_ZERO;
        for (int32_t d = 0; d < dims; d++) {
            const float *kd = k + d * kStride + p;
            FV k0 = FV_LOAD(kd), k1 = FV_LOAD(kd + FV_LANES), k2 = FV_LOAD(kd + 2 * FV_LANES), k3 = FV_LOAD(kd + 3 * FV_LANES);
            for (int r = 0; r < NR; r++) {
                FV b = FV_SET(q[r * qStride + d] * scale);
                a[r][0] = FV_FMA(k0, b, a[r][0]);
                a[r][1] = FV_FMA(k1, b, a[r][1]);
                a[r][2] = FV_FMA(k2, b, a[r][2]);
                a[r][3] = FV_FMA(k3, b, a[r][3]);
            }
        }
        for (int r = 0; r < NR; r++) for (int i = 0; i < 4; i++) FV_STORE(s + r * sStride + p + FV_LANES * i, a[r][i]);
    }
    int32_t n = len - bound, whole = (bound - p) / FV_LANES;
#if ATT_PASS < 4
    for (; whole >= ATT_PASS; whole -= ATT_PASS, p += ATT_PASS * FV_LANES) att_scores_pass(q, qStride, dims, scale, NR, k, kStride, p, ATT_PASS, 0, s, sStride);
#endif
    switch (whole) {
        case 3: att_scores_pass(q, qStride, dims, scale, NR, k, kStride, p, 3, n, s, sStride); break;
        case 2: att_scores_pass(q, qStride, dims, scale, NR, k, kStride, p, 2, n, s, sStride); break;
        case 1: att_scores_pass(q, qStride, dims, scale, NR, k, kStride, p, 1, n, s, sStride); break;
        default: if (n > 0) att_scores_pass(q, qStride, dims, scale, NR, k, kStride, p, 0, n, s, sStride); break;
    }
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

/* The chains of rows [0, NR) against value dimensions [d, d + ND) over positions [0, bound), into chains[r][d - d0]. */
static inline __attribute__((always_inline)) void att_chains(const float *s, int64_t sStride, const int NR, const float *v, int64_t vStride,
                                                             int32_t d0, int32_t d, const int ND, int32_t bound, FV chains[4][FV_LANES]) {
    FV a[4][4];
    for (int r = 0; r < NR; r++) for (int j = 0; j < ND; j++) a[r][j] = FV_ZERO;
    for (int32_t p = 0; p < bound; p += FV_LANES) {
        FV x[4];
        for (int r = 0; r < NR; r++) x[r] = FV_LOAD(s + r * sStride + p);
        for (int j = 0; j < ND; j++) {
            FV vv = FV_LOAD(v + (d + j) * vStride + p);
            for (int r = 0; r < NR; r++) a[r][j] = FV_FMA(x[r], vv, a[r][j]);
        }
    }
    for (int r = 0; r < NR; r++) for (int j = 0; j < ND; j++) chains[r][d - d0 + j] = a[r][j];
}

/* Rows [0, NR) of the weighted sums, FV_LANES value dimensions at a time: their lane sums at once
   (ATT_LANE_SUMS), their tails at once (a gather of the dimensions' values at each tail position). */
static inline __attribute__((always_inline)) void att_sums_rows(const float *s, int32_t sStride, const int NR, const float *v, int32_t vStride,
                                                                int32_t dims, int32_t len, float *out, int32_t outStride) {
    int32_t bound = len / FV_LANES * FV_LANES;
    ATT_INDEX strides = ATT_STRIDES(vStride);
    for (int32_t d0 = 0; d0 < dims; d0 += FV_LANES) {
        int32_t nd = dims - d0 < FV_LANES ? dims - d0 : FV_LANES;
        FV chains[4][FV_LANES];
        for (int r = 0; r < NR; r++) for (int j = nd; j < FV_LANES; j++) chains[r][j] = FV_ZERO;
        int32_t d = d0;
        for (; d + 4 <= d0 + nd; d += 4) att_chains(s, sStride, NR, v, vStride, d0, d, 4, bound, chains);
        for (; d < d0 + nd; d++) att_chains(s, sStride, NR, v, vStride, d0, d, 1, bound, chains);
        FV t[4];
        for (int r = 0; r < NR; r++) t[r] = FV_ZERO;
        for (int32_t p = bound; p < len; p++) {
            FV g = ATT_GATHER(v + (int64_t) d0 * vStride + p, strides, nd);
            for (int r = 0; r < NR; r++) t[r] = FV_ADD(t[r], FV_MUL(FV_SET(s[r * sStride + p]), g));
        }
        for (int r = 0; r < NR; r++) ATT_TAIL_STORE(out + r * outStride + d0, FV_ADD(ATT_LANE_SUMS(chains[r]), t[r]), nd);
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
