/*
 * The native kernels of one instruction set (SUFFIX, with LANES float lanes) on seeded data, checked
 * bit for bit against plain loops written here: T2P and TQ2_0 dots and floats (the shared formula,
 * which does not depend on the lanes), float16 and Q4_0 rows by LANES fused multiply-add chains. The
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
void K(jq_rows_q4_0_)(const uint8_t *w, int64_t rowBytes, int32_t rows, int32_t cols, const float *x, float *y);
static uint32_t seed = 12345;
static uint32_t rnd(void) { seed = seed * 1664525u + 1013904223u; return seed >> 8; }
static float half(uint16_t h) { uint32_t s = (uint32_t) (h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 1023, b; float f;
  if (e == 31) b = s | 0x7f800000u | m << 13; else if (e) b = s | (e + 112) << 23 | m << 13; else { f = (float) m * 0x1p-24f; memcpy(&b, &f, 4); b |= s; }
  memcpy(&f, &b, 4); return f; }
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
  int qc = 512; uint8_t *q4 = malloc(rows * qc / 32 * 18); for (int i = 0; i < rows * qc / 32 * 18; i++) q4[i] = rnd();
  for (int i = 0; i < rows * qc / 32; i++) { uint16_t s = 0x1000 + rnd() % 0x1000; memcpy(q4 + 18 * i, &s, 2); }
  for (int r = 0; r < rows; r++) { float ch[16] = {0};
    for (int k = 0; k < qc; k++) { const uint8_t *blk = q4 + (r * qc / 32 + k / 32) * 18; int j = k % 32; int nib = j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4;
      volatile float w = (float) (nib - 8) * half((uint16_t) (blk[0] | blk[1] << 8)); ch[k % L] = fmaf(w, x[k], ch[k % L]); }
    float s = 0.0f; for (int c = 0; c < L; c++) s += ch[c]; yref[r] = s; }
  K(jq_rows_q4_0_)(q4, qc / 32 * 18, rows, qc, x, y);
  expect("q4_0 rows", !memcmp(y, yref, rows * 4));
  printf("%s: %d failures\n", fails ? "FAILED" : "all equal", fails);
  return fails != 0;
}
