/*
 * Ternary prefill tiles (T2P and TQ2_0, AVX-512 VNNI): sixteen rows side by side in the lanes of one
 * register, so that no sum crosses lanes. In both layouts a code dword (four code bytes) belongs to one
 * row and holds, in each of its four 2-bit slots, four weights of consecutive k; so with the sixteen
 * rows' dwords of one place in a register, one vpdpbusd against a column's four activations broadcast
 * adds each row's four products in its own lane. The quad kernels (quad_drivers.h) instead lay one
 * row's codes across the lanes and fold the lanes after every chunk: in prefill the folding and the
 * arranged columns' loads cost more than the dot products.
 *
 * A call gathers each group of sixteen rows' dwords once into the caller's scratch (aligned to 64 bytes,
 * blocks × 576 bytes: TILE_PLACES places a block, row r in lane r, then the rows' scales as floats), then
 * runs every column past them, TILE_COLS columns at a time: each unpacked slot meets all of them. The
 * columns are plain (NativeTernaryMatrix lays them out): a block's 128 int8 activations in k order, then
 * every block's sum of q (int32), then every block's scale (float). Per row and column the integers are the
 * exact dots of the quad kernels and the floats their shared formula, y = Σ_b (float) dot_b · (d_b · s_b)
 * in ascending b from 0, with no fused multiply-add: the same bits.
 *
 * Included by x86_avx512.c, which defines ISA(name) and SLOT_MAP (with JQK_GFNI).
 */

#define TILE_ROWS 16
/* Columns each unpacked slot meets: their int32 sums stay in registers beside the slot (GCC keeps some of
   their float sums, added once a block, in memory). */
#define TILE_COLS 8
/* Places of code dwords in a 128-weight block of one row: 32 code bytes. */
#define TILE_PLACES 8

/* Slot s of every code byte as a value 0..3. */
static inline __attribute__((always_inline)) __m512i tile_slot(__m512i c, int s) {
#ifdef JQK_GFNI
    return _mm512_gf2p8affine_epi64_epi8(c, SLOT_MAP(s), 0);
#else
    return _mm512_and_si512(_mm512_srli_epi16(c, 2 * s), _mm512_set1_epi8(0x03));
#endif
}

/*
 * T2P: the dword at byte 8 + 64p + 16wd + 8rp + 4h of a block is row 2p + rp's; slot s holds weights
 * 32wd + 8s + 4h + 0..3 (T2pBlock). Place 2wd + h.
 */
static inline __attribute__((always_inline)) int t2p_tile_offset(int place, int s) { return 32 * (place / 2) + 8 * s + 4 * (place % 2); }

/* TQ2_0: in each 128-half of a block, the dword at byte 4m holds weights 32s + 4m + 0..3 in slot s. Place m. */
static inline __attribute__((always_inline)) int tq2_tile_offset(int place, int s) { return 32 * s + 4 * place; }

/*
 * Rows [row0, row0 + 16) of a T2P matrix (row groups of four from w, rows real rows): each block's
 * code dwords as codes[128 b + 16 place + lane] and scales as d[16 b + lane]; lanes past the last row zero.
 */
static void t2p_tile_gather(const uint8_t *w, int32_t rows, int64_t rowBytes, int32_t blocks, int32_t row0, uint32_t *codes, float *d) {
    (void) rowBytes;
    memset(codes, 0, (size_t) blocks * TILE_PLACES * TILE_ROWS * 4);
    memset(d, 0, (size_t) blocks * TILE_ROWS * 4);
    for (int gi = 0; gi < 4 && row0 + 4 * gi < rows; gi++) {
        const uint8_t *group = w + (int64_t) (row0 / 4 + gi) * blocks * T2P_BYTES;
        for (int32_t b = 0; b < blocks; b++) {
            const uint8_t *block = group + (int64_t) b * T2P_BYTES;
            for (int r = 0; r < 4; r++) d[TILE_ROWS * b + 4 * gi + r] = _cvtsh_ss(jqk_load16(block + 2 * r));
            for (int p = 0; p < 2; p++) {
                for (int wd = 0; wd < 4; wd++) {
                    for (int rp = 0; rp < 2; rp++) {
                        for (int h = 0; h < 2; h++) {
                            memcpy(codes + 128 * b + TILE_ROWS * (2 * wd + h) + 4 * gi + 2 * p + rp, block + T2P_CODES + 64 * p + 16 * wd + 8 * rp + 4 * h, 4);
                        }
                    }
                }
            }
        }
    }
}

/* The same for TQ2_0 rows (rowBytes each from w): 128-block b is half b % 2 of TQ2_0 block b / 2. */
static void tq2_tile_gather(const uint8_t *w, int32_t rows, int64_t rowBytes, int32_t blocks, int32_t row0, uint32_t *codes, float *d) {
    memset(codes, 0, (size_t) blocks * TILE_PLACES * TILE_ROWS * 4);
    memset(d, 0, (size_t) blocks * TILE_ROWS * 4);
    for (int lane = 0; lane < TILE_ROWS && row0 + lane < rows; lane++) {
        const uint8_t *row = w + (int64_t) (row0 + lane) * rowBytes;
        for (int32_t b = 0; b < blocks; b++) {
            const uint8_t *block = row + (int64_t) (b / 2) * TQ2_BYTES;
            d[TILE_ROWS * b + lane] = _cvtsh_ss(jqk_load16(block + TQ2_SCALE));
            for (int place = 0; place < TILE_PLACES; place++) memcpy(codes + 128 * b + TILE_ROWS * place + lane, block + 32 * (b % 2) + 4 * place, 4);
        }
    }
}

/*
 * Columns [c, c + TILE_COLS) of one group of sixteen rows (row0 on; `keep` masks the real rows) against plain columns
 * at act (column bytes apart), into y: CODES(b, place) points at the 64 code bytes of a block's place, SCALES(b)
 * gives the block's sixteen scales as floats, OFFSET(place, s) the block's activation a slot's dword meets.
 */
#define TILE_COLUMNS(CODES, SCALES, OFFSET)                                                                                              \
    do {                                                                                                                                \
        const int8_t *q[TILE_COLS];                                                                                                     \
        for (int j = 0; j < TILE_COLS; j++) q[j] = act + (c + j < columns ? c + j : columns - 1) * column;                             \
        __m512 f[TILE_COLS];                                                                                                            \
        for (int j = 0; j < TILE_COLS; j++) f[j] = _mm512_setzero_ps();                                                                \
        for (int32_t b = 0; b < blocks; b++) {                                                                                          \
            __m512i a[TILE_COLS];                                                                                                       \
            for (int j = 0; j < TILE_COLS; j++) a[j] = _mm512_setzero_si512();                                                         \
            for (int place = 0; place < TILE_PLACES; place++) {                                                                         \
                __m512i t = _mm512_loadu_si512(CODES(b, place));                                                                         \
                for (int s = 0; s < 4; s++) {                                                                                           \
                    __m512i u = tile_slot(t, s);                                                                                        \
                    int at = 128 * b + OFFSET(place, s);                                                                                \
                    for (int j = 0; j < TILE_COLS; j++) {                                                                               \
                        int32_t x;                                                                                                      \
                        memcpy(&x, q[j] + at, 4);                                                                                       \
                        a[j] = _mm512_dpbusd_epi32(a[j], u, _mm512_set1_epi32(x));                                                     \
                    }                                                                                                                   \
                }                                                                                                                       \
            }                                                                                                                           \
            __m512 db = SCALES(b);                                                                                                      \
            for (int j = 0; j < TILE_COLS; j++) {                                                                                       \
                const int32_t *sums = (const int32_t *) (q[j] + 128 * (int64_t) blocks);                                               \
                const float *scales = (const float *) (sums + blocks);                                                                  \
                __m512i dot = _mm512_sub_epi32(a[j], _mm512_set1_epi32(sums[b]));                                                      \
                f[j] = _mm512_add_ps(f[j], _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(db, _mm512_set1_ps(scales[b]))));      \
            }                                                                                                                           \
        }                                                                                                                               \
        for (int j = 0; j < TILE_COLS && c + j < columns; j++) _mm512_mask_storeu_ps(y + (c + j) * ystride + row0, keep, f[j]);        \
    } while (0)

#define GATHERED_CODES(b, place) (codes + 128 * (b) + TILE_ROWS * (place))
#define GATHERED_SCALES(b) _mm512_load_ps(d + TILE_ROWS * (b))

#define TILE_DEFINE(layout)                                                                                                             \
    JQK_EXPORT void ISA(jq_##layout##_tiles)(const uint8_t *w, int32_t rows, int64_t rowBytes, int32_t blocks, int32_t columns,        \
                                             const int8_t *act, float *y, int64_t ystride, uint32_t *codes) {                         \
        const int64_t column = (int64_t) blocks * (128 + 8);                                                                            \
        float *d = (float *) (codes + (int64_t) blocks * TILE_PLACES * TILE_ROWS);                                                      \
        for (int32_t row0 = 0; row0 < rows; row0 += TILE_ROWS) {                                                                        \
            layout##_tile_gather(w, rows, rowBytes, blocks, row0, codes, d);                                                          \
            __mmask16 keep = rows - row0 >= TILE_ROWS ? 0xFFFF : (__mmask16) ((1u << (rows - row0)) - 1);                             \
            for (int32_t c = 0; c < columns; c += TILE_COLS) TILE_COLUMNS(GATHERED_CODES, GATHERED_SCALES, layout##_tile_offset);    \
        }                                                                                                                               \
    }

TILE_DEFINE(t2p)
TILE_DEFINE(tq2)
#undef TILE_DEFINE

/*
 * T2P as stored sixteen-row tiles (R16), a copy the runtime makes once. Per group of sixteen rows with
 * `blocks` 128-weight blocks a row, blocks * R16_BYTES bytes:
 *
 *   byte 32b + 2r                    block b's fp16 scale of row r
 *   byte 32 blocks + 512b + 64p + 4r block b's place p, row r's code dword (t2p_tile_offset(p, s) is the
 *                                    block's activation its slot s meets), TILE_PLACES places a block
 *
 * zeros past the last row; the groups one after another: 34 bytes a 128 weights, as T2P. So decode and
 * prefill read each byte once, with no lanes to fold and nothing to gather: the tiles' sixteen rows in a
 * register's lanes, kept.
 */
#define R16_CODES_BYTES (TILE_PLACES * TILE_ROWS * 4)
#define R16_BYTES (R16_CODES_BYTES + 2 * TILE_ROWS)

/* The R16 copy of a T2P matrix of `rows` rows (a multiple of four) and `blocks` blocks a row, into dst. */
JQK_EXPORT void ISA(jq_t2p_r16)(const uint8_t *w, int32_t rows, int32_t blocks, uint8_t *dst) {
    for (int32_t row0 = 0; row0 < rows; row0 += TILE_ROWS) {
        uint8_t *group = dst + (int64_t) (row0 / TILE_ROWS) * blocks * R16_BYTES;
        memset(group, 0, (size_t) blocks * R16_BYTES);
        for (int gi = 0; gi < 4 && row0 + 4 * gi < rows; gi++) {
            const uint8_t *quad = w + (int64_t) (row0 / 4 + gi) * blocks * T2P_BYTES;
            for (int32_t b = 0; b < blocks; b++) {
                const uint8_t *block = quad + (int64_t) b * T2P_BYTES;
                uint8_t *out = group + 2 * TILE_ROWS * (int64_t) blocks + (int64_t) b * R16_CODES_BYTES;
                memcpy(group + 2 * TILE_ROWS * b + 8 * gi, block, 8);
                for (int place = 0; place < TILE_PLACES; place++) {
                    for (int p = 0; p < 2; p++) {
                        for (int rp = 0; rp < 2; rp++) {
                            /* T2P: the dword at byte 8 + 64p + 16wd + 8rp + 4h is row 2p + rp's, place 2wd + h */
                            memcpy(out + 64 * place + 4 * (4 * gi + 2 * p + rp),
                                   block + T2P_CODES + 64 * p + 16 * (place / 2) + 8 * rp + 4 * (place % 2), 4);
                        }
                    }
                }
            }
        }
    }
}

/* The four activations slot s of a place's dwords meets, in every lane. */
static inline __attribute__((always_inline)) __m512i r16_activations(const int8_t *x, int place, int s) {
    int32_t v;
    memcpy(&v, x + t2p_tile_offset(place, s), 4);
    return _mm512_set1_epi32(v);
}

#define R16_CODES(b, place) (r16 + 2 * TILE_ROWS * (int64_t) blocks + (int64_t) (b) * R16_CODES_BYTES + 64 * (place))
#define R16_SCALES_OF(b) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (r16 + 2 * TILE_ROWS * (b))))

/* How far ahead of its codes each stream of the decode kernel prefetches: 4 KiB beat the quad kernels' 8, and 2,
   in a C harness of a token's products (bench/RESULTS.md). */
#define R16_AHEAD 4096

/*
 * One place's code dwords (t) against the four activations each of its slots meets, into four sums: slot s
 * kept in place by a mask (4^s times its value 0..3, an unsigned byte up to 192), so each slot costs one
 * vpandd where the slot unpacker costs a vgf2p8affineqb (the decode kernel from L1 1.10-1.13 times as fast,
 * bench/RESULTS.md); r16_dot shifts the sums back down.
 */
#define R16_PLACE(t, x, place, a0, a1, a2, a3)                                                                                   \
    do {                                                                                                                         \
        a0 = _mm512_dpbusd_epi32(a0, _mm512_and_si512(t, _mm512_set1_epi8(0x03)), r16_activations(x, place, 0));                \
        a1 = _mm512_dpbusd_epi32(a1, _mm512_and_si512(t, _mm512_set1_epi8(0x0C)), r16_activations(x, place, 1));                \
        a2 = _mm512_dpbusd_epi32(a2, _mm512_and_si512(t, _mm512_set1_epi8(0x30)), r16_activations(x, place, 2));                \
        a3 = _mm512_dpbusd_epi32(a3, _mm512_and_si512(t, _mm512_set1_epi8((char) 0xC0)), r16_activations(x, place, 3));         \
    } while (0)

/* A block's sixteen exact dots from its slots' sums (each 4^s times slot s's: exact multiples, so the shifts are
   exact), added to f by the shared formula with the block's scales from the group's head. */
static inline __attribute__((always_inline)) __m512 r16_dot(__m512i a0, __m512i a1, __m512i a2, __m512i a3, const uint8_t *group, int32_t b,
                                                            int32_t sum, float scale, __m512 f) {
    __m512i slots = _mm512_add_epi32(_mm512_add_epi32(a0, _mm512_srai_epi32(a1, 2)), _mm512_add_epi32(_mm512_srai_epi32(a2, 4), _mm512_srai_epi32(a3, 6)));
    __m512i dot = _mm512_sub_epi32(slots, _mm512_set1_epi32(sum));
    __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (group + 2 * TILE_ROWS * b)));
    return _mm512_add_ps(f, _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(d, _mm512_set1_ps(scale))));
}

/*
 * Block b of an R16 group (first), and with `two` of a second group beside it, against one plain column (x its
 * block's activations, sum and scale the column's block sum and scale), added to f (and h). The two groups go
 * place by place together, so that each slot's activations are broadcast once for both and live only briefly
 * (a block of one group after the other's, GCC kept the 32 broadcasts for the second and spilled them to the
 * stack: the kernel from L1 1.16-1.19 times slower). Each group's four slot sums are named registers (as an array in a
 * rolled loop GCC kept them moving between registers). The codes are prefetched R16_AHEAD bytes ahead in each
 * group, the scales (1/17 of the bytes) at the group's start (r16_scales_ahead).
 */
static inline __attribute__((always_inline)) void r16_blocks(const uint8_t *first, const uint8_t *second, int two, int32_t blocks, int32_t b,
                                                             const int8_t *x, int32_t sum, float scale, __m512 *f, __m512 *h) {
    const uint8_t *p = first + 2 * TILE_ROWS * (int64_t) blocks + (int64_t) b * R16_CODES_BYTES;
    const uint8_t *q = two ? second + 2 * TILE_ROWS * (int64_t) blocks + (int64_t) b * R16_CODES_BYTES : p;
    for (int l = 0; l < R16_CODES_BYTES; l += 64) {
        JQK_PREFETCH_NTA(p + R16_AHEAD + l);
        if (two) JQK_PREFETCH_NTA(q + R16_AHEAD + l);
    }
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, c0 = a0, c1 = a0, c2 = a0, c3 = a0;
    _Pragma("GCC unroll 8")
    for (int place = 0; place < TILE_PLACES; place++) {
        R16_PLACE(_mm512_loadu_si512(p + 64 * place), x, place, a0, a1, a2, a3);
        if (two) R16_PLACE(_mm512_loadu_si512(q + 64 * place), x, place, c0, c1, c2, c3);
    }
    *f = r16_dot(a0, a1, a2, a3, first, b, sum, scale, *f);
    if (two) *h = r16_dot(c0, c1, c2, c3, second, b, sum, scale, *h);
}

/*
 * A group's scale lines into L1 before its first block: each block reads its scales from the group's head, so without
 * this a stream runs back to its head at every other block, and the lines the code prefetch brought in with the
 * non-temporal hint have left L1 by then. With it the stream runs forward, and decode on the 1.1B bench model ran
 * 1.07-1.10 times as fast on one and on two threads (the same model and pool switched between the two, 100 rounds;
 * bench/RESULTS.md).
 */
static inline __attribute__((always_inline)) void r16_scales_ahead(const uint8_t *group, int32_t blocks) {
    for (int32_t l = 0; l < 2 * TILE_ROWS * blocks; l += 64) JQK_PREFETCH_L1(group + l);
}

/* Where group g's sixteen outputs go: all of them, or those of rows below `rows`. */
static inline __attribute__((always_inline)) void r16_store(float *y, int32_t rows, int32_t g, __m512 f) {
    int32_t row0 = TILE_ROWS * g;
    __mmask16 keep = rows - row0 >= TILE_ROWS ? 0xFFFF : (__mmask16) ((1u << (rows - row0)) - 1);
    _mm512_mask_storeu_ps(y + row0, keep, f);
}

/*
 * Rows [0, rows) of an R16 copy (jq_t2p_r16; from its first group) against `columns` plain columns at act
 * (jq_t2p_tiles' form), y[c * ystride + row] by the shared formula: the quad kernels' bits. One column (decode)
 * reads two streams: group i of the call's first half of groups beside group i of its second, block by
 * block (r16_blocks), so that a core keeps the lines of two streams in flight (one stream read from memory about
 * as fast as a plain read of one stream, which is slower than of two: 1.10–1.21 times as fast in a C harness of a
 * token's products; four streams were slower on two threads, bench/RESULTS.md). Each group's sums are those of it
 * alone. More columns run TILE_COLS at a time, as the tiles.
 */
JQK_EXPORT void ISA(jq_t2p_r16_multiply)(const uint8_t *r16, int32_t rows, int32_t blocks, int32_t columns, const int8_t *act,
                                          float *y, int64_t ystride) {
    const int64_t column = (int64_t) blocks * (128 + 8), groupBytes = (int64_t) blocks * R16_BYTES;
    if (columns > 1) {
        for (int32_t row0 = 0; row0 < rows; row0 += TILE_ROWS, r16 += groupBytes) {
            __mmask16 keep = rows - row0 >= TILE_ROWS ? 0xFFFF : (__mmask16) ((1u << (rows - row0)) - 1);
            for (int32_t c = 0; c < columns; c += TILE_COLS) TILE_COLUMNS(R16_CODES, R16_SCALES_OF, t2p_tile_offset);
        }
        return;
    }
    const int32_t *sums = (const int32_t *) (act + 128 * (int64_t) blocks);
    const float *scales = (const float *) (sums + blocks);
    const int32_t groups = (rows + TILE_ROWS - 1) / TILE_ROWS, half = groups / 2;
    for (int32_t i = 0; i < half; i++) {
        const uint8_t *first = r16 + i * groupBytes, *second = r16 + (half + i) * groupBytes;
        __m512 f = _mm512_setzero_ps(), h = f;
        r16_scales_ahead(first, blocks);
        r16_scales_ahead(second, blocks);
        for (int32_t b = 0; b < blocks; b++) r16_blocks(first, second, 1, blocks, b, act + 128 * (int64_t) b, sums[b], scales[b], &f, &h);
        r16_store(y, rows, i, f);
        r16_store(y, rows, half + i, h);
    }
    if (groups % 2 != 0) {
        const uint8_t *last = r16 + (groups - 1) * groupBytes;
        __m512 f = _mm512_setzero_ps();
        r16_scales_ahead(last, blocks);
        for (int32_t b = 0; b < blocks; b++) r16_blocks(last, NULL, 0, blocks, b, act + 128 * (int64_t) b, sums[b], scales[b], &f, NULL);
        r16_store(y, rows, groups - 1, f);
    }
}

/*
 * One column quantized straight into the plain form the tiles and the sixteen-row copy take (blocks·128 int8
 * values, then each block's int32 sum of them, then each block's float scale): per 128-block scale = max|x| / 127,
 * q = x / scale rounded to the nearest, ties to even (every q zero where the scale is zero), the bits of
 * jquant.runtime.ternary.ActivationBlocks#quantize, which a decode step's caller otherwise spends ~1.4 µs on for
 * 2,048 values while the other threads wait. Returns -1, or the index of the first value that is not finite (out
 * then undefined).
 */
JQK_EXPORT int64_t ISA(jq_quantize_plain)(const float *x, int32_t blocks, int8_t *out) {
    int32_t *sums = (int32_t *) (out + 128 * (int64_t) blocks);
    float *scales = (float *) (sums + blocks);
    const __m512i exponent = _mm512_set1_epi32(0x7F800000);
    for (int32_t b = 0; b < blocks; b++) {
        const float *xb = x + 128 * (int64_t) b;
        __m512 peak = _mm512_setzero_ps();
        __mmask16 infinite = 0;
        for (int i = 0; i < 128; i += 16) {
            __m512 v = _mm512_loadu_ps(xb + i);
            infinite |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(v), exponent), exponent);
            peak = _mm512_max_ps(peak, _mm512_abs_ps(v));
        }
        if (infinite) {
            for (int i = 0; i < 128; i++) {
                uint32_t bits;
                memcpy(&bits, xb + i, 4);
                if ((bits & 0x7F800000u) == 0x7F800000u) return 128 * (int64_t) b + i;
            }
        }
        float scale = _mm512_reduce_max_ps(peak) / 127.0f;
        scales[b] = scale;
        int8_t *q = out + 128 * (int64_t) b;
        if (scale == 0.0f) {
            memset(q, 0, 128);
            sums[b] = 0;
            continue;
        }
        /* x / scale + 1.5·2^23 rounds to the nearest integer, ties to even, held in the float's low mantissa bits */
        const __m512 s = _mm512_set1_ps(scale), round = _mm512_set1_ps(0x1.8p23f);
        const __m512i roundBits = _mm512_castps_si512(round);
        __m512i sum = _mm512_setzero_si512();
        for (int i = 0; i < 128; i += 16) {
            __m512i r = _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_ps(_mm512_div_ps(_mm512_loadu_ps(xb + i), s), round)), roundBits);
            _mm_storeu_si128((__m128i *) (q + i), _mm512_cvtepi32_epi8(r));
            sum = _mm512_add_epi32(sum, r);
        }
        sums[b] = _mm512_reduce_add_epi32(sum);
    }
    return -1;
}
