/*
 * The loops of the kernels over "quads" (4 rows) and chunks of four 128-weight blocks, shared by every
 * instruction set and every 2-bit ternary layout: an ISA source defines ISA(name), VEC_I (a chunk's
 * exact dots, lane 4k + r for block k and row r of the quad), VEC_F4 with VEC_F4_ZERO / _LOAD / _ADD /
 * _STORE, then for a layout with prefix Q (t2p, tq2) defines
 *   Q_ACT                                   activation bytes per 128-block of an arranged column,
 *   Q_where(w, rows, rowBytes, blocks, g, j, p)  the code pointers of chunk j of quad g (padding: zeros)
 *                                           and how many of its blocks are real (jqk.h),
 *   Q_prefetch(p)                           prefetches the codes QUAD_AHEAD bytes past the chunk's (jqk.h),
 *   Q_chunk(p, m, a0, a1, two, &r0, &r1)    the chunk's sums against one or two columns' activations
 *                                           (a0, a1: the chunk's first block's; only m blocks' are read),
 *   Q_terms(r, p, sums4, xs4, terms)        terms[4k + r] = (float) dot * (d * xs),
 *   Q_dots(r, sums4, dots)                  dots[4k + r] = dot,
 * and includes this file with QUAD(name) naming its functions (Q_name) and QUAD_EXPORT the exported one. An arranged column holds Q_ACT bytes
 * per block of activations, then each block's sum of q four times (int32), then its scale four times.
 */

/* Columns per tile: a tile's arranged columns stay in L2 while every quad passes over them, and a
   quad's codes stay in L1 while the tile's columns do. */
#define QUAD_TILE 16
/* Quads whose terms are summed side by side: each row's sum is a chain of dependent additions in
   block order (the shared formula's); four independent chains hide their latency. (Four: the sums
   below are written out for four.) */
#define QUAD_GROUPS 4
/* Blocks whose terms are kept before they are summed (per quad and column: 1 KiB). */
#define QUAD_SPAN 64

/*
 * Quads [g0, g0 + n) (n <= QUAD_GROUPS) against one column, or two at once (two = 1: each chunk's codes
 * unpacked once for both): outputs y0[row], y1[row] for rows < rows, or with y0 NULL the dots
 * d0[row * blocks + b], d1[...].
 */
static inline __attribute__((always_inline)) void QUAD(groups)(const uint8_t *w, int32_t rows, int64_t rowBytes, int32_t blocks,
                                                               int32_t g0, int n, int two, const int8_t *c0, const int8_t *c1,
                                                               float *y0, float *y1, int32_t *d0, int32_t *d1) {
    float terms[2][QUAD_GROUPS][4 * QUAD_SPAN] __attribute__((aligned(64)));
    VEC_F4 acc[2][QUAD_GROUPS];
    for (int g = 0; g < QUAD_GROUPS; g++) acc[0][g] = acc[1][g] = VEC_F4_ZERO;
    const int32_t *s0 = (const int32_t *) (c0 + (int64_t) blocks * Q_ACT), *s1 = two ? (const int32_t *) (c1 + (int64_t) blocks * Q_ACT) : s0;
    const float *x0 = (const float *) (s0 + 4 * blocks), *x1 = (const float *) (s1 + 4 * blocks);
    for (int32_t b0 = 0; b0 < blocks; b0 += QUAD_SPAN) {
        int32_t span = blocks - b0 < QUAD_SPAN ? blocks - b0 : QUAD_SPAN;
        for (int g = 0; g < n; g++) {
            for (int32_t b = b0; b < b0 + span; b += 4) {
                const uint8_t *p[8];
                int m = QUAD(where)(w, rows, rowBytes, blocks, g0 + g, b / 4, p);
                QUAD(prefetch)(p);
                VEC_I r0, r1;
                QUAD(chunk)(p, m, c0 + (int64_t) b * Q_ACT, two ? c1 + (int64_t) b * Q_ACT : NULL, two, &r0, &r1);
                if (y0) {
                    QUAD(terms)(r0, p, s0 + 4 * b, x0 + 4 * b, terms[0][g] + 4 * (b - b0));
                    if (two) QUAD(terms)(r1, p, s1 + 4 * b, x1 + 4 * b, terms[1][g] + 4 * (b - b0));
                } else {
                    int32_t v[2][16];
                    QUAD(dots)(r0, s0 + 4 * b, v[0]);
                    if (two) QUAD(dots)(r1, s1 + 4 * b, v[1]);
                    for (int c = 0; c <= two; c++) {
                        for (int row = 0; row < 4 && 4 * (g0 + g) + row < rows; row++) {
                            int32_t *d = (c ? d1 : d0) + (int64_t) (4 * (g0 + g) + row) * blocks;
                            for (int k = 0; k < m; k++) d[b + k] = v[c][4 * k + row];
                        }
                    }
                }
            }
        }
        if (!y0) continue;
        for (int c = 0; c <= two; c++) {   /* four chains in registers (in an array, GCC kept them in memory) */
            VEC_F4 a0 = acc[c][0], a1 = acc[c][1], a2 = acc[c][2], a3 = acc[c][3];
            for (int32_t k = 0; k < span; k++) {
                a0 = VEC_F4_ADD(a0, VEC_F4_LOAD(terms[c][0] + 4 * k));
                a1 = VEC_F4_ADD(a1, VEC_F4_LOAD(terms[c][1] + 4 * k));
                a2 = VEC_F4_ADD(a2, VEC_F4_LOAD(terms[c][2] + 4 * k));
                a3 = VEC_F4_ADD(a3, VEC_F4_LOAD(terms[c][3] + 4 * k));
            }
            acc[c][0] = a0;
            acc[c][1] = a1;
            acc[c][2] = a2;
            acc[c][3] = a3;
        }
    }
    if (!y0) return;
    for (int g = 0; g < n; g++) {
        int32_t row = 4 * (g0 + g);
        if (row + 4 <= rows) {
            VEC_F4_STORE(y0 + row, acc[0][g]);
            if (two) VEC_F4_STORE(y1 + row, acc[1][g]);
        } else {
            float last[2][4];
            VEC_F4_STORE(last[0], acc[0][g]);
            VEC_F4_STORE(last[1], acc[1][g]);
            for (int r = 0; row + r < rows; r++) {
                y0[row + r] = last[0][r];
                if (two) y1[row + r] = last[1][r];
            }
        }
    }
}

/*
 * Rows [0, rows) of the matrix at w (rowBytes per row where the layout is row-major; blocks of 128
 * weights per row), against columns arranged as the layout's (jq_<layout>_arrange) at
 * act + c * blocks * (Q_ACT + 32): y[c * ystride + row] by the shared formula (blocks in ascending
 * order), or, when y is NULL, the exact dots dots[c * dstride + row * blocks + b].
 */
JQK_EXPORT void QUAD_EXPORT(const uint8_t *w, int32_t rows, int64_t rowBytes, int32_t blocks, int32_t columns, const int8_t *act,
                               float *y, int64_t ystride, int32_t *dots, int64_t dstride) {
    const int64_t column = (int64_t) blocks * (Q_ACT + 32);
    const int32_t quads = (rows + 3) / 4;
    for (int32_t t = 0; t < columns; t += QUAD_TILE) {
        int32_t end = columns - t < QUAD_TILE ? columns : t + QUAD_TILE;
        for (int32_t g = 0; g < quads; g += QUAD_GROUPS) {
            int n = quads - g < QUAD_GROUPS ? quads - g : QUAD_GROUPS;
            int32_t c = t;
            for (; c + 1 < end; c += 2) {
                QUAD(groups)(w, rows, rowBytes, blocks, g, n, 1, act + c * column, act + (c + 1) * column, y ? y + c * ystride : NULL,
                             y ? y + (c + 1) * ystride : NULL, y ? NULL : dots + c * dstride, y ? NULL : dots + (c + 1) * dstride);
            }
            if (c < end) {
                QUAD(groups)(w, rows, rowBytes, blocks, g, n, 0, act + c * column, NULL, y ? y + c * ystride : NULL, NULL,
                             y ? NULL : dots + c * dstride, NULL);
            }
        }
    }
}

#undef QUAD
#undef QUAD_EXPORT
#undef Q_ACT
