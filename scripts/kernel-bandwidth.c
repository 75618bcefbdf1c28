/*
 * One thread, one column: jquant's decode kernel (jq_gg_<type>_avx512, or jq_t2p/tq2_multiply_avx512,
 * or jq_rows_f16_avx512, in libjqk; the avx512gfni build where the CPU has GFNI) against ggml-cpu's own
 * ggml_vec_dot_<type>_q8_<0|K> (ggml_vec_dot_f16) row by row (for T2P, TQ2_0's over the same bytes read
 * as TQ2_0 rows), over a matrix of generated blocks, after a plain read of it (the memory probe). Prints
 * GB/s of weights for each. Built and run by scripts/kernel-bandwidth; the values of the products are not
 * checked here (IntegerBlockWeightsTest does that), only their speed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*jq_fn)(const uint8_t *, int64_t, int32_t, int32_t, int32_t, const int8_t *, const float *, const int16_t *, float *, int64_t);
typedef void (*quad_fn)(const uint8_t *, int32_t, int64_t, int32_t, int32_t, const int8_t *, float *, int64_t, int32_t *, int64_t);
typedef void (*f16_fn)(const uint8_t *, int64_t, int32_t, int32_t, const float *, float *);
typedef void (*ggml_fn)(int, float *, size_t, const void *, size_t, const void *, size_t, int);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: kernel-bandwidth q8_0|q4_0|q4_k|q5_k|q6_k|t2p|tq2|f16 LIBJQK LIBGGML_CPU [MATRIX_BYTES]\n");
        return 2;
    }
    const char *type = argv[1];
    const int cols = getenv("COLS") ? atoi(getenv("COLS")) : 2048;   /* weights a row: COLS=5632 is ffn_down's */
    int per, bytes, act; /* weights and bytes per block, bytes per activation block of 32 */
    int quad = 0;        /* the ternary layouts: 128-weight blocks, activations arranged per block */
    int half = 0;        /* float16 rows: float activations for ours, float16 ones for ggml's */
    const char *ggml;
    if (!strcmp(type, "q8_0")) { per = 32; bytes = 34; act = 34; ggml = "ggml_vec_dot_q8_0_q8_0"; }
    else if (!strcmp(type, "q4_0")) { per = 32; bytes = 18; act = 34; ggml = "ggml_vec_dot_q4_0_q8_0"; }
    else if (!strcmp(type, "q4_k")) { per = 256; bytes = 144; act = 37; ggml = "ggml_vec_dot_q4_K_q8_K"; }
    else if (!strcmp(type, "q5_k")) { per = 256; bytes = 176; act = 37; ggml = "ggml_vec_dot_q5_K_q8_K"; }
    else if (!strcmp(type, "q6_k")) { per = 256; bytes = 210; act = 37; ggml = "ggml_vec_dot_q6_K_q8_K"; }
    else if (!strcmp(type, "tq2")) { per = 256; bytes = 66; act = 37; ggml = "ggml_vec_dot_tq2_0_q8_K"; quad = 1; }
    else if (!strcmp(type, "t2p")) { per = 128; bytes = 34; act = 37; ggml = "ggml_vec_dot_tq2_0_q8_K"; quad = 1; } /* 136 bytes a block of four rows */
    else if (!strcmp(type, "f16")) { per = 1; bytes = 2; act = 2; ggml = "ggml_vec_dot_f16"; half = 1; }
    else { fprintf(stderr, "kernel-bandwidth: unknown type %s\n", type); return 2; }
    long long matrix = argc > 4 ? atoll(argv[4]) : 1000000000LL;
    int64_t rowBytes = (int64_t) cols / per * bytes;
    int rows = (int) (matrix / rowBytes) / 4 * 4;
    int reps = (int) (1000000000LL / ((long long) rows * rowBytes));
    if (reps < 1) reps = 1;
    int64_t size = (int64_t) rows * rowBytes;
    const int64_t ggmlRow = quad ? (int64_t) cols / 256 * 66 : rowBytes; /* T2P's bytes read as TQ2_0 rows */
    uint8_t *w = aligned_alloc(64, (size_t) size + 64);
    for (int64_t i = 0; i < size; i++) w[i] = (uint8_t) (i * 2654435761u >> 13);
    /* every fp16 scale 2^-7, so that no product is infinite or NaN (the ternary kernels' activations are zero) */
    /* float16 weights: every exponent field kept below 31 (finite) */
    for (int64_t i = 1; half && i < size; i += 2) w[i] &= 0x3b;
    for (int64_t b = 0; !quad && !half && b < size / bytes; b++) {
        uint8_t *p = w + b * bytes;
        int at = bytes == 210 ? 208 : 0;
        p[at] = 0, p[at + 1] = 0x20;
        if (per == 256 && bytes != 210) p[2] = 0, p[3] = 0x20;
    }
    int8_t *q = aligned_alloc(64, cols);
    float *d = aligned_alloc(64, 4 * cols);
    int16_t *sums = aligned_alloc(64, 2 * cols);
    uint8_t *acts = calloc((size_t) (half ? 2 * cols : cols / 32 * act) + 64, 1);
    /* aligned to a cache line, as the runtime arranges its columns (AlignedScratch) */
    int8_t *arranged = aligned_alloc(64, (size_t) cols / 128 * (256 + 32));
    memset(arranged, 0, (size_t) cols / 128 * (256 + 32));
    float *y = aligned_alloc(64, 4 * (size_t) rows);
    for (int i = 0; i < cols; i++) q[i] = (int8_t) (i * 37), d[i] = 0.01f, sums[i] = 0;
    void *jqk = dlopen(argv[2], RTLD_NOW), *cpu = dlopen(argv[3], RTLD_NOW);
    if (!jqk || !cpu) { fprintf(stderr, "kernel-bandwidth: %s\n", dlerror()); return 1; }
    char name[64];
    /* the build the runtime picks on this CPU: with GFNI's byte maps where it has them */
    const char *isa = __builtin_cpu_supports("gfni") ? "avx512gfni" : "avx512";
    snprintf(name, sizeof name, quad ? "jq_%s_multiply_%s" : half ? "jq_rows_%s_%s" : "jq_gg_%s_%s", type, isa);
    jq_fn ours = quad || half ? NULL : (jq_fn) dlsym(jqk, name);
    f16_fn rows16 = half ? (f16_fn) dlsym(jqk, name) : NULL;
    quad_fn ternary = quad ? (quad_fn) dlsym(jqk, name) : NULL;
    ggml_fn theirs = (ggml_fn) dlsym(cpu, ggml);
    void (*init)(void) = (void (*)(void)) dlsym(cpu, "ggml_cpu_init");
    if ((!ours && !ternary && !rows16) || !theirs) { fprintf(stderr, "kernel-bandwidth: no %s or %s\n", name, ggml); return 1; }
    if (init) init();
    double gb = (double) size * reps / 1e9;
    for (int pass = 1; pass <= 3; pass++) {
        double t0 = now();
        __m512i acc = _mm512_setzero_si512();
        for (int64_t i = 0; i < size; i += 64) acc = _mm512_add_epi32(acc, _mm512_load_si512(w + i));
        volatile int sink = _mm512_reduce_add_epi32(acc);
        (void) sink;
        double t1 = now();
        for (int i = 0; i < reps; i++) {
            if (quad) ternary(w, rows, rowBytes, cols / 128, 1, arranged, y, rows, NULL, 0);
            else if (half) rows16(w, rowBytes, rows, cols, d, y);
            else ours(w, rowBytes, rows, cols, 1, q, d, sums, y, rows);
        }
        double t2 = now();
        for (int i = 0; i < reps; i++)
            for (int64_t r = 0; r < size / ggmlRow; r++) theirs(cols, y + r % rows, 0, w + r * ggmlRow, 0, acts, 0, 1);
        double t3 = now();
        printf("%s (%s), %.3f GB matrix, pass %d: probe %.1f GB/s, jquant %.1f GB/s, ggml-cpu %.1f GB/s, jquant/ggml %.2f\n", type, isa,
               size / 1e9, pass, size / 1e9 / (t1 - t0), gb / (t2 - t1), gb / (t3 - t2), (t3 - t2) / (t2 - t1));
    }
    return 0;
}
