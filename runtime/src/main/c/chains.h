/*
 * The runtime's one summation order for float products (jquant.runtime.kernels.MatmulKernels):
 * FV_LANES fused multiply-add chains per row, chain c over k ≡ c (mod FV_LANES) in ascending k, then
 * the chains added in lane order from 0. Four rows at a time (four independent chains hide the fused
 * multiply-add's latency). The ISA defines the float vector FV of FV_LANES lanes and FV_ZERO, FV_LOAD,
 * FV_STORE, FV_FMA(a, b, c) = a · b + c fused, FV_I8(p) (FV_LANES int8 as floats) and FV_F16(p)
 * (FV_LANES float16 as floats, exactly).
 */

/* Four rows' n int8 weights (n a multiple of FV_LANES) against x. */
static inline __attribute__((always_inline)) void i8_chains(const int8_t *const w[4], int32_t n, const float *x, FV acc[4]) {
    for (int32_t k = 0; k < n; k += FV_LANES) {
        FV xs = FV_LOAD(x + k);
        for (int j = 0; j < 4; j++) acc[j] = FV_FMA(FV_I8(w[j] + k), xs, acc[j]);
    }
}

/* Four rows' n float weights (n a multiple of FV_LANES) against x. */
static inline __attribute__((always_inline)) void f32_chains(const float *const w[4], int32_t n, const float *x, FV acc[4]) {
    for (int32_t k = 0; k < n; k += FV_LANES) {
        FV xs = FV_LOAD(x + k);
        for (int j = 0; j < 4; j++) acc[j] = FV_FMA(FV_LOAD(w[j] + k), xs, acc[j]);
    }
}

/* Four rows' float16 weights (whole vectors) against x. */
static inline __attribute__((always_inline)) void f16_chains(const uint8_t *const w[4], int32_t n, const float *x, FV acc[4]) {
    for (int32_t k = 0; k < n; k += FV_LANES) {
        FV xs = FV_LOAD(x + k);
        for (int j = 0; j < 4; j++) acc[j] = FV_FMA(FV_F16(w[j] + 2 * k), xs, acc[j]);
    }
}

/* A chain set's result: its lanes added in order from 0. */
static inline __attribute__((always_inline)) float lane_sum(FV acc) {
    float lanes[FV_LANES], sum = 0.0f;
    FV_STORE(lanes, acc);
    for (int c = 0; c < FV_LANES; c++) sum += lanes[c];
    return sum;
}
