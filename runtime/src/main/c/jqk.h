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
#define JQK_ABI 1

/* Instruction sets, as bits of jq_isas(). */
#define JQK_AVX2 1
#define JQK_AVX512_VNNI 2
#define JQK_NEON_DOTPROD 4

/* T2P (jquant.formats.quant.T2pBlock): 4 rows x 128 weights in 136 bytes, 4 fp16 row scales first. */
#define T2P_BYTES 136
#define T2P_CODES 8
#define T2P_PAIR 64
/* An arranged column (jq_t2p_arrange), per block: 256 bytes of activations (slot s, word wd = the 8
   activations of weights 32wd + 8s .. +7, twice: rows a and b of a pair meet the same ones); after all
   blocks' activations, each block's sum of q four times (int32), then its scale four times (float). */
#define T2P_ACT 256
#define T2P_COLUMN (T2P_ACT + 32)

static inline int64_t jqk_load64(const void *p) { int64_t v; memcpy(&v, p, 8); return v; }

#endif
