/*
 * EdgeFlow weightlets (jquant.formats.weightlet.WeightletLayout): a channel of B-bit fields (B = 1..8) in groups of
 * 128 weights, 16·B bytes a group; a field is split into planes of 1, 2 or 4 bits (the narrower plane
 * more significant, stored first), a plane of width b is b blocks of 16 bytes, and stripe s (weights
 * 16s .. 16s+15 of the group) sits in block s / (8/b), slot s % (8/b) counted from the top bits. The
 * int8 weight is 2f − (2^B − 1) below 8 bits and f − 127 at 8. A row's short last group (S < 8 stripes,
 * rows of small models) keeps only the blocks its stripes fill, ceil(S·b/8) of a b-bit plane.
 *
 * Included by each ISA source: the stripe unpacker is written once with GCC vector extensions, which
 * each target's flags compile to its own instructions (SSE/AVX on x86, NEON on arm64); an ISA may
 * define WL_GROUP as its own unpacker of a group (AVX-512: four stripes per register).
 */
typedef uint8_t u8x16 __attribute__((vector_size(16)));

/* Stripe s of plane (width b, byte offset) of the group at g, as field bits at their place (shift). */
static inline __attribute__((always_inline)) u8x16 wl_plane(const uint8_t *g, int b, int offset, int shift, int s) {
    int per = 8 / b, slot = s % per;
    u8x16 v;
    memcpy(&v, g + offset + 16 * (s / per), 16);
    return ((v >> (8 - b * (slot + 1))) & (uint8_t) ((1 << b) - 1)) << shift;
}

/* The int8 weights of stripe s of a B-bit group at g. */
static inline __attribute__((always_inline)) u8x16 wl_stripe(const uint8_t *g, int B, int s) {
    u8x16 f;
    switch (B) {
        case 1: f = wl_plane(g, 1, 0, 0, s); break;
        case 2: f = wl_plane(g, 2, 0, 0, s); break;
        case 3: f = wl_plane(g, 1, 0, 2, s) | wl_plane(g, 2, 16, 0, s); break;
        case 4: f = wl_plane(g, 4, 0, 0, s); break;
        case 5: f = wl_plane(g, 1, 0, 4, s) | wl_plane(g, 4, 16, 0, s); break;
        case 6: f = wl_plane(g, 2, 0, 4, s) | wl_plane(g, 4, 32, 0, s); break;
        case 7: f = wl_plane(g, 1, 0, 6, s) | wl_plane(g, 2, 16, 4, s) | wl_plane(g, 4, 48, 0, s); break;
        default: return (wl_plane(g, 4, 0, 4, s) | wl_plane(g, 4, 64, 0, s)) - (uint8_t) 127;
    }
    return (f << 1) - (uint8_t) ((1 << B) - 1);
}

/* The 128 int8 weights of a B-bit group at g into v (the switch on B taken once per group). */
static inline __attribute__((always_inline)) void wl_group_of(const uint8_t *g, int B, int8_t *v) {
    /* unrolled, every shift is a constant: left as a loop, GCC shifted bytes by a count in a register,
       widening each stripe to 16-bit lanes and back (the weight-only decode ran at a third of the Java one) */
#pragma GCC unroll 8
    for (int s = 0; s < 8; s++) {
        u8x16 w = wl_stripe(g, B, s);
        memcpy(v + 16 * s, &w, 16);
    }
}

#ifndef WL_GROUP
#define WL_GROUP wl_group
static void wl_group(const uint8_t *g, int B, int8_t *v) {
    switch (B) {
        case 1: wl_group_of(g, 1, v); break;
        case 2: wl_group_of(g, 2, v); break;
        case 3: wl_group_of(g, 3, v); break;
        case 4: wl_group_of(g, 4, v); break;
        case 5: wl_group_of(g, 5, v); break;
        case 6: wl_group_of(g, 6, v); break;
        case 7: wl_group_of(g, 7, v); break;
        default: wl_group_of(g, 8, v); break;
    }
}
#endif

/* Plane widths of a B-bit field, most significant first (0 ends the list). */
static const uint8_t WL_PLANES[9][4] = {{0}, {1}, {2}, {1, 2}, {4}, {1, 4}, {2, 4}, {1, 2, 4}, {4, 4}};

/* A short group of S stripes at g spread to a whole group's places in `whole`, the dropped blocks zero. */
static const uint8_t *wl_whole(const uint8_t *g, int B, int S, uint8_t *whole) {
    memset(whole, 0, 128);
    int from = 0, to = 0;
    for (int p = 0; WL_PLANES[B][p]; p++) {
        int b = WL_PLANES[B][p], kept = 16 * ((S * b + 7) / 8);
        memcpy(whole + to, g + from, kept);
        from += kept;
        to += 16 * b;
    }
    return whole;
}

/*
 * NPU decode (NpuInt8Weights): y[r] = (float) (w_r · xq) · (inputScale · scale[r]), the integer dot
 * exact: the ISA's WL_IACC holds int32 partial sums across a row's groups, reduced once per row
 * (WL_IACC_SUM); a row's dot is at most length · 127 · 127 in magnitude, within int32 for rows of up to
 * 133,000 weights, and a lane's partial sums stay below that.
 * xq is padded with zeros to whole groups. The ISA defines wl_dot(acc, v, xq), which adds the
 * products of 128 int8 weights with 128 int8 activations.
 */
JQK_EXPORT void ISA(jq_wl_npu)(const uint8_t *data, const int64_t *offsets, const int32_t *bits, int32_t rows, int32_t length,
                               const int8_t *xq, float inputScale, const float *scales, float *y) {
    int32_t groups = (length + 127) / 128, lastStripes = (length - 128 * (groups - 1) + 15) / 16;
    int8_t v[128] __attribute__((aligned(64)));
    uint8_t whole[128] __attribute__((aligned(64)));
    for (int32_t r = 0; r < rows; r++) {
        WL_IACC acc = WL_IACC_ZERO;
        for (int32_t g = 0; g < groups; g++) {
            const uint8_t *at = data + offsets[r] + (int64_t) g * 16 * bits[r];
            if (g == groups - 1 && lastStripes < 8) at = wl_whole(at, bits[r], lastStripes, whole);
            WL_GROUP(at, bits[r], v);
            acc = wl_dot(acc, v, xq + 128 * g);
        }
        y[r] = (float) WL_IACC_SUM(acc) * (inputScale * scales[r]);
    }
}
