/*
 * Attention's softmax, rows of scores at a time, with the Java vector kernels' bits
 * (jquant.runtime.kernels.VectorKernels#softmax): per row the maximum; each x − max (a float subtraction)
 * raised to exp as FloatExp evaluates it, eight double lanes at a time; the sum in 16 chains (chain c over
 * the positions ≡ c below the last whole vector, added in lane order from zero) then the tail in order; each
 * value times 1 / sum. In Java, FloatExp's lanes give Math.exp's float wherever they are certain, and the
 * positions past the last eight take Math.exp itself: here they take the same lanes, masked.
 *
 * A lane FloatExp cannot be certain of (x − max below its range, or exp within its guard of a float
 * rounding midpoint) needs Math.exp: it keeps x − max, which is negative where every exp is positive, and
 * its row is left for Java to finish (those lanes, then the sum and the scaling). A row with a NaN, or whose
 * maximum is infinite, is left as it was, for Java's softmax whole.
 *
 *   n = rint(x · log2 e),  r = x − n · ln 2  (ln 2 in two parts)
 *   exp(x) = 2^n · Σ_{k ≤ 12} r^k / k!       (Horner, fused multiply-adds, from 1/12!)
 */

/* FloatExp's constants, computed as Java computes them. */
#define SM_LOW -87.3
#define SM_HIGH 88.7
#define SM_LOG2E 1.4426950408889634
#define SM_SHIFT 0x1.8p52
#define SM_DROPPED ((1LL << 29) - 1)
#define SM_HALF (1LL << 28)
#define SM_GUARD (1LL << 8)
/* 1 / k! for k = 0..12: each k! is exact in a double and each quotient rounded once, as Java's 1 / f. */
static const double SM_INVERSE_FACTORIALS[13] = {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040,
                                                 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600};

static inline __attribute__((always_inline)) double sm_bits_double(uint64_t b) {
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

/* exp(v) as FloatExp.exp for eight float lanes, rounded to float; *unsure: FloatExp.uncertain's lanes. */
static inline __attribute__((always_inline)) __m256 sm_exp8(__m256 v, __mmask8 *unsure) {
    const double ln2Hi = sm_bits_double(0x3FE62E42FEE00000ULL), ln2Lo = 0x1.62e42fefa39efp-1 - ln2Hi;
    __m512d x = _mm512_cvtps_pd(v);
    __m512d t = _mm512_fmadd_pd(x, _mm512_set1_pd(SM_LOG2E), _mm512_set1_pd(SM_SHIFT));
    __m512d n = _mm512_sub_pd(t, _mm512_set1_pd(SM_SHIFT));
    __m512d r = _mm512_fmadd_pd(n, _mm512_set1_pd(-ln2Hi), x);
    r = _mm512_fmadd_pd(n, _mm512_set1_pd(-ln2Lo), r);
    __m512d p = _mm512_set1_pd(SM_INVERSE_FACTORIALS[12]);
    for (int k = 11; k >= 0; k--) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(SM_INVERSE_FACTORIALS[k]));
    uint64_t shiftBits;
    double shift = SM_SHIFT;
    memcpy(&shiftBits, &shift, sizeof shiftBits);
    __m512i scale = _mm512_slli_epi64(_mm512_sub_epi64(_mm512_castpd_si512(t), _mm512_set1_epi64((long long) (shiftBits - 1023))), 52);
    __m512d e = _mm512_mul_pd(p, _mm512_castsi512_pd(scale));
    __m512i off = _mm512_abs_epi64(_mm512_sub_epi64(_mm512_and_si512(_mm512_castpd_si512(e), _mm512_set1_epi64(SM_DROPPED)),
                                                    _mm512_set1_epi64(SM_HALF)));
    __mmask8 inRange = _mm512_cmp_pd_mask(x, _mm512_set1_pd(SM_LOW), _CMP_GE_OQ) & _mm512_cmp_pd_mask(x, _mm512_set1_pd(SM_HIGH), _CMP_LE_OQ);
    *unsure = (__mmask8) (~inRange | _mm512_cmple_epi64_mask(off, _mm512_set1_epi64(SM_GUARD)));
    return _mm512_cvtpd_ps(e);
}

/* One row in place; 0 done, 1 left as it was (a NaN or an infinite maximum), 2 left with lanes for Math.exp. */
static inline __attribute__((always_inline)) int sm_row(float *x, int32_t len) {
    __m512 m = _mm512_set1_ps(-__builtin_inff());
    __mmask16 nan = 0;
    int32_t k = 0;
    for (; k + 16 <= len; k += 16) {
        __m512 v = _mm512_loadu_ps(x + k);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        m = _mm512_max_ps(m, v);
    }
    if (k < len) {
        __mmask16 tail = (__mmask16) ((1u << (len - k)) - 1);
        __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(-__builtin_inff()), tail, x + k);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        m = _mm512_max_ps(m, v);
    }
    float max = _mm512_reduce_max_ps(m);
    if (nan || max == __builtin_inff() || max == -__builtin_inff()) return 1;
    /* The maximum's sign when it is a zero does not matter: x − (±0) and the exps of ±0 are the same. */
    __m256 shift = _mm256_set1_ps(max);
    __mmask8 anyUnsure = 0;
    for (k = 0; k + 8 <= len; k += 8) {
        __m256 v = _mm256_sub_ps(_mm256_loadu_ps(x + k), shift);
        __mmask8 unsure;
        __m256 e = sm_exp8(v, &unsure);
        _mm256_storeu_ps(x + k, _mm256_mask_blend_ps(unsure, e, v));
        anyUnsure |= unsure;
    }
    if (k < len) {
        __mmask8 tail = (__mmask8) ((1u << (len - k)) - 1);
        __m256 v = _mm256_sub_ps(_mm256_maskz_loadu_ps(tail, x + k), shift);
        __mmask8 unsure;
        __m256 e = sm_exp8(v, &unsure);
        unsure &= tail;
        _mm256_mask_storeu_ps(x + k, tail, _mm256_mask_blend_ps(unsure, e, v));
        anyUnsure |= unsure;
    }
    if (anyUnsure) return 2;
    __m512 chains = _mm512_setzero_ps();
    int32_t bound = len / 16 * 16;
    for (k = 0; k < bound; k += 16) chains = _mm512_add_ps(chains, _mm512_loadu_ps(x + k));
    float lanes[16], sum = 0.0f;
    _mm512_storeu_ps(lanes, chains);
    for (int c = 0; c < 16; c++) sum += lanes[c];
    for (k = bound; k < len; k++) sum += x[k];
    __m512 inv1 = _mm512_set1_ps(1.0f / sum);
    for (k = 0; k + 16 <= len; k += 16) _mm512_storeu_ps(x + k, _mm512_mul_ps(_mm512_loadu_ps(x + k), inv1));
    if (k < len) {
        __mmask16 tail = (__mmask16) ((1u << (len - k)) - 1);
        _mm512_mask_storeu_ps(x + k, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, x + k), inv1));
    }
    return 0;
}

/*
 * Rows [0, rows) (rows <= 32) of len > 0 floats each, stride apart from x + off. Returns the rows left as
 * they were (bit r) in the low 32 bits, the rows left with lanes for Math.exp in the high 32.
 */
JQK_EXPORT int64_t ISA(jq_softmax_rows)(float *x, int32_t off, int32_t stride, int32_t rows, int32_t len) {
    uint64_t untouched = 0, unfinished = 0;
    for (int32_t r = 0; r < rows; r++) {
        int left = sm_row(x + off + (int64_t) r * stride, len);
        if (left == 1) untouched |= 1ULL << r;
        if (left == 2) unfinished |= 1ULL << r;
    }
    return (int64_t) (untouched | unfinished << 32);
}
