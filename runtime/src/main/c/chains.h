/*
 * The runtime's one summation order for float products (jquant.runtime.kernels.MatmulKernels):
 * FV_LANES fused multiply-add chains per row, chain c over k ≡ c (mod FV_LANES) in ascending k, then
 * the chains added in lane order from 0. Four rows at a time (four independent chains hide the fused
 * multiply-add's latency). The ISA defines the float vector FV of FV_LANES lanes and FV_ZERO, FV_LOAD,
 * FV_STORE, FV_FMA(a, b, c) = a · b + c fused, FV_I8(p) (FV_LANES int8 as floats) and FV_F16(p)
 * (FV_LANES float16 as floats, exactly).
 */

/*
 * Four rows' chains over n weights (n a multiple of FV_LANES) against x, the four accumulators held in
 * registers (left to a loop over an array, GCC kept them in memory: a store and a reload in every
 * fused multiply-add's chain, and the float16 rows ran at half the Java kernel's speed), the loop kept
 * rolled (unrolled by -funroll-loops, float16 decode ran 4 % slower). LOAD(j, k) gives row j's weights
 * k .. k + FV_LANES - 1 as floats; AHEAD(k) runs first in each step (a prefetch, or nothing).
 */
#define FV_CHAINS(n, x, acc, LOAD, AHEAD)                                          \
    do {                                                                           \
        FV fv_a0 = (acc)[0], fv_a1 = (acc)[1], fv_a2 = (acc)[2], fv_a3 = (acc)[3]; \
        _Pragma("GCC unroll 1")                                                    \
        for (int32_t k = 0; k < (n); k += FV_LANES) {                              \
            AHEAD(k);                                                              \
            FV xs = FV_LOAD((x) + k);                                              \
            fv_a0 = FV_FMA(LOAD(0, k), xs, fv_a0);                                 \
            fv_a1 = FV_FMA(LOAD(1, k), xs, fv_a1);                                 \
            fv_a2 = FV_FMA(LOAD(2, k), xs, fv_a2);                                 \
            fv_a3 = FV_FMA(LOAD(3, k), xs, fv_a3);                                 \
        }                                                                          \
        (acc)[0] = fv_a0;                                                          \
        (acc)[1] = fv_a1;                                                          \
        (acc)[2] = fv_a2;                                                          \
        (acc)[3] = fv_a3;                                                          \
    } while (0)

/* A step of FV_CHAINS with nothing to do before it. */
#define FV_NO_AHEAD(k) ((void) (k))

/* Four rows' n float weights against x. */
static inline __attribute__((always_inline)) void f32_chains(const float *const w[4], int32_t n, const float *x, FV acc[4]) {
#define F32_ROW(j, k) FV_LOAD(w[j] + (k))
    FV_CHAINS(n, x, acc, F32_ROW, FV_NO_AHEAD);
#undef F32_ROW
}

/* How far ahead in each of its four rows the float16 decode prefetches: with 2 KiB decode ran 1.07-1.16 times as
   fast as with none, with 1 or 3 KiB 1.04-1.07, with 4 KiB 0.95 (the F16 bench model, one model and pool switched
   between them; bench/RESULTS.md). */
#define F16_AHEAD 2048

/* Four rows' float16 weights (whole vectors) against x, the line F16_AHEAD bytes on in each row prefetched once
   (non-temporal: every line is read once). */
static inline __attribute__((always_inline)) void f16_chains(const uint8_t *const w[4], int32_t n, const float *x, FV acc[4]) {
#define F16_ROW(j, k) FV_F16(w[j] + 2 * (k))
#define F16_ROWS_AHEAD(k)                                                                         \
    do {                                                                                          \
        if (((k) & 31) == 0) for (int j = 0; j < 4; j++) JQK_PREFETCH_NTA(w[j] + 2 * (k) + F16_AHEAD); \
    } while (0)
    FV_CHAINS(n, x, acc, F16_ROW, F16_ROWS_AHEAD);
#undef F16_ROWS_AHEAD
#undef F16_ROW
}

/* A chain set's result: its lanes added in order from 0. */
static inline __attribute__((always_inline)) float lane_sum(FV acc) {
    float lanes[FV_LANES], sum = 0.0f;
    FV_STORE(lanes, acc);
    for (int c = 0; c < FV_LANES; c++) sum += lanes[c];
    return sum;
}
