/*
 * llama.cpp's own block types (ggml-common.h; jquant.formats.quant.*Block) multiplied in place:
 * each block of four rows decoded to float32 in L1, exactly as jquant's reference decoders compute
 * each weight (same operations, same order), then the runtime's one summation order (chains.h). So
 * the outputs are DecodedRowsWeights' bit for bit. The decoders are written once in GCC vector
 * extensions, compiled for each instruction set. Float16 rows (DenseWeights) likewise, converted in
 * registers.
 */
typedef int8_t i8x16 __attribute__((vector_size(16)));

/* fp16 bits -> float, exactly (subnormals, infinities and NaN payloads as Float.float16ToFloat). */
static inline float gg_half(const uint8_t *p) {
    uint16_t h = jqk_load16(p);
    uint32_t sign = (uint32_t) (h & 0x8000) << 16, exp = (h >> 10) & 0x1F, man = h & 0x3FF, bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | man << 13;
    } else if (exp != 0) {
        bits = sign | (exp + 112) << 23 | man << 13;
    } else {
        float f = (float) man * 0x1p-24f;
        memcpy(&bits, &f, 4);
        bits |= sign;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/*
 * out[i] = (float) q[i] · a − b for sixteen int8 codes: the form of every decoder here (b = 0 where the
 * type has no minimum: subtracting +0 changes no float). The conversion is the ISA's (FV_I8): written
 * as a vector-extension conversion, GCC turned it into byte-by-byte scalar code for Q8_0's codes.
 */
static inline __attribute__((always_inline)) void gg_scaled(float *out, i8x16 q, float a, float b) {
    int8_t codes[16];
    memcpy(codes, &q, 16);
    for (int i = 0; i < 16; i += FV_LANES) FV_STORE(out + i, FV_SUB(FV_MUL(FV_I8(codes + i), FV_SET(a)), FV_SET(b)));
}

/* Q8_0: 32 weights = fp16 d, 32 int8 q: w = q · d. */
#define Q8_0_WEIGHTS 32
#define Q8_0_BYTES 34
static inline void gg_decode_q8_0(const uint8_t *b, float *out) {
    float d = gg_half(b);
    for (int i = 0; i < 32; i += 16) {
        i8x16 q;
        memcpy(&q, b + 2 + i, 16);
        gg_scaled(out + i, q, d, 0.0f);
    }
}

/* Q4_0: 32 weights = fp16 d, 16 bytes: w_j = (lo_j − 8) · d, w_{j+16} = (hi_j − 8) · d. */
#define Q4_0_WEIGHTS 32
#define Q4_0_BYTES 18
static inline void gg_decode_q4_0(const uint8_t *b, float *out) {
    float d = gg_half(b);
    i8x16 q;
    memcpy(&q, b + 2, 16);
    gg_scaled(out, (q & 15) - 8, d, 0.0f);
    gg_scaled(out + 16, ((q >> 4) & 15) - 8, d, 0.0f);
}

/* The 6-bit scale and min of Q4_K / Q5_K sub-block s (ggml's get_scale_min_k4). */
static inline void gg_scale_min(const uint8_t *sc, int s, int *scale, int *min) {
    if (s < 4) {
        *scale = sc[s] & 63;
        *min = sc[s + 4] & 63;
    } else {
        *scale = (sc[s + 4] & 0x0F) | (sc[s - 4] >> 6) << 4;
        *min = (sc[s + 4] >> 4) | (sc[s] >> 6) << 4;
    }
}

/* Q4_K: 256 weights = fp16 d, dmin, 12 bytes of scales, 128 of nibbles; sub-block s of 32:
   w = (d · scale) · nibble − dmin · min, nibble of weight e in byte 32 (e / 64) + e % 32, low half
   for even e / 32. Q5_K adds qh (32 bytes): bit s of byte e % 32 is the code's bit 4. */
#define Q4_K_WEIGHTS 256
#define Q4_K_BYTES 144
#define Q5_K_WEIGHTS 256
#define Q5_K_BYTES 176
static inline void gg_decode_k(const uint8_t *b, const uint8_t *qh, const uint8_t *qs, float *out) {
    float d = gg_half(b), dmin = gg_half(b + 2);
    for (int s = 0; s < 8; s++) {
        int scale, min;
        gg_scale_min(b + 4, s, &scale, &min);
        float dl = d * (float) scale, ml = dmin * (float) min;
        for (int i = 0; i < 32; i += 16) {
            i8x16 q;
            memcpy(&q, qs + 32 * (s / 2) + i, 16);
            q = s % 2 == 0 ? q & 15 : (q >> 4) & 15;
            if (qh) {
                i8x16 h;
                memcpy(&h, qh + i, 16);
                q |= ((h >> s) & 1) << 4;
            }
            gg_scaled(out + 32 * s + i, q, dl, ml);
        }
    }
}
static inline void gg_decode_q4_k(const uint8_t *b, float *out) { gg_decode_k(b, NULL, b + 16, out); }
static inline void gg_decode_q5_k(const uint8_t *b, float *out) { gg_decode_k(b, b + 16, b + 48, out); }

/* Q6_K: 256 weights = 128 bytes ql, 64 qh, 16 int8 scales, fp16 d; weight e = 128h + 32k + l:
   code = ((ql[64h + 32 (k % 2) + l] >> 4 (k / 2)) & 15) | ((qh[32h + l] >> 2k) & 3) << 4,
   w = (d · scale[e / 16]) · (code − 32). */
#define Q6_K_WEIGHTS 256
#define Q6_K_BYTES 210
static inline void gg_decode_q6_k(const uint8_t *b, float *out) {
    float d = gg_half(b + 208);
    for (int h = 0; h < 2; h++) {
        for (int k = 0; k < 4; k++) {
            for (int i = 0; i < 32; i += 16) {
                i8x16 lo, hi;
                memcpy(&lo, b + 64 * h + 32 * (k % 2) + i, 16);
                memcpy(&hi, b + 128 + 32 * h + i, 16);
                i8x16 code = ((lo >> (4 * (k / 2))) & 15) | ((hi >> (2 * k)) & 3) << 4;
                int e = 128 * h + 32 * k + i;
                float dl = d * (float) (int8_t) b[192 + e / 16];
                gg_scaled(out + e, code - 32, dl, 0.0f);
            }
        }
    }
}

/* Weights decoded per row per step: whole blocks, at most 256 (a K-quant block, eight Q8_0 or Q4_0 blocks). */
#define GG_SPAN 256

/*
 * y[r] = w_r · x for rows [0, rows) of a row-major matrix of TYPE blocks (rowBytes per row, cols
 * weights, a whole number of blocks): per step, four rows' next GG_SPAN weights decoded, then their
 * chains continued.
 */
#define GG_ROWS(type, TYPE)                                                                                          \
    JQK_EXPORT void ISA(jq_rows_##type)(const uint8_t *w, int64_t rowBytes, int32_t rows, int32_t cols, const float *x, float *y) { \
        float buf[4][GG_SPAN] __attribute__((aligned(64)));                                                        \
        for (int32_t r0 = 0; r0 < rows; r0 += 4) {                                                                  \
            int n = rows - r0 < 4 ? rows - r0 : 4;                                                                  \
            FV acc[4];                                                                                              \
            for (int j = 0; j < 4; j++) acc[j] = FV_ZERO;                                                           \
            const float *const rowsOf[4] = {buf[0], buf[1], buf[2], buf[3]};                                        \
            for (int32_t k0 = 0; k0 < cols; k0 += GG_SPAN) {                                                        \
                int32_t m = cols - k0 < GG_SPAN ? cols - k0 : GG_SPAN;                                              \
                for (int j = 0; j < 4; j++) {                                                                       \
                    const uint8_t *row = w + (j < n ? r0 + j : r0) * rowBytes;                                      \
                    for (int32_t k = 0; k < m; k += TYPE##_WEIGHTS) {                                               \
                        gg_decode_##type(row + (int64_t) (k0 + k) / TYPE##_WEIGHTS * TYPE##_BYTES, buf[j] + k);     \
                    }                                                                                               \
                }                                                                                                   \
                f32_chains(rowsOf, m, x + k0, acc);                                                                 \
            }                                                                                                       \
            for (int j = 0; j < n; j++) y[r0 + j] = lane_sum(acc[j]);                                               \
        }                                                                                                           \
    }

GG_ROWS(q8_0, Q8_0)
GG_ROWS(q4_0, Q4_0)
GG_ROWS(q4_k, Q4_K)
GG_ROWS(q5_k, Q5_K)
GG_ROWS(q6_k, Q6_K)

/* A float16 row's result from its chains over the whole vectors: the elements past them one at a time
   into chain k mod FV_LANES, then the chains added. */
static inline __attribute__((always_inline)) float f16_row_end(FV acc, const uint8_t *row, const float *x, int32_t whole, int32_t cols) {
    float chains[FV_LANES];
    FV_STORE(chains, acc);
    for (int32_t k = whole; k < cols; k++) chains[k % FV_LANES] = __builtin_fmaf(gg_half(row + 2 * k), x[k], chains[k % FV_LANES]);
    return lane_sum(FV_LOAD(chains));
}

/*
 * F16 rows: y[r] = w_r · x, each weight converted exactly (as Float.float16ToFloat) in registers. Four
 * rows from the four quarters of [0, rows) at a time (four long streams for the hardware prefetcher,
 * as DenseWeights reads them); the elements past a row's last whole vector go one at a time to chain
 * (k mod FV_LANES). The weights must be finite: the Java layer checks a matrix before its first product.
 */
JQK_EXPORT void ISA(jq_rows_f16)(const uint8_t *w, int64_t rowBytes, int32_t rows, int32_t cols, const float *x, float *y) {
    int32_t quarter = (rows + 3) / 4, whole = cols / FV_LANES * FV_LANES;
    for (int32_t q = 0; q < quarter; q++) {
        int32_t r[4];
        int n = 0;
        for (int j = 0; j < 4; j++) if (q + j * quarter < rows) r[n++] = q + j * quarter;
        for (int j = n; j < 4; j++) r[j] = r[0];
        FV acc[4];
        for (int j = 0; j < 4; j++) acc[j] = FV_ZERO;
        const uint8_t *const rw[4] = {w + r[0] * rowBytes, w + r[1] * rowBytes, w + r[2] * rowBytes, w + r[3] * rowBytes};
        f16_chains(rw, whole, x, acc);
        for (int j = 0; j < n; j++) y[r[j]] = f16_row_end(acc[j], rw[j], x, whole, cols);
    }
}

/*
 * The F16 prefill tile: F16_TILE_ROWS rows by four tokens, one chain set each in registers. Six rows
 * with AVX-512, whose 32 registers hold 24 chain sets, four activation vectors and one of weights: each
 * activation vector then serves six rows (on a Zen 5 core 1.06-1.24x the four-row tile's multiply-adds
 * a second, bench/RESULTS.md). Four rows elsewhere: AVX2 has 16 registers, and NEON's six-row tile is
 * not measured.
 */
#ifndef F16_TILE_ROWS
#define F16_TILE_ROWS 4
#endif
/* Rows whose float16 bytes stay in L2 while every token passes over them, so each token's activations come
   from L3 once per block rather than once per tile (bench/RESULTS.md). */
#define F16_ROW_BLOCK_BYTES (512 * 1024)
#if F16_TILE_ROWS == 6
#define F16_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#else
#define F16_ROWS(X) X(0) X(1) X(2) X(3)
#endif
#define F16_TILE_ACC(j) FV a##j##0 = FV_ZERO, a##j##1 = FV_ZERO, a##j##2 = FV_ZERO, a##j##3 = FV_ZERO;
/* Row j's weights converted once and multiplied into its four tokens' chains: the four activation vectors
   stay in registers across the rows, so a tile needs its chain sets, four and one registers; converting
   the six rows first needed six, and GCC then kept a chain set in memory (bench/RESULTS.md). */
#define F16_TILE_ROW(j)                                                                             \
    {                                                                                               \
        FV w = FV_F16(rw[j] + 2 * k);                                                               \
        a##j##0 = FV_FMA(w, x0, a##j##0);                                                           \
        a##j##1 = FV_FMA(w, x1, a##j##1);                                                           \
        a##j##2 = FV_FMA(w, x2, a##j##2);                                                           \
        a##j##3 = FV_FMA(w, x3, a##j##3);                                                           \
    }
#define F16_TILE_SETS(j) {a##j##0, a##j##1, a##j##2, a##j##3},

/*
 * F16 prefill: y[t · ystride + r] = w_r · x_t for rows [0, rows) and tokens [0, tokens) (x: cols floats a
 * token), each by jq_rows_f16's chains, so a token's outputs are the same alone and in a batch. Rows in
 * blocks of F16_ROW_BLOCK_BYTES, every four tokens across a block's tiles; a tile of rows by four tokens
 * per step, its chain sets in registers: each weight vector converted once for
 * four tokens, each activation vector loaded once for the tile's rows (the Java prefill's tile, without
 * its float copy of the rows). A last partial tile repeats its first row or token; only real outputs
 * are written. Rows without a tail are summed by the ISA's F16_TILE_SUMS where it has one (lane_sum's
 * order, a tile's chain sets at once).
 */
JQK_EXPORT void ISA(jq_tiles_f16)(const uint8_t *w, int64_t rowBytes, int32_t rows, int32_t cols, const float *x, int32_t tokens,
                                  float *y, int64_t ystride) {
    int32_t whole = cols / FV_LANES * FV_LANES;
    int32_t block = (int32_t) (F16_ROW_BLOCK_BYTES / rowBytes) / F16_TILE_ROWS * F16_TILE_ROWS;
    if (block < F16_TILE_ROWS) block = F16_TILE_ROWS;
    for (int32_t b0 = 0; b0 < rows; b0 += block) {
        int32_t b1 = rows - b0 < block ? rows : b0 + block;
        for (int32_t t0 = 0; t0 < tokens; t0 += 4) {
            int nt = tokens - t0 < 4 ? tokens - t0 : 4;
            const float *xt[4];
            for (int i = 0; i < 4; i++) xt[i] = x + (int64_t) (i < nt ? t0 + i : t0) * cols;
            for (int32_t r0 = b0; r0 < b1; r0 += F16_TILE_ROWS) {
                int nr = b1 - r0 < F16_TILE_ROWS ? b1 - r0 : F16_TILE_ROWS;
                const uint8_t *rw[F16_TILE_ROWS];
                for (int j = 0; j < F16_TILE_ROWS; j++) rw[j] = w + (int64_t) (j < nr ? r0 + j : r0) * rowBytes;
                F16_ROWS(F16_TILE_ACC)
                for (int32_t k = 0; k < whole; k += FV_LANES) {
                    FV x0 = FV_LOAD(xt[0] + k), x1 = FV_LOAD(xt[1] + k), x2 = FV_LOAD(xt[2] + k), x3 = FV_LOAD(xt[3] + k);
                    F16_ROWS(F16_TILE_ROW)
                }
                const FV acc[F16_TILE_ROWS][4] = {F16_ROWS(F16_TILE_SETS)};
#ifdef F16_TILE_SUMS
                if (whole == cols) {
                    float sums[32];   /* F16_TILE_SUMS writes two vectors of sixteen, 4j + i the first 24 */
                    F16_TILE_SUMS(acc, sums);
                    for (int j = 0; j < nr; j++)
                        for (int i = 0; i < nt; i++) y[(t0 + i) * ystride + r0 + j] = sums[4 * j + i];
                    continue;
                }
#endif
                for (int j = 0; j < nr; j++)
                    for (int i = 0; i < nt; i++) y[(t0 + i) * ystride + r0 + j] = f16_row_end(acc[j][i], rw[j], xt[i], whole, cols);
            }
        }
    }
}
