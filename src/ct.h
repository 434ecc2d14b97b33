/* SPDX-License-Identifier: MIT */
/*
 * Constant-time primitives: the one place in obl with bit tricks.
 *
 * Rules that every helper here follows (after BearSSL's inner.h):
 * - A control value `ctl` is a uint64_t that is exactly 0 or 1. Helpers turn
 *   it into an all-zeros / all-ones mask with 0 - ctl.
 * - Assumed constant-time on x86-64: add, sub, and, or, xor, not, shifts by a
 *   public amount, 64x64 multiplication, cmov, SSE/AVX/AVX-512 logic, blends
 *   and mask moves. Not assumed: division, modulo, branches, table indexing.
 * - obl_ct_barrier64() hides a value from the optimiser (an empty asm with the
 *   value as an operand), so that masked code is not turned back into
 *   branches: every mask derived from a secret goes through it once.
 * - Secret values never choose a branch, a loop bound, an address or an
 *   early exit. Lengths and table sizes passed here are public.
 *
 * Block moves (conditional copy, swap) have fast paths for 8 (cmov), 16 (SSE
 * blend), 32 (AVX2 blend), 64 bytes and multiples of 64 (AVX-512), chosen
 * at build time from the target's ISA:
 * AVX-512 (mask moves), AVX2 (blends) or portable 64-bit masks. The
 * explicitly named variants (obl_ct_cmov_avx2 ...) exist for the
 * micro-benchmark and the tests; see src/common/ct.c.
 */
#ifndef OBL_SRC_CT_H
#define OBL_SRC_CT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/trace.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
/* The SIMD block moves below are compiled for their own instruction set
 * whatever the build's -march: the hot paths inline them when the build
 * targets that set (OBL_CT_AVX2 / OBL_CT_AVX512), and src/common/ct.c wraps
 * them as named variants that the tests and the micro-benchmark run on any
 * CPU that has the set. One source for both. */
#define OBL_CT_X86 1
#define OBL_SIMD_INLINE(t) static inline __attribute__((always_inline, target(t)))
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && !defined(OBL_NO_AVX512)
#define OBL_CT_AVX512 1
#endif
#if defined(__AVX2__)
#define OBL_CT_AVX2 1
#endif

#define OBL_INLINE static inline __attribute__((always_inline))

/* ---------------------------------------------------------------- masks -- */

/* Hide x from the optimiser: it may no longer reason about its value. */
OBL_INLINE uint64_t obl_ct_barrier64(uint64_t x)
{
    __asm__("" : "+r"(x));
    return x;
}

OBL_INLINE uint32_t obl_ct_barrier32(uint32_t x)
{
    __asm__("" : "+r"(x));
    return x;
}

/* ctl in {0,1} -> 0 or all ones. */
OBL_INLINE uint64_t obl_ct_mask(uint64_t ctl)
{
    return obl_ct_barrier64((uint64_t)0 - ctl);
}

OBL_INLINE uint64_t obl_ct_not(uint64_t ctl) { return ctl ^ 1; }

/* 1 if x != 0, else 0. */
OBL_INLINE uint64_t obl_ct_nonzero64(uint64_t x)
{
    return obl_ct_barrier64((x | ((uint64_t)0 - x)) >> 63);
}

OBL_INLINE uint64_t obl_ct_eq64(uint64_t a, uint64_t b)
{
    return obl_ct_nonzero64(a ^ b) ^ 1;
}

OBL_INLINE uint64_t obl_ct_neq64(uint64_t a, uint64_t b)
{
    return obl_ct_nonzero64(a ^ b);
}

/* 1 if a < b (unsigned), else 0: the borrow of a - b (Hacker's Delight 2-12). */
OBL_INLINE uint64_t obl_ct_lt64(uint64_t a, uint64_t b)
{
    return obl_ct_barrier64(((~a & b) | (~(a ^ b) & (a - b))) >> 63);
}

OBL_INLINE uint64_t obl_ct_gt64(uint64_t a, uint64_t b) { return obl_ct_lt64(b, a); }
OBL_INLINE uint64_t obl_ct_le64(uint64_t a, uint64_t b) { return obl_ct_lt64(b, a) ^ 1; }
OBL_INLINE uint64_t obl_ct_ge64(uint64_t a, uint64_t b) { return obl_ct_lt64(a, b) ^ 1; }

/* ctl ? a : b, without a branch: on x86-64 one test and one cmov (cmov's
 * timing does not depend on its operands; it is not a branch), elsewhere a
 * mask. */
OBL_INLINE uint64_t obl_ct_select64(uint64_t ctl, uint64_t a, uint64_t b)
{
#if OBL_CT_X86
    __asm__("test %1, %1\n\tcmovnz %2, %0" : "+r"(b) : "r"(ctl), "r"(a) : "cc");
    return b;
#else
    uint64_t m = obl_ct_mask(ctl);
    return b ^ (m & (a ^ b));
#endif
}

OBL_INLINE uint32_t obl_ct_select32(uint64_t ctl, uint32_t a, uint32_t b)
{
#if OBL_CT_X86
    __asm__("test %1, %1\n\tcmovnz %2, %0" : "+r"(b) : "r"(ctl), "r"(a) : "cc");
    return b;
#else
    uint32_t m = (uint32_t)obl_ct_mask(ctl);
    return b ^ (m & (a ^ b));
#endif
}

/* min and max of two unsigned words. */
OBL_INLINE uint64_t obl_ct_min64(uint64_t a, uint64_t b)
{
    return obl_ct_select64(obl_ct_lt64(a, b), a, b);
}

OBL_INLINE uint64_t obl_ct_max64(uint64_t a, uint64_t b)
{
    return obl_ct_select64(obl_ct_lt64(a, b), b, a);
}

/* if (ctl) *dst = src; for one word, through a register. */
OBL_INLINE void obl_ct_cmov64(uint64_t ctl, uint64_t *dst, uint64_t src)
{
    *dst = obl_ct_select64(ctl, src, *dst);
}

OBL_INLINE void obl_ct_cmov32(uint64_t ctl, uint32_t *dst, uint32_t src)
{
    *dst = obl_ct_select32(ctl, src, *dst);
}

/* if (ctl) swap(*a, *b); */
OBL_INLINE void obl_ct_cswap64(uint64_t ctl, uint64_t *a, uint64_t *b)
{
    uint64_t m = obl_ct_mask(ctl);
    uint64_t t = m & (*a ^ *b);
    *a ^= t;
    *b ^= t;
}

/* ---------------------------------------------------------- block moves -- */

/*
 * Portable conditional copy: if (ctl) memcpy(dst, src, len). Words are moved
 * through memcpy so unaligned buffers are fine: 8-byte words, then one
 * 4-byte word if 4 or more bytes remain, then bytes.
 */
OBL_INLINE void obl_ct_cmov_portable(uint64_t ctl, void *dst, const void *src, size_t len)
{
    uint64_t m = obl_ct_mask(ctl);
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t a, b;
        memcpy(&a, d + i, 8);
        memcpy(&b, s + i, 8);
        a ^= m & (a ^ b);
        memcpy(d + i, &a, 8);
    }
    if (i + 4 <= len) { /* one 4-byte word (the map's 4-byte leaves) */
        uint32_t a, b;
        memcpy(&a, d + i, 4);
        memcpy(&b, s + i, 4);
        a ^= (uint32_t)m & (a ^ b);
        memcpy(d + i, &a, 4);
        i += 4;
    }
    unsigned char mb = (unsigned char)m;
    for (; i < len; i++)
        d[i] = (unsigned char)(d[i] ^ (mb & (d[i] ^ s[i])));
}

OBL_INLINE void obl_ct_cswap_portable(uint64_t ctl, void *a, void *b, size_t len)
{
    uint64_t m = obl_ct_mask(ctl);
    unsigned char *x = (unsigned char *)a;
    unsigned char *y = (unsigned char *)b;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t u, v, t;
        memcpy(&u, x + i, 8);
        memcpy(&v, y + i, 8);
        t = m & (u ^ v);
        u ^= t;
        v ^= t;
        memcpy(x + i, &u, 8);
        memcpy(y + i, &v, 8);
    }
    if (i + 4 <= len) { /* a 4-byte word, as in obl_ct_cmov_portable */
        uint32_t u, v, t;
        memcpy(&u, x + i, 4);
        memcpy(&v, y + i, 4);
        t = (uint32_t)m & (u ^ v);
        u ^= t;
        v ^= t;
        memcpy(x + i, &u, 4);
        memcpy(y + i, &v, 4);
        i += 4;
    }
    unsigned char mb = (unsigned char)m;
    for (; i < len; i++) {
        unsigned char t = (unsigned char)(mb & (x[i] ^ y[i]));
        x[i] ^= t;
        y[i] ^= t;
    }
}

#if OBL_CT_X86
/* AVX2: 32-byte blends under a broadcast mask; the tail goes portable. */
OBL_SIMD_INLINE("avx2") void obl_ct_cmov_avx2_inl(uint64_t ctl, void *dst, const void *src, size_t len)
{
    __m256i m = _mm256_set1_epi64x((long long)obl_ct_mask(ctl));
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0;
    for (; i + 32 <= len; i += 32) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(d + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + i));
        /* AND/XOR, not blendv: with AVX-512 enabled, compilers turn a blendv
         * into a k-masked blend of the memory operand (the mask secret) */
        __m256i t = _mm256_and_si256(m, _mm256_xor_si256(a, b));
        _mm256_storeu_si256((__m256i *)(d + i), _mm256_xor_si256(a, t));
    }
    if (i < len)
        obl_ct_cmov_portable(ctl, d + i, s + i, len - i);
}

OBL_SIMD_INLINE("avx2") void obl_ct_cswap_avx2_inl(uint64_t ctl, void *a, void *b, size_t len)
{
    __m256i m = _mm256_set1_epi64x((long long)obl_ct_mask(ctl));
    unsigned char *x = (unsigned char *)a;
    unsigned char *y = (unsigned char *)b;
    size_t i = 0;
    for (; i + 32 <= len; i += 32) {
        __m256i u = _mm256_loadu_si256((const __m256i *)(x + i));
        __m256i v = _mm256_loadu_si256((const __m256i *)(y + i));
        __m256i t = _mm256_and_si256(m, _mm256_xor_si256(u, v));
        _mm256_storeu_si256((__m256i *)(x + i), _mm256_xor_si256(u, t));
        _mm256_storeu_si256((__m256i *)(y + i), _mm256_xor_si256(v, t));
    }
    if (i < len)
        obl_ct_cswap_portable(ctl, x + i, y + i, len - i);
}
#endif

#if OBL_CT_X86
/*
 * AVX-512: 64-byte mask moves. The k-mask is all ones or all zeros; a masked
 * store with a zero mask still issues the store uop for the same address, so
 * the address trace does not depend on ctl. We load both sides and store the
 * result unmasked, which is what the memory system sees either way; the
 * conditional copy is an AND/XOR of full vectors, not a k-mask move, which
 * compilers fold into a load masked by the secret (gcc 12 did). The tail
 * (len % 64 bytes, public) goes through 32-byte blends and 8- and 4-byte
 * words, not a byte-masked load and store: a masked store is slow to
 * forward to the next load of the same bytes, and the eviction reloads its
 * held block at every level (docs/oram.md, "Eviction").
 */
OBL_SIMD_INLINE("avx512f,avx512bw") void obl_ct_cmov_avx512_inl(uint64_t ctl, void *dst, const void *src, size_t len)
{
    __m512i m = _mm512_set1_epi64((long long)obl_ct_mask(ctl));
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0;
    for (; i + 64 <= len; i += 64) {
        __m512i a = _mm512_loadu_si512((const void *)(d + i));
        __m512i b = _mm512_loadu_si512((const void *)(s + i));
        __m512i t = _mm512_and_si512(m, _mm512_xor_si512(a, b));
        _mm512_storeu_si512((void *)(d + i), _mm512_xor_si512(a, t));
    }
    if (i < len) /* the tail: 32-byte blends, then 8- and 4-byte words */
        obl_ct_cmov_avx2_inl(ctl, d + i, s + i, len - i);
}

OBL_SIMD_INLINE("avx512f,avx512bw") void obl_ct_cswap_avx512_inl(uint64_t ctl, void *a, void *b, size_t len)
{
    __m512i m = _mm512_set1_epi64((long long)obl_ct_mask(ctl));
    unsigned char *x = (unsigned char *)a;
    unsigned char *y = (unsigned char *)b;
    size_t i = 0;
    for (; i + 64 <= len; i += 64) {
        __m512i u = _mm512_loadu_si512((const void *)(x + i));
        __m512i v = _mm512_loadu_si512((const void *)(y + i));
        __m512i t = _mm512_and_si512(m, _mm512_xor_si512(u, v));
        _mm512_storeu_si512((void *)(x + i), _mm512_xor_si512(u, t));
        _mm512_storeu_si512((void *)(y + i), _mm512_xor_si512(v, t));
    }
    if (i < len) /* the tail: 32-byte blends, then 8- and 4-byte words */
        obl_ct_cswap_avx2_inl(ctl, x + i, y + i, len - i);
}
#endif

/* if (ctl) memcpy(dst, src, len); dst and src must not overlap. */
OBL_INLINE void obl_ct_cmov(uint64_t ctl, void *dst, const void *src, size_t len)
{
    if (len == 8) {   /* len is public: branching on it is fine */
        uint64_t a, b;
        memcpy(&a, dst, 8);
        memcpy(&b, src, 8);
        a = obl_ct_select64(ctl, b, a);
        memcpy(dst, &a, 8);
        return;
    }
#if defined(__SSE4_1__)
    if (len == 16) { /* one SSE vector instead of two word selects */
        __m128i m = _mm_set1_epi64x((long long)obl_ct_mask(ctl));
        __m128i a = _mm_loadu_si128((const __m128i *)dst);
        __m128i b = _mm_loadu_si128((const __m128i *)src);
        /* AND/XOR, not blendv (see obl_ct_cmov_avx2_inl) */
        _mm_storeu_si128((__m128i *)dst, _mm_xor_si128(a, _mm_and_si128(m, _mm_xor_si128(a, b))));
        return;
    }
#endif
#if OBL_CT_AVX512
    obl_ct_cmov_avx512_inl(ctl, dst, src, len);
#elif OBL_CT_AVX2
    obl_ct_cmov_avx2_inl(ctl, dst, src, len);
#else
    obl_ct_cmov_portable(ctl, dst, src, len);
#endif
}

/* if (ctl) swap the len bytes at a and b; a and b must not overlap. */
OBL_INLINE void obl_ct_cswap(uint64_t ctl, void *a, void *b, size_t len)
{
#if OBL_CT_AVX512
    obl_ct_cswap_avx512_inl(ctl, a, b, len);
#elif OBL_CT_AVX2
    obl_ct_cswap_avx2_inl(ctl, a, b, len);
#else
    obl_ct_cswap_portable(ctl, a, b, len);
#endif
}

/* if (ctl) memset(dst, 0, len): 8-byte words, then bytes. */
OBL_INLINE void obl_ct_czero(uint64_t ctl, void *dst, size_t len)
{
    uint64_t keep = ~obl_ct_mask(ctl);
    unsigned char *d = (unsigned char *)dst;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t a;
        memcpy(&a, d + i, 8);
        a &= keep;
        memcpy(d + i, &a, 8);
    }
    for (; i < len; i++)
        d[i] &= (unsigned char)keep;
}

/* out = ctl ? a : b, for len-byte blocks (out may alias a or b). */
OBL_INLINE void obl_ct_select_block(uint64_t ctl, void *out, const void *a, const void *b,
                                    size_t len)
{
    if (out != b)
        memmove(out, b, len); /* public: depends on pointers only */
    obl_ct_cmov(ctl, out, a, len);
}

/* ------------------------------------------------------- byte compares -- */

/* 1 if the len bytes at a and b are equal, else 0. Reads all of both. */
OBL_INLINE uint64_t obl_ct_memeq(const void *a, const void *b, size_t len)
{
    const unsigned char *x = (const unsigned char *)a;
    const unsigned char *y = (const unsigned char *)b;
    uint64_t acc = 0;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t u, v;
        memcpy(&u, x + i, 8);
        memcpy(&v, y + i, 8);
        acc |= u ^ v;
    }
    for (; i < len; i++)
        acc |= (uint64_t)(x[i] ^ y[i]);
    return obl_ct_nonzero64(acc) ^ 1;
}

/*
 * 1 if the byte string a is lexicographically less than b (bytes compared as
 * unsigned, first byte most significant), else 0. Reads all of both.
 */
OBL_INLINE uint64_t obl_ct_memlt(const void *a, const void *b, size_t len)
{
    const unsigned char *x = (const unsigned char *)a;
    const unsigned char *y = (const unsigned char *)b;
    uint64_t lt = 0, decided = 0;
    for (size_t i = 0; i < len; i++) {
        uint64_t u = x[i], v = y[i];
        uint64_t l = obl_ct_lt64(u, v), ne = obl_ct_neq64(u, v);
        lt |= l & (decided ^ 1);
        decided |= ne;
    }
    return lt;
}

/* ------------------------------------------------------ table lookups -- */

/*
 * out = table[i] for a table of n entries of entry_size bytes: reads every
 * entry and keeps entry i with a mask. i is secret; n and entry_size public.
 * An i >= n leaves out zeroed.
 */
OBL_INLINE void obl_ct_lookup(const void *table, size_t n, size_t entry_size, uint64_t i,
                              void *out)
{
    const unsigned char *t = (const unsigned char *)table;
    memset(out, 0, entry_size);
    for (size_t j = 0; j < n; j++) {
        OBL_TRACE_TOUCH(OBL_TRACE_REGION_CT_TABLE, OBL_TRACE_READ, j * entry_size, entry_size);
        obl_ct_cmov(obl_ct_eq64(j, i), out, t + j * entry_size, entry_size);
    }
}

/* table[i] = in, writing every entry (a full-table oblivious store). */
OBL_INLINE void obl_ct_store(void *table, size_t n, size_t entry_size, uint64_t i,
                             const void *in)
{
    unsigned char *t = (unsigned char *)table;
    for (size_t j = 0; j < n; j++) {
        OBL_TRACE_TOUCH(OBL_TRACE_REGION_CT_TABLE, OBL_TRACE_RW, j * entry_size, entry_size);
        obl_ct_cmov(obl_ct_eq64(j, i), t + j * entry_size, in, entry_size);
    }
}

/* 64-bit word lookup: table[i] from n words, reading all of them. */
OBL_INLINE uint64_t obl_ct_lookup64(const uint64_t *table, size_t n, uint64_t i)
{
    uint64_t r = 0;
    for (size_t j = 0; j < n; j++) {
        OBL_TRACE_TOUCH(OBL_TRACE_REGION_CT_TABLE, OBL_TRACE_READ, j * 8, 8);
        r |= table[j] & obl_ct_mask(obl_ct_eq64(j, i));
    }
    return r;
}

/* ------------------------------------------- out-of-line named variants -- */
/* Defined in src/common/ct.c: each compiled for its ISA with a target
 * attribute, so one binary can benchmark and test all three. The avx2/avx512
 * ones must only be called when obl_ct_cpu_has_* says the CPU has them. */
void obl_ct_cmov_portable_fn(uint64_t ctl, void *dst, const void *src, size_t len);
void obl_ct_cmov_avx2(uint64_t ctl, void *dst, const void *src, size_t len);
void obl_ct_cmov_avx512(uint64_t ctl, void *dst, const void *src, size_t len);
void obl_ct_cswap_portable_fn(uint64_t ctl, void *a, void *b, size_t len);
void obl_ct_cswap_avx2(uint64_t ctl, void *a, void *b, size_t len);
void obl_ct_cswap_avx512(uint64_t ctl, void *a, void *b, size_t len);
int obl_ct_cpu_has_avx2(void);
int obl_ct_cpu_has_avx512(void);

#endif /* OBL_SRC_CT_H */
