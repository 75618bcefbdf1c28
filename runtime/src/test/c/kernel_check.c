/*
 * The native kernels of one instruction set (SUFFIX, with LANES float lanes) on seeded data, checked
 * bit for bit against plain loops written here: T2P and TQ2_0 dots and floats (the shared formula,
 * which does not depend on the lanes), float16, Q4_0 and weight-only weightlet rows by LANES fused
 * multiply-add chains, npu weightlet rows (exact integer dots), llama.cpp's block types times quantized activations (the integer block kernels' formula),
 * and attention's scores and weighted sums (LANES chains, as the Java vector kernels at that width). The
 * Java oracle tests cover the x86 instruction sets in ./run-tests; this program is how the arm64
 * (NEON) kernels are run on an x86 machine, under qemu (scripts/check-arm64-kernels). Exit 0 when all
 * are equal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#ifndef SUFFIX
#define SUFFIX neon
#endif
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define K(name) CAT(name, SUFFIX)
void jq_t2p_arrange(const int8_t *q, const int32_t *sums, const float *scales, int32_t blocks, int8_t *column);
void jq_tq2_arrange(const int8_t *q, const int32_t *sums, const float *scales, int32_t blocks, int8_t *column);
void K(jq_t2p_multiply_)(const uint8_t *w, int32_t rows, int64_t rowBytes, int32_t blocks, int32_t columns, const int8_t *act, float *y, int64_t ystride, int32_t *dots, int64_t dstride);
void K(jq_tq2_multiply_)(const uint8_t *w, int32_t rows, int64_t rowBytes, int32_t blocks, int32_t columns, const int8_t *act, float *y, int64_t ystride, int32_t *dots, int64_t dstride);
void K(jq_rows_f16_)(const uint8_t *w, int64_t rowBytes, int32_t rows, int32_t cols, const float *x, float *y);
void K(jq_tiles_f16_)(const uint8_t *w, int64_t rowBytes, int32_t rows, int32_t cols, const float *x, int32_t tokens, float *y, int64_t ystride);
void K(jq_wl_npu_)(const uint8_t *data, const int64_t *offsets, const int32_t *bits, int32_t rows, int32_t length, const int8_t *xq,
                   float inputScale, const float *scales, float *y);
void K(jq_wl_f32_)(const uint8_t *data, const int64_t *offsets, const int32_t *bits, int32_t rows, int32_t length, const float *x,
                   const float *scales, float *y);
void K(jq_rows_q4_0_)(const uint8_t *w, int64_t rowBytes, int32_t rows, int32_t cols, const float *x, float *y);
typedef void (*gg_kernel)(const uint8_t *w, int64_t rowBytes, int32_t rows, int32_t cols, int32_t columns, const int8_t *q, const float *d,
                          const int16_t *sums, float *y, int64_t ystride);
void K(jq_gg_q8_0_)(const uint8_t *, int64_t, int32_t, int32_t, int32_t, const int8_t *, const float *, const int16_t *, float *, int64_t);
void K(jq_gg_q4_0_)(const uint8_t *, int64_t, int32_t, int32_t, int32_t, const int8_t *, const float *, const int16_t *, float *, int64_t);
void K(jq_gg_q4_k_)(const uint8_t *, int64_t, int32_t, int32_t, int32_t, const int8_t *, const float *, const int16_t *, float *, int64_t);
void K(jq_gg_q5_k_)(const uint8_t *, int64_t, int32_t, int32_t, int32_t, const int8_t *, const float *, const int16_t *, float *, int64_t);
void K(jq_gg_q6_k_)(const uint8_t *, int64_t, int32_t, int32_t, int32_t, const int8_t *, const float *, const int16_t *, float *, int64_t);
void K(jq_attn_scores_)(const float *q, int32_t qOff, int32_t qStride, int32_t rows, int32_t dims, float scale, const float *k, int32_t kOff,
                        int32_t kStride, int32_t len, float *s, int32_t sOff, int32_t sStride);
void K(jq_attn_sums_)(const float *s, int32_t sOff, int32_t sStride, int32_t rows, const float *v, int32_t vOff, int32_t vStride, int32_t dims,
                      int32_t len, float *out, int32_t outOff, int32_t outStride);
static uint32_t seed = 12345;
static uint32_t rnd(void) { seed = seed * 1664525u + 1013904223u; return seed >> 8; }
static float half(uint16_t h) { uint32_t s = (uint32_t) (h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 1023, b; float f;
  if (e == 31) b = s | 0x7f800000u | m << 13; else if (e) b = s | (e + 112) << 23 | m << 13; else { f = (float) m * 0x1p-24f; memcpy(&b, &f, 4); b |= s; }
  memcpy(&f, &b, 4); return f; }
static float half_at(const uint8_t *p) { return half((uint16_t) (p[0] | p[1] << 8)); }
/* Q4_K / Q5_K sub-block s's 6-bit scale (m = 0) or minimum (m = 1) */
static int k_scale(const uint8_t *sc, int s, int m) {
  if (s < 4) return sc[s + 4 * m] & 63;
  return m == 0 ? (sc[s + 4] & 15) | (sc[s - 4] >> 6) << 4 : (sc[s + 4] >> 4) | (sc[s] >> 6) << 4; }
/* Type t (0 Q8_0, 1 Q4_0, 2 Q4_K, 3 Q5_K, 4 Q6_K) row times one quantized column, weight by weight */
static float gg_ref(int t, const uint8_t *row, int cols, const int8_t *q, const float *xd, const int16_t *s16) {
  float acc = 0.0f;
  if (t <= 1) {
    for (int b = 0; b < cols / 32; b++) { const uint8_t *p = row + (t == 0 ? 34 : 18) * b; int dot = 0;
      for (int j = 0; j < 32; j++) dot += (t == 0 ? (int8_t) p[2 + j] : (j < 16 ? p[2 + j] & 15 : p[2 + j - 16] >> 4) - 8) * q[32 * b + j];
      volatile float f = half_at(p) * xd[b]; volatile float term = (float) dot * f; acc = acc + term; }
    return acc; }
  for (int b = 0; b < cols / 256; b++) { const uint8_t *p = row + (t == 2 ? 144 : t == 3 ? 176 : 210) * b; const int8_t *x = q + 256 * b; int dot = 0, mdot = 0;
    if (t == 4) {
      for (int e = 0; e < 256; e++) { int h = e / 128, k = e % 128 / 32, l = e % 32;
        int code = ((p[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 15) | ((p[128 + 32 * h + l] >> (2 * k)) & 3) << 4;
        dot += (int8_t) p[192 + e / 16] * (code - 32) * x[e]; }
      volatile float f = half_at(p + 208) * xd[b]; volatile float term = (float) dot * f; acc = acc + term;
    } else {
      const uint8_t *qs = p + (t == 3 ? 48 : 16);
      for (int e = 0; e < 256; e++) { int s = e / 32, v = qs[32 * (e / 64) + e % 32], code = s % 2 == 0 ? v & 15 : v >> 4;
        if (t == 3) code |= ((p[16 + e % 32] >> s) & 1) << 4;
        dot += k_scale(p + 4, s, 0) * code * x[e]; }
      for (int s = 0; s < 8; s++) mdot += k_scale(p + 4, s, 1) * (s16[16 * b + 2 * s] + s16[16 * b + 2 * s + 1]);
      volatile float f1 = half_at(p) * xd[b], f2 = half_at(p + 2) * xd[b]; volatile float a = (float) dot * f1, c = (float) mdot * f2;
      volatile float term = a - c; acc = acc + term; } }
  return acc; }
/* Weight k of a B-bit weightlet group at g, read field bit by bit from its planes (narrower plane more
   significant, stored first; stripe s in block s / (8/b), slot s % (8/b) from the top bits). */
static const int planes[9][4] = {{0}, {1}, {2}, {1, 2}, {4}, {1, 4}, {2, 4}, {1, 2, 4}, {4, 4}};
static int wl_weight(const uint8_t *g, int B, int k) {
  int f = 0, offset = 0, s = k / 16;
  for (int p = 0; planes[B][p]; p++) { int b = planes[B][p], per = 8 / b;
    f = f << b | (g[offset + 16 * (s / per) + k % 16] >> (8 - b * (s % per + 1)) & ((1 << b) - 1)); offset += 16 * b; }
  return B == 8 ? f - 127 : 2 * f - ((1 << B) - 1);
}
static int fails = 0;
static void expect(const char *what, int ok) { if (!ok) { printf("FAIL %s\n", what); fails++; } }
int main(void) {
  int rows = 12, cols = 1280, blocks = cols / 128, n = 5;
  /* activations */
  int8_t *q = malloc(n * cols); float *xs = malloc(n * blocks * 4); int32_t *sums = calloc(n * blocks, 4);
  for (int c = 0; c < n; c++) for (int i = 0; i < cols; i++) { q[c * cols + i] = (int8_t) ((int) (rnd() % 255) - 127); sums[c * blocks + i / 128] += q[c * cols + i]; }
  for (int i = 0; i < n * blocks; i++) xs[i] = 0.001f + (rnd() % 1000) * 1e-5f;
  /* codes u (0..3) and fp16 scales per row and block */
  uint8_t *u = malloc(rows * cols); uint16_t *d = malloc(rows * blocks * 2);
  for (int i = 0; i < rows * cols; i++) u[i] = rnd() % 4;
  for (int i = 0; i < rows * blocks; i++) d[i] = 0x1000 + rnd() % 0x2000;
  /* reference dots and floats */
  int32_t *dref = calloc(n * rows * blocks, 4); float *yref = calloc(n * rows, 4);
  for (int c = 0; c < n; c++) for (int r = 0; r < rows; r++) { float acc = 0.0f;
    for (int b = 0; b < blocks; b++) { int dot = 0; for (int k = 0; k < 128; k++) dot += (u[r * cols + b * 128 + k] - 1) * q[c * cols + b * 128 + k];
      dref[(c * rows + r) * blocks + b] = dot; volatile float t = half(d[r * blocks + b]) * xs[c * blocks + b]; volatile float p = (float) dot * t; acc = acc + p; }
    yref[c * rows + r] = acc; }
  /* T2P blocks: group g, block b: 4 fp16 scales, pairs p, words wd, bytes j: row 2p + (j >= 8), slot s = weight 8 (4 wd + s) + j % 8 */
  uint8_t *t2p = calloc(rows / 4 * blocks, 136);
  for (int g = 0; g < rows / 4; g++) for (int b = 0; b < blocks; b++) { uint8_t *blk = t2p + (g * blocks + b) * 136;
    for (int r = 0; r < 4; r++) memcpy(blk + 2 * r, &d[(4 * g + r) * blocks + b], 2);
    for (int p = 0; p < 2; p++) for (int wd = 0; wd < 4; wd++) for (int j = 0; j < 16; j++) { int row = 4 * g + 2 * p + (j >= 8), v = 0;
      for (int s = 0; s < 4; s++) v |= u[row * cols + b * 128 + 8 * (4 * wd + s) + j % 8] << (2 * s);
      blk[8 + 64 * p + 16 * wd + j] = (uint8_t) v; } }
  /* TQ2_0: per row, per 256: 64 code bytes (half h byte m: weights 128h + m + 32s at bits 2s) then fp16 (both halves' scales must match: use the first) */
  int64_t rowBytes = cols / 256 * 66; uint8_t *tq2 = calloc(rows, rowBytes);
  uint16_t *d2 = malloc(rows * blocks * 2); for (int r = 0; r < rows; r++) for (int b = 0; b < blocks; b++) d2[r * blocks + b] = d[r * blocks + b / 2 * 2];
  for (int r = 0; r < rows; r++) for (int B = 0; B < cols / 256; B++) { uint8_t *blk = tq2 + r * rowBytes + B * 66;
    for (int h = 0; h < 2; h++) for (int m = 0; m < 32; m++) { int v = 0; for (int s = 0; s < 4; s++) v |= u[r * cols + B * 256 + 128 * h + m + 32 * s] << (2 * s); blk[32 * h + m] = (uint8_t) v; }
    memcpy(blk + 64, &d2[r * blocks + 2 * B], 2); }
  int8_t *col = malloc(n * blocks * 288); float *y = malloc(n * rows * 4); int32_t *dots = malloc(n * rows * blocks * 4);
  for (int c = 0; c < n; c++) jq_t2p_arrange(q + c * cols, sums + c * blocks, xs + c * blocks, blocks, col + c * blocks * 288);
  K(jq_t2p_multiply_)(t2p, rows, 0, blocks, n, col, y, rows, NULL, 0);
  K(jq_t2p_multiply_)(t2p, rows, 0, blocks, n, col, NULL, 0, dots, rows * blocks);
  expect("t2p dots", !memcmp(dots, dref, n * rows * blocks * 4)); expect("t2p floats", !memcmp(y, yref, n * rows * 4));
  /* TQ2_0 reference floats with the paired scales */
  for (int c = 0; c < n; c++) for (int r = 0; r < rows; r++) { float acc = 0.0f;
    for (int b = 0; b < blocks; b++) { volatile float t = half(d2[r * blocks + b]) * xs[c * blocks + b]; volatile float p = (float) dref[(c * rows + r) * blocks + b] * t; acc = acc + p; }
    yref[c * rows + r] = acc; }
  for (int c = 0; c < n; c++) jq_tq2_arrange(q + c * cols, sums + c * blocks, xs + c * blocks, blocks, col + c * blocks * 160);
  K(jq_tq2_multiply_)(tq2, rows - 1, rowBytes, blocks, n, col, y, rows, NULL, 0);   /* 11 rows: a partial quad */
  K(jq_tq2_multiply_)(tq2, rows, rowBytes, blocks, n, col, NULL, 0, dots, rows * blocks);
  expect("tq2 dots", !memcmp(dots, dref, n * rows * blocks * 4));
  int ok = 1; for (int c = 0; c < n; c++) for (int r = 0; r < rows - 1; r++) ok &= !memcmp(&y[c * rows + r], &yref[c * rows + r], 4);
  expect("tq2 floats", ok);
  /* F16 and Q4_0 rows against L-lane chains */
  int L = LANES, fc = 520; float *x = malloc(fc * 4); for (int i = 0; i < fc; i++) x[i] = ((int) (rnd() % 2001) - 1000) * 1e-3f;
  uint16_t *h = malloc(rows * fc * 2); for (int i = 0; i < rows * fc; i++) h[i] = (uint16_t) (rnd() & 0xBFFF);
  for (int r = 0; r < rows; r++) { float ch[16] = {0}; for (int k = 0; k < fc; k++) ch[k % L] = fmaf(half(h[r * fc + k]), x[k], ch[k % L]);
    float s = 0.0f; for (int c = 0; c < L; c++) s += ch[c]; yref[r] = s; }
  K(jq_rows_f16_)((const uint8_t *) h, fc * 2, rows, fc, x, y);
  expect("f16 rows", !memcmp(y, yref, rows * 4));
  /* F16 prefill tiles: each (row, token) as the rows kernel gives it; 11 rows and 6 tokens, partial fours */
  float *x6 = malloc(6 * fc * 4), *y6 = malloc(6 * rows * 4); for (int i = 0; i < 6 * fc; i++) x6[i] = ((int) (rnd() % 2001) - 1000) * 1e-3f;
  K(jq_tiles_f16_)((const uint8_t *) h, fc * 2, rows - 1, fc, x6, 6, y6, rows);
  ok = 1; for (int t = 0; t < 6; t++) { K(jq_rows_f16_)((const uint8_t *) h, fc * 2, rows - 1, fc, x6 + t * fc, y); ok &= !memcmp(y6 + t * rows, y, (rows - 1) * 4); }
  expect("f16 tiles", ok);
  int qc = 512; uint8_t *q4 = malloc(rows * qc / 32 * 18); for (int i = 0; i < rows * qc / 32 * 18; i++) q4[i] = rnd();
  for (int i = 0; i < rows * qc / 32; i++) { uint16_t s = 0x1000 + rnd() % 0x1000; memcpy(q4 + 18 * i, &s, 2); }
  for (int r = 0; r < rows; r++) { float ch[16] = {0};
    for (int k = 0; k < qc; k++) { const uint8_t *blk = q4 + (r * qc / 32 + k / 32) * 18; int j = k % 32; int nib = j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4;
      volatile float w = (float) (nib - 8) * half((uint16_t) (blk[0] | blk[1] << 8)); ch[k % L] = fmaf(w, x[k], ch[k % L]); }
    float s = 0.0f; for (int c = 0; c < L; c++) s += ch[c]; yref[r] = s; }
  K(jq_rows_q4_0_)(q4, qc / 32 * 18, rows, qc, x, y);
  expect("q4_0 rows", !memcmp(y, yref, rows * 4));
  /* weightlets: 11 rows at widths 1..8 in turn, whole groups (384 weights) and a short last one (200) */
  for (int wc = 200; wc <= 384; wc += 184) {
    int groups = (wc + 127) / 128, stripes = (wc - 128 * (groups - 1) + 15) / 16, wr = rows - 1;
    int64_t *offs = malloc(wr * 8); int32_t *wb = malloc(wr * 4); float *sc = malloc(wr * 4); int64_t at = 0;
    for (int r = 0; r < wr; r++) { offs[r] = at; wb[r] = 1 + r % 8; sc[r] = 0.001f + (rnd() % 100) * 1e-4f; at += 16 * wb[r] * (groups - 1);
      for (int p = 0; planes[wb[r]][p]; p++) at += 16 * ((stripes * planes[wb[r]][p] + 7) / 8); }
    uint8_t *data = malloc(at); for (int64_t i = 0; i < at; i++) data[i] = rnd();
    for (int r = 7; r < wr; r += 8) for (int G = 0; G < groups; G++) {   /* 8-bit fields stop at 254: a low nibble of 15 under a high one of 15 loses its low bit */
      uint8_t *g = data + offs[r] + 128 * G; int low = G == groups - 1 ? 16 * ((stripes * 4 + 7) / 8) : 64;
      for (int k = 0; k < 16 * (G == groups - 1 ? stripes : 8); k++) { int at4 = 16 * (k / 32) + k % 16, shift = k / 16 % 2 ? 0 : 4;
        if ((g[at4] >> shift & 15) == 15 && (g[low + at4] >> shift & 15) == 15) g[low + at4] &= (uint8_t) ~(1 << shift); } }
    int8_t *xq = calloc(128 * groups, 1); for (int i = 0; i < wc; i++) xq[i] = (int8_t) ((int) (rnd() % 255) - 127);
    float *wy = malloc(wr * 4), *wf = malloc(wr * 4), *wref = malloc(wr * 4), *fref = malloc(wr * 4);
    for (int r = 0; r < wr; r++) { int64_t dot = 0; float ch[16] = {0}; const uint8_t *g = data + offs[r];
      for (int G = 0; G < groups; G++) { uint8_t whole[128] = {0}; const uint8_t *src = g;
        if (G == groups - 1 && stripes < 8) { int from = 0, to = 0;   /* a short group's kept blocks, spread to a whole group's places */
          for (int p = 0; planes[wb[r]][p]; p++) { int b = planes[wb[r]][p], kept = 16 * ((stripes * b + 7) / 8); memcpy(whole + to, g + from, kept); from += kept; to += 16 * b; }
          src = whole; }
        for (int k = 0; k < 128 && 128 * G + k < wc; k++) { int w = wl_weight(src, wb[r], k), K = 128 * G + k;
          dot += w * xq[K]; ch[K % L] = fmaf((float) w, x[K], ch[K % L]);   /* x has fc = 520 >= wc values */ }
        g += 16 * wb[r]; }
      volatile float t = 0.05f * sc[r]; wref[r] = (float) dot * t;
      float s = 0.0f; for (int c = 0; c < L; c++) s += ch[c]; fref[r] = s * sc[r]; }
    K(jq_wl_npu_)(data, offs, wb, wr, wc, xq, 0.05f, sc, wy);
    K(jq_wl_f32_)(data, offs, wb, wr, wc, x, sc, wf);
    char what[64]; snprintf(what, sizeof what, "weightlet npu rows, length %d", wc); expect(what, !memcmp(wy, wref, wr * 4));
    snprintf(what, sizeof what, "weightlet weight-only rows, length %d", wc); expect(what, !memcmp(wf, fref, wr * 4));
    free(offs); free(wb); free(sc); free(data); free(xq); free(wy); free(wf); free(wref); free(fref); }
  /* llama.cpp's block types: 12 rows, 17 columns (prefill tiles where the instruction set has them) and 1 */
  const gg_kernel gg[5] = {K(jq_gg_q8_0_), K(jq_gg_q4_0_), K(jq_gg_q4_k_), K(jq_gg_q5_k_), K(jq_gg_q6_k_)};
  const char *names[5] = {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k"};
  const int bytes[5] = {34, 18, 144, 176, 210}, weights[5] = {32, 32, 256, 256, 256}, scaleAt[5] = {0, 0, 0, 0, 208};
  for (int t = 0; t < 5; t++) {
    int gc = weights[t] == 32 ? 544 : 768, nb = gc / weights[t], cn = 17; int64_t rb = (int64_t) nb * bytes[t];
    uint8_t *w = malloc(rows * rb); for (int64_t i = 0; i < rows * rb; i++) w[i] = rnd();
    for (int i = 0; i < rows * nb; i++) { uint16_t s = 0x1000 + rnd() % 0x1000; memcpy(w + (int64_t) i * bytes[t] + scaleAt[t], &s, 2);
      if (t == 2 || t == 3) { s = 0x1000 + rnd() % 0x1000; memcpy(w + (int64_t) i * bytes[t] + 2, &s, 2); } }
    int8_t *gq = malloc(cn * gc); float *gd = malloc(cn * nb * 4); int16_t *gs = calloc(cn * gc / 16, 2);
    for (int i = 0; i < cn * gc; i++) { gq[i] = (int8_t) ((int) (rnd() % 255) - 127); gs[i / 16] += gq[i]; }
    for (int i = 0; i < cn * nb; i++) gd[i] = 0.001f + (rnd() % 1000) * 1e-5f;
    float *gy = malloc(cn * rows * 4), *gref = malloc(cn * rows * 4);
    for (int c = 0; c < cn; c++) for (int r = 0; r < rows; r++)
      gref[c * rows + r] = gg_ref(t, w + r * rb, gc, gq + c * gc, gd + c * nb, gs + c * gc / 16);
    gg[t](w, rb, rows, gc, cn, gq, gd, gs, gy, rows);
    char what[64]; snprintf(what, sizeof what, "%s block dots, %d columns", names[t], cn); expect(what, !memcmp(gy, gref, cn * rows * 4));
    gg[t](w, rb, rows - 1, gc, 1, gq, gd, gs, gy, rows);
    snprintf(what, sizeof what, "%s block dots, 1 column", names[t]); expect(what, !memcmp(gy, gref, (rows - 1) * 4));
    free(w); free(gq); free(gd); free(gs); free(gy); free(gref); }
  /* attention: rows of 1..6 heads, 64 and 10 dimensions, lengths from a tail alone to several vectors of LANES positions;
     keys and values dimension-major with a stride of 80 positions */
  { int cap = 80, lens[5] = {3, 16, 37, 64, 71}, dimsOf[2] = {64, 10};
    float *aq = malloc(6 * 64 * 4), *ak = malloc(64 * cap * 4), *as = malloc(6 * cap * 4), *aref = malloc(6 * cap * 4), *ao = malloc(6 * 64 * 4);
    for (int i = 0; i < 6 * 64; i++) aq[i] = ((int) (rnd() % 2001) - 1000) * 1e-3f;
    for (int i = 0; i < 64 * cap; i++) ak[i] = ((int) (rnd() % 2001) - 1000) * 1e-3f;
    for (int di = 0; di < 2; di++) for (int li = 0; li < 5; li++) for (int nr = 1; nr <= 6; nr++) {
      int dims = dimsOf[di], len = lens[li], bound = len / L * L; float scale = 0.125f;
      /* scores: each position a chain over ascending dimensions, fused within whole vectors, multiplied then added past them */
      for (int r = 0; r < nr; r++) for (int p = 0; p < len; p++) { float a = 0.0f;
        for (int d = 0; d < dims; d++) { float b = aq[r * dims + d] * scale; if (p < bound) a = fmaf(ak[d * cap + p], b, a); else { float m = ak[d * cap + p] * b; a = a + m; } }
        aref[r * cap + p] = a; }
      K(jq_attn_scores_)(aq, 0, dims, nr, dims, scale, ak, 0, cap, len, as, 0, cap);
      int ok = 1; for (int r = 0; r < nr; r++) ok &= !memcmp(as + r * cap, aref + r * cap, 4 * len);
      char what[80]; snprintf(what, sizeof what, "attention scores, %d rows, %d dims, length %d", nr, dims, len); expect(what, ok);
      /* weighted sums of those scores: LANES chains over the whole vectors, summed in lane order, plus the tail added in order */
      for (int r = 0; r < nr; r++) for (int d = 0; d < dims; d++) { float ch[16] = {0}, t = 0.0f, sum = 0.0f;
        for (int p = 0; p < bound; p++) ch[p % L] = fmaf(aref[r * cap + p], ak[d * cap + p], ch[p % L]);
        for (int c = 0; c < L; c++) sum += ch[c];
        for (int p = bound; p < len; p++) { float m = aref[r * cap + p] * ak[d * cap + p]; t = t + m; }
        ao[r * dims + d] = sum + t; }
      float *got = malloc(6 * 64 * 4);
      K(jq_attn_sums_)(aref, 0, cap, nr, ak, 0, cap, dims, len, got, 0, dims);
      snprintf(what, sizeof what, "attention weighted sums, %d rows, %d dims, length %d", nr, dims, len); expect(what, !memcmp(got, ao, 4 * nr * dims));
      free(got); }
    free(aq); free(ak); free(as); free(aref); free(ao); }
  printf("%s: %d failures\n", fails ? "FAILED" : "all equal", fails);
  return fails != 0;
}
