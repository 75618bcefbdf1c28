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
#define WL_GROUP_OF wl_group_of
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

/* Groups unpacked per step of the decode kernels: the switch on a row's width is taken once per step
   (taken per group, a call and an indirect jump per 128 weights cost a third of the weight-only kernel's time). */
#define WL_SPAN 8

/* The count whole B-bit groups from g into v, the switch on B outside the loop. */
static void wl_groups(const uint8_t *g, int B, int count, int8_t *v) {
#define WL_GROUPS_OF(b) for (int i = 0; i < count; i++) WL_GROUP_OF(g + 16 * (b) * i, b, v + 128 * i); break
    switch (B) {
        case 1: WL_GROUPS_OF(1);
        case 2: WL_GROUPS_OF(2);
        case 3: WL_GROUPS_OF(3);
        case 4: WL_GROUPS_OF(4);
        case 5: WL_GROUPS_OF(5);
        case 6: WL_GROUPS_OF(6);
        case 7: WL_GROUPS_OF(7);
        default: WL_GROUPS_OF(8);
    }
#undef WL_GROUPS_OF
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
    int32_t whole = lastStripes < 8 ? groups - 1 : groups;
    int8_t v[128 * WL_SPAN] __attribute__((aligned(64)));
    uint8_t spread[128] __attribute__((aligned(64)));
#ifdef WL_UDOTS
    /* the ISA's WL_UDOTS sums (v + 128) · xq over whole groups: 128 · Σ xq of those groups comes off each row */
    uint32_t offset = 0;
    for (int32_t k = 0; k < 128 * whole; k++) offset += 128u * (uint32_t) (int32_t) xq[k];
#endif
    for (int32_t r = 0; r < rows; r++) {
        WL_IACC acc = WL_IACC_ZERO;
        for (int32_t g0 = 0; g0 < groups; g0 += WL_SPAN) {
            int32_t count = groups - g0 < WL_SPAN ? groups - g0 : WL_SPAN, full = whole - g0 < count ? whole - g0 : count;
            const uint8_t *at = data + offsets[r] + (int64_t) g0 * 16 * bits[r];
            for (int32_t l = 0; l < full * 16 * bits[r]; l += 64) JQK_PREFETCH_L2(at + QUAD_AHEAD + l);
#ifdef WL_UDOTS
            acc = WL_UDOTS(at, bits[r], full, xq + 128 * g0, acc);
            if (full < count) {
                WL_GROUP(wl_whole(at + (int64_t) full * 16 * bits[r], bits[r], lastStripes, spread), bits[r], v);
                acc = wl_dot(acc, v, xq + 128 * (g0 + full));
            }
#else
            wl_groups(at, bits[r], full, v);
            if (full < count) WL_GROUP(wl_whole(at + (int64_t) full * 16 * bits[r], bits[r], lastStripes, spread), bits[r], v + 128 * full);
            for (int32_t i = 0; i < count; i++) acc = wl_dot(acc, v + 128 * i, xq + 128 * (g0 + i));
#endif
        }
#ifdef WL_UDOTS
        /* modulo 2^32: the sum with the offset may pass int32, the row's dot does not */
        y[r] = (float) (int32_t) ((uint32_t) WL_IACC_SUM(acc) - offset) * (inputScale * scales[r]);
#else
        y[r] = (float) WL_IACC_SUM(acc) * (inputScale * scales[r]);
#endif
    }
}

/*
 * Weight-only decode (WeightletWeights): y[r] = (w_r · x) · scales[r], w_r · x in the runtime's float
 * summation order (chains.h) over the int8 weights as floats, so the Java layer's bits. Four rows at a
 * time, WL_SPAN groups per step: each row's groups unpacked into L1, then the four rows' chains
 * continued over them, each activation vector loaded once for the four. A row's weights past its last
 * whole vector (a length not a multiple of FV_LANES) go one at a time into chain k mod FV_LANES; a row
 * past the last repeats the first and is not written.
 */
JQK_EXPORT void ISA(jq_wl_f32)(const uint8_t *data, const int64_t *offsets, const int32_t *bits, int32_t rows, int32_t length,
                               const float *x, const float *scales, float *y) {
    int32_t groups = (length + 127) / 128, last = length - 128 * (groups - 1), lastStripes = (last + 15) / 16;
    int32_t lastWhole = last / FV_LANES * FV_LANES, whole = lastStripes < 8 ? groups - 1 : groups;
    int8_t v[4][128 * WL_SPAN] __attribute__((aligned(64)));
    uint8_t spread[128] __attribute__((aligned(64)));
    for (int32_t r0 = 0; r0 < rows; r0 += 4) {
        int n = rows - r0 < 4 ? rows - r0 : 4;
        int32_t r[4];
        for (int j = 0; j < 4; j++) r[j] = r0 + (j < n ? j : 0);
        FV acc[4];
        for (int j = 0; j < 4; j++) acc[j] = FV_ZERO;
        int32_t tail = 0;   /* where the last group's weights start in v */
        for (int32_t g0 = 0; g0 < groups; g0 += WL_SPAN) {
            int32_t count = groups - g0 < WL_SPAN ? groups - g0 : WL_SPAN, full = whole - g0 < count ? whole - g0 : count;
            for (int j = 0; j < 4; j++) {
                const uint8_t *at = data + offsets[r[j]] + (int64_t) g0 * 16 * bits[r[j]];
                for (int32_t l = 0; l < full * 16 * bits[r[j]]; l += 64) JQK_PREFETCH_L2(at + QUAD_AHEAD + l);
                wl_groups(at, bits[r[j]], full, v[j]);
                if (full < count) WL_GROUP(wl_whole(at + (int64_t) full * 16 * bits[r[j]], bits[r[j]], lastStripes, spread), bits[r[j]], v[j] + 128 * full);
            }
            int32_t span = g0 + count == groups ? 128 * (count - 1) + lastWhole : 128 * count;
#define WL_ROW(j, k) FV_I8(v[j] + (k))
            FV_CHAINS(span, x + 128 * g0, acc, WL_ROW, FV_NO_AHEAD);
#undef WL_ROW
            tail = 128 * (count - 1);
        }
        for (int j = 0; j < n; j++) {
            float chains[FV_LANES];
            FV_STORE(chains, acc[j]);
            for (int32_t k = lastWhole; k < last; k++) {
                chains[k % FV_LANES] = __builtin_fmaf((float) v[j][tail + k], x[128 * (groups - 1) + k], chains[k % FV_LANES]);
            }
            y[r0 + j] = lane_sum(FV_LOAD(chains)) * scales[r0 + j];
        }
    }
}
