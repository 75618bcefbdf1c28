/*
 * The T2P kernels' loops, shared by every instruction set: included by each ISA source after it
 * defines ISA(name), VEC_I (a chunk's exact dots: four blocks x four rows), VEC_F4 with
 * VEC_F4_ZERO / _LOAD / _ADD / _STORE (four rows' float sums), and over them
 *   t2p_chunk(blk, act0, act1, two, &r0, &r1)  the sums of u * q of a chunk of four blocks,
 *   t2p_terms(r, blk, sums4, xs4, terms)       terms[4i + r] = (float) (dot) * (d * xs) of block i, row r,
 *   t2p_dots(r, sums4, dots)                   dots[4i + r] = dot of block i, row r.
 */

/* Columns per tile: a tile's arranged columns (18 KiB per 1,024 inputs) stay in L2 while every row
   group passes over them, and a row group's codes stay in L1 while the tile's columns do. */
#define T2P_TILE 16
/* Row groups whose terms are summed side by side: the sums are chains of dependent additions in block
   order (the shared formula's), four independent chains hide their latency. */
#define T2P_GROUPS 4
/* Blocks whose terms are kept before they are summed (per group and column: 1 KiB). */
#define T2P_SPAN 64

/* Padding past a matrix's last block: zero codes and zero scales add nothing. */
static const uint8_t t2p_zero_block[T2P_BYTES] __attribute__((aligned(64)));

/*
 * Row groups [g0, g0 + n) (n <= T2P_GROUPS) against one column, or two at once (two = 1: each
 * block's codes unpacked once for both): their outputs y0[row], y1[row], or with y0 NULL their dots
 * d0[row * blocks + b], d1[...].
 */
static inline __attribute__((always_inline)) void t2p_groups(const uint8_t *w, int32_t g0, int n, int32_t blocks, int two,
                                                             const int8_t *c0, const int8_t *c1, float *y0, float *y1,
                                                             int32_t *d0, int32_t *d1) {
    float terms[2][T2P_GROUPS][4 * T2P_SPAN] __attribute__((aligned(64)));
    VEC_F4 acc[2][T2P_GROUPS];
    for (int g = 0; g < T2P_GROUPS; g++) acc[0][g] = acc[1][g] = VEC_F4_ZERO;
    const int32_t *s0 = (const int32_t *) (c0 + (int64_t) blocks * T2P_ACT), *s1 = two ? (const int32_t *) (c1 + (int64_t) blocks * T2P_ACT) : s0;
    const float *x0 = (const float *) (s0 + 4 * blocks), *x1 = (const float *) (s1 + 4 * blocks);
    for (int32_t b0 = 0; b0 < blocks; b0 += T2P_SPAN) {
        int32_t span = blocks - b0 < T2P_SPAN ? blocks - b0 : T2P_SPAN;
        for (int g = 0; g < n; g++) {
            const uint8_t *group = w + (int64_t) (g0 + g) * blocks * T2P_BYTES;
            for (int32_t b = b0; b < b0 + span; b += 4) {
                int m = blocks - b < 4 ? blocks - b : 4;
                const uint8_t *blk[4];
                const int8_t *a0[4], *a1[4];
                for (int i = 0; i < 4; i++) {
                    int at = i < m ? b + i : b;
                    blk[i] = i < m ? group + (int64_t) at * T2P_BYTES : t2p_zero_block;
                    a0[i] = c0 + (int64_t) at * T2P_ACT;
                    a1[i] = two ? c1 + (int64_t) at * T2P_ACT : a0[i];
                }
                VEC_I r0, r1;
                t2p_chunk(blk, a0, a1, two, &r0, &r1);
                if (y0) {
                    t2p_terms(r0, blk, s0 + 4 * b, x0 + 4 * b, terms[0][g] + 4 * (b - b0));
                    if (two) t2p_terms(r1, blk, s1 + 4 * b, x1 + 4 * b, terms[1][g] + 4 * (b - b0));
                } else {
                    int32_t v[2][16];
                    t2p_dots(r0, s0 + 4 * b, v[0]);
                    if (two) t2p_dots(r1, s1 + 4 * b, v[1]);
                    for (int c = 0; c <= two; c++) {
                        int32_t *d = (c ? d1 : d0) + (int64_t) 4 * (g0 + g) * blocks;
                        for (int i = 0; i < m; i++) for (int row = 0; row < 4; row++) d[(int64_t) row * blocks + b + i] = v[c][4 * i + row];
                    }
                }
            }
        }
        if (!y0) continue;
        for (int32_t i = 0; i < span; i++) {
            for (int c = 0; c <= two; c++) {
                for (int g = 0; g < T2P_GROUPS; g++) acc[c][g] = VEC_F4_ADD(acc[c][g], VEC_F4_LOAD(terms[c][g] + 4 * i));
            }
        }
    }
    if (!y0) return;
    for (int g = 0; g < n; g++) {
        VEC_F4_STORE(y0 + 4 * (g0 + g), acc[0][g]);
        if (two) VEC_F4_STORE(y1 + 4 * (g0 + g), acc[1][g]);
    }
}

/*
 * Rows 4g .. 4g+3 of the row groups g < groups at w (blocks per row group), against columns arranged
 * by jq_t2p_arrange at act + c * blocks * T2P_COLUMN: y[c * ystride + row] by the shared formula
 * (blocks in ascending order), or, when y is NULL, the exact dots dots[c * dstride + row * blocks + b].
 */
JQK_EXPORT void ISA(jq_t2p_multiply)(const uint8_t *w, int32_t groups, int32_t blocks, int32_t columns, const int8_t *act,
                                    float *y, int64_t ystride, int32_t *dots, int64_t dstride) {
    const int64_t column = (int64_t) blocks * T2P_COLUMN;
    for (int32_t t = 0; t < columns; t += T2P_TILE) {
        int32_t end = columns - t < T2P_TILE ? columns : t + T2P_TILE;
        for (int32_t g = 0; g < groups; g += T2P_GROUPS) {
            int n = groups - g < T2P_GROUPS ? groups - g : T2P_GROUPS;
            int32_t c = t;
            for (; c + 1 < end; c += 2) {
                t2p_groups(w, g, n, blocks, 1, act + c * column, act + (c + 1) * column, y ? y + c * ystride : NULL,
                           y ? y + (c + 1) * ystride : NULL, y ? NULL : dots + c * dstride, y ? NULL : dots + (c + 1) * dstride);
            }
            if (c < end) {
                t2p_groups(w, g, n, blocks, 0, act + c * column, NULL, y ? y + c * ystride : NULL, NULL,
                           y ? NULL : dots + c * dstride, NULL);
            }
        }
    }
}
