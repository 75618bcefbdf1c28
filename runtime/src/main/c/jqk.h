/*
 * jquant's native kernel library: what the JDK's Vector API cannot express (int8 dot products:
 * AVX-512 VNNI vpdpbusd, AVX2 vpmaddubsw, NEON sdot), called through java.lang.foreign. Every
 * kernel computes the integers and floats of its Java twin bit for bit (the runtime's oracle
 * tests compare them): integer sums are exact, and the float formula runs in the Java order with
 * no contraction into fused multiply-adds (built with -ffp-contract=off).
 *
 * One source per instruction set (x86_avx512.c, x86_avx2.c, arm_neon.c), each compiled with its
 * own target flags and exporting jq_<kernel>_<isa>; common.c says which of them this CPU runs.
 */
#ifndef JQK_H
#define JQK_H

#include <stdint.h>
#include <string.h>

#define JQK_EXPORT __attribute__((visibility("default")))

/* Bumped whenever a signature changes: the Java side refuses a library of another version. */
#define JQK_ABI 13

/* Instruction sets, as bits of jq_isas(). */
#define JQK_AVX2 1
#define JQK_AVX512_VNNI 2
#define JQK_NEON_DOTPROD 4
#define JQK_AVX512_GFNI 8

/* T2P (jquant.formats.quant.T2pBlock): 4 rows x 128 weights in 136 bytes, 4 fp16 row scales first. */
#define T2P_BYTES 136
#define T2P_CODES 8
#define T2P_PAIR 64
/* An arranged column (jq_t2p_arrange), per block: 256 bytes of activations (slot s, word wd = the 8
   activations of weights 32wd + 8s .. +7, twice: rows a and b of a pair meet the same ones); after all
   blocks' activations, each block's sum of q four times (int32), then its scale four times (float). */
#define T2P_ACT 256
#define T2P_COLUMN (T2P_ACT + 32)

/* TQ2_0 (ggml; jquant.formats.quant.Tq2Block): 256 weights in 66 bytes, 64 code bytes then an fp16
   scale; in each 128-half, byte m holds weights m, m + 32, m + 64, m + 96 at bits 0, 2, 4, 6.
   Arranged activations per 256-block: slot s = [x[32s .. +31], x[128 + 32s .. +31]], 64 bytes. */
#define TQ2_BYTES 66
#define TQ2_SCALE 64
#define TQ2_ACT 128

/* Software prefetches: into L2 (prefetcht1 on x86; the GGUF block kernels', see GG_AHEAD), into L1 (prefetcht0), and
   non-temporal (prefetchnta: weights read once a token; the ternary and weightlet-lanes decode kernels', see QUAD_AHEAD). */
#define JQK_PREFETCH_L2(p) __builtin_prefetch((p), 0, 2)
#define JQK_PREFETCH_L1(p) __builtin_prefetch((p), 0, 3)
#define JQK_PREFETCH_NTA(p) __builtin_prefetch((p), 0, 0)

static inline int64_t jqk_load64(const void *p) { int64_t v; memcpy(&v, p, 8); return v; }
static inline uint16_t jqk_load16(const void *p) { uint16_t v; memcpy(&v, p, 2); return v; }

/* Padding past a matrix's last block: zero codes and zero scales add nothing. */
static const uint8_t jqk_zeros[256] __attribute__((aligned(64)));

/* Chunk j (128-blocks 4j .. 4j+3) of T2P row group g: p[i] = block 4j + i, zeros past the last; the real count. */
static inline __attribute__((always_inline)) int t2p_where(const uint8_t *w, int32_t rows, int64_t rowBytes, int32_t blocks,
                                                           int32_t g, int32_t j, const uint8_t *p[8]) {
    (void) rows;
    (void) rowBytes;
    int m = blocks - 4 * j < 4 ? blocks - 4 * j : 4;
    for (int i = 0; i < 4; i++) p[i] = i < m ? w + ((int64_t) g * blocks + 4 * j + i) * T2P_BYTES : jqk_zeros;
    return m;
}

/*
 * Bytes ahead of a chunk's codes that the kernels prefetch: the hardware prefetcher alone left the T2P
 * kernel reading memory at well under its speed from L2. 2 KiB ahead into L1 fell mostly on rows the
 * quads side by side (QUAD_GROUPS) were already reading; 8 KiB into L2 read memory 1.3-1.4 times as
 * fast, one thread (T2P 15-18 GB/s, TQ2_0 10.5), and T2P's 8 KiB into L1 1.04-1.11 times as fast again
 * on 2,048-wide matrices, 0.98-1.06 on 5,632-wide ones. Non-temporal at the same distance (the weights are
 * read once a token) decoded a 1.1B model 1.07-1.12 times as fast again (T2P) and 1.07 times (TQ2_0), one
 * JVM alternating the two builds (bench/RESULTS.md).
 */
#define QUAD_AHEAD 8192

static inline __attribute__((always_inline)) void t2p_prefetch(const uint8_t *const p[8]) {
    for (int l = 0; l < 4 * T2P_BYTES; l += 64) JQK_PREFETCH_NTA(p[0] + QUAD_AHEAD + l);
}

static inline __attribute__((always_inline)) void tq2_prefetch(const uint8_t *const p[8]) {
    for (int r = 0; r < 4; r++) for (int l = 0; l < 2 * TQ2_BYTES; l += 64) JQK_PREFETCH_NTA(p[2 * r] + QUAD_AHEAD + l);
}

/* Chunk j of TQ2_0 rows 4g .. 4g+3 (a row past the last repeats row 4g): p[2r + b] = row r's TQ2_0
   block 2j + b, zeros past the last; the real count of 128-blocks (2 or 4). */
static inline __attribute__((always_inline)) int tq2_where(const uint8_t *w, int32_t rows, int64_t rowBytes, int32_t blocks,
                                                           int32_t g, int32_t j, const uint8_t *p[8]) {
    int m = blocks - 4 * j < 4 ? blocks - 4 * j : 4;
    for (int r = 0; r < 4; r++) {
        int32_t row = 4 * g + r < rows ? 4 * g + r : 4 * g;
        p[2 * r] = w + row * rowBytes + (int64_t) 2 * j * TQ2_BYTES;
        p[2 * r + 1] = m > 2 ? p[2 * r] + TQ2_BYTES : jqk_zeros;
    }
    return m;
}

#endif
