/* SPDX-License-Identifier: MIT */
/*
 * Order-preserving tight compaction and its inverse, expansion, on arrays of
 * records (obl/sort.h): ORCompact and OROffCompact of Sasy, Johnson and
 * Goldberg ("Fast fully oblivious compaction and shuffling", CCS 2022,
 * section 4, algorithms 1 and 2).
 *
 * OROffCompact(D, n, z), n a power of two, moves the marked records of D to
 * the positions z, z + 1, ... (mod n) in order: compact each half (the left
 * with offset z mod n/2, the right with (z + m) mod n/2, m = the marks in
 * the left half), then swap i and i + n/2 where s XOR (i >= (z + m) mod n/2),
 * s = ((z mod n/2) + m >= n/2) XOR (z >= n/2). ORCompact handles any n with
 * a power-of-two tail n1 and a head n2 = n - n1. Every swap decision is a
 * function of the marks alone, and every count is taken over a range no
 * swap has touched yet, so all counts come from one prefix array E of the
 * original marks. Expansion runs the same swaps in the reverse order, which
 * undoes the compaction with the same marks.
 *
 * Secret: records, marks, every count and offset. Public: n, the record
 * size, the thread count; the sequence of addresses depends on them only.
 */
#include <string.h>

#include "sort/entry.h"
#include "sort/par.h"
#include "sort/rec.h"

/* Nodes below this many records run on one thread. */
#define CP_PAR_MIN ((size_t)1 << 13)

/* One swap pass: records lo .. hi - 1 of x against the same of y, swapped
 * where sbm XOR (i >= thr) (sbm 0 or all ones). thr and i are below 2^63, so
 * i >= thr is the sign of thr - 1 - i. Secret: sbm, thr, the records. */
OBL_INLINE void cp_pass_w(uint64_t *x, uint64_t *y, size_t lo, size_t hi, uint64_t sbm,
                          uint64_t thr, size_t words)
{
    for (size_t i = lo; i < hi; i++) {
        /* i through the barrier: the loop's counter must not be rewritten
         * in terms of thr (a secret in the loop's exit test) */
        uint64_t ge = (uint64_t)((int64_t)(thr - 1 - obl_ct_barrier64(i)) >> 63);
        rec_cswap(sbm ^ ge, x + i * words, y + i * words, words);
    }
}

#if OBL_CT_AVX2
/* The swap masks of rows i .. i + 3: sbm XOR (i + l >= thr), lane l, from
 * one vector comparison (thr and i are below 2^63). Secret: sbm, thr. */
OBL_SIMD_INLINE("avx2") __m256i cp_mask4(size_t i, uint64_t sbm, uint64_t thr)
{
    const __m256i rows = _mm256_add_epi64(_mm256_set_epi64x(3, 2, 1, 0),
                                          _mm256_set1_epi64x((long long)i));
    __m256i ge = _mm256_cmpgt_epi64(rows, _mm256_set1_epi64x((long long)(thr - 1)));
    return _mm256_xor_si256(ge, _mm256_set1_epi64x((long long)sbm));
}

/* x ^= t, y ^= t with t = (x ^ y) & m: one 32-byte swap. */
OBL_SIMD_INLINE("avx2") void cp_swap32(void *x, void *y, __m256i m)
{
    __m256i a = _mm256_loadu_si256((const __m256i *)x), b = _mm256_loadu_si256((const __m256i *)y);
    __m256i t = _mm256_and_si256(_mm256_xor_si256(a, b), m);
    _mm256_storeu_si256((__m256i *)x, _mm256_xor_si256(a, t));
    _mm256_storeu_si256((__m256i *)y, _mm256_xor_si256(b, t));
}

/* cp_pass_w for records of 1, 2 or 4 words, four rows per step: the
 * masks of four rows from one comparison, spread to their records' words
 * by lane permutes (public patterns). The tail row by row. */
OBL_SIMD_INLINE("avx2")
size_t cp_pass_v(uint64_t *x, uint64_t *y, size_t lo, size_t hi, uint64_t sbm, uint64_t thr,
                 size_t words)
{
    size_t i = lo;
    for (; i + 4 <= hi; i += 4) {
        __m256i m = cp_mask4(i, sbm, thr);
        uint64_t *p = x + i * words, *q = y + i * words;
        if (words == 1) {
            cp_swap32(p, q, m);
        } else if (words == 2) {
            cp_swap32(p, q, _mm256_permute4x64_epi64(m, 0x50));
            cp_swap32(p + 4, q + 4, _mm256_permute4x64_epi64(m, 0xFA));
        } else {
            cp_swap32(p, q, _mm256_permute4x64_epi64(m, 0x00));
            cp_swap32(p + 4, q + 4, _mm256_permute4x64_epi64(m, 0x55));
            cp_swap32(p + 8, q + 8, _mm256_permute4x64_epi64(m, 0xAA));
            cp_swap32(p + 12, q + 12, _mm256_permute4x64_epi64(m, 0xFF));
        }
    }
    return i;
}
#endif

/* cp_pass_w with the common record sizes as constants (unrolled), four
 * rows per vector step where the build has AVX2. */
static void cp_pass(uint64_t *x, uint64_t *y, size_t lo, size_t hi, uint64_t sbm, uint64_t thr,
                    size_t words)
{
#if OBL_CT_AVX2
    if (words == 1 || words == 2 || words == 4) /* public */
        lo = cp_pass_v(x, y, lo, hi, sbm, thr, words);
#endif
    switch (words) { /* public */
    case 1: cp_pass_w(x, y, lo, hi, sbm, thr, 1); break;
    case 2: cp_pass_w(x, y, lo, hi, sbm, thr, 2); break;
    case 3: cp_pass_w(x, y, lo, hi, sbm, thr, 3); break;
    case 4: cp_pass_w(x, y, lo, hi, sbm, thr, 4); break;
    case 8: cp_pass_w(x, y, lo, hi, sbm, thr, 8); break;
    default: cp_pass_w(x, y, lo, hi, sbm, thr, words); break;
    }
}

/* A node of the recursion: records [base, base + n) of a. */
typedef struct cp_node {
    const rec_arr *a;
    const uint32_t *E;
    size_t base, n;
    uint64_t z;        /* OROffCompact's offset (secret) */
    unsigned threads;
    int expand;        /* public: run the swaps in reverse order */
} cp_node;

typedef struct cp_pass_ctx {
    const cp_node *nd;
    size_t h;
    uint64_t sbm, thr;
} cp_pass_ctx;

static void cp_pass_range(void *ctx, size_t lo, size_t hi)
{
    const cp_pass_ctx *c = ctx;
    const rec_arr *a = c->nd->a;
#ifdef OBL_TRACE
    for (size_t i = lo; i < hi; i++) {
        REC_TOUCH(c->nd->base + i);
        REC_TOUCH(c->nd->base + c->h + i);
    }
#endif
    cp_pass(rec_at(a, c->nd->base), rec_at(a, c->nd->base + c->h), lo, hi, c->sbm, c->thr,
            a->words);
}

/* The merge pass of a node: i against i + h for i < h (or i < len). */
static void cp_node_pass(const cp_node *nd, size_t h, size_t len, uint64_t sbm, uint64_t thr)
{
    cp_pass_ctx c = {nd, h, sbm, thr};
    if (len >= CP_PAR_MIN && nd->threads > 1) /* public */
        obl_par_for(nd->threads, len, 512, cp_pass_range, &c);
    else
        cp_pass_range(&c, 0, len);
}

static void cp_off(cp_node *nd);

static void cp_off_task(void *ctx)
{
    cp_off(ctx);
}

/* OROffCompact (or its inverse) on a node of n = 2^k records. */
static void cp_off(cp_node *nd)
{
    const size_t n = nd->n, h = n / 2, base = nd->base;
    if (n < 2)
        return;
    const uint32_t *E = nd->E;
    if (n == 2) { /* the general step with m = the first mark: swap iff m == z */
        const rec_arr *a = nd->a;
        REC_TOUCH(base);
        REC_TOUCH(base + 1);
        uint64_t m = (uint64_t)(E[base + 1] - E[base]);
        rec_cswap(obl_ct_mask(obl_ct_eq64(m, nd->z)), rec_at(a, base), rec_at(a, base + 1),
                  a->words);
        return;
    }
    const uint64_t z = nd->z, m = (uint64_t)(E[base + h] - E[base]);
    const uint64_t zl = z & (h - 1), zr = (z + m) & (h - 1);
    const uint64_t sb = obl_ct_ge64(zl + m, h) ^ obl_ct_ge64(z, h);
    const uint64_t sbm = obl_ct_mask(sb);
    unsigned tl = nd->threads / 2, tr = nd->threads - tl;
    int par = nd->threads >= 2 && n >= CP_PAR_MIN; /* public */
    cp_node L = {nd->a, E, base, h, zl, par ? tl : 1, nd->expand};
    cp_node R = {nd->a, E, base + h, h, zr, par ? tr : 1, nd->expand};
    if (nd->expand)
        cp_node_pass(nd, h, h, sbm, zr);
    if (par)
        obl_par_two(cp_off_task, &L, cp_off_task, &R);
    else {
        cp_off(&L);
        cp_off(&R);
    }
    if (!nd->expand)
        cp_node_pass(nd, h, h, sbm, zr);
}

/* ORCompact (or its inverse) on any n: a head of n2 records, compacted
 * recursively, and a power-of-two tail of n1 with offset (n1 - n2 + m) mod
 * n1, then the head's records from m on swapped with the tail's. */
static void cp_any(const cp_node *nd)
{
    const size_t n = nd->n, base = nd->base;
    if (n < 2)
        return;
    size_t n1 = 1;
    while (n1 * 2 <= n)
        n1 *= 2;
    const size_t n2 = n - n1;
    const uint64_t m = (uint64_t)(nd->E[base + n2] - nd->E[base]);
    cp_node T = {nd->a, nd->E, base + n2, n1, (n1 - n2 + m) & (n1 - 1), nd->threads, nd->expand};
    cp_node H = {nd->a, nd->E, base, n2, 0, nd->threads, nd->expand};
    if (nd->expand) {
        if (n2)
            cp_node_pass(nd, n1, n2, 0, m);
        cp_off(&T);
        cp_any(&H);
        return;
    }
    cp_any(&H);
    cp_off(&T);
    if (n2)
        cp_node_pass(nd, n1, n2, 0, m);
}

/* see rec.h */
void rec_compact(const rec_arr *a, const uint32_t *E)
{
    cp_node nd = {a, E, 0, a->n, 0, a->threads, 0};
    cp_any(&nd);
}

/* see rec.h */
void rec_expand(const rec_arr *a, const uint32_t *E)
{
    cp_node nd = {a, E, 0, a->n, 0, a->threads, 1};
    cp_any(&nd);
}

/* E[i] = flags set in [0, i) for i <= n; returns E[n]. Secret: flags, E. */
static uint64_t cp_prefix(const uint8_t *flags, size_t n, uint32_t *E)
{
    uint32_t c = 0;
    for (size_t i = 0; i < n; i++) {
        E[i] = c;
        c += flags[i] & 1u;
    }
    E[n] = c;
    return c;
}

/* obl_compact and obl_expand: the prefix array, then the swaps. */
static obl_err cp_run(void *recs, size_t n, const uint8_t *flags, size_t *count,
                      const obl_sort_params *p, int expand)
{
    rec_arr a;
    obl_err e = rec_arr_init(&a, recs, n, p);
    if (e != OBL_OK)
        return e;
    if (n > 0 && !flags)
        return OBL_ERR_INVALID_ARG;
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, p->alloc);
    uint32_t *E = obl_alloc(&ac, (n + 1) * sizeof *E, 64);
    if (!E)
        return OBL_ERR_NOMEM;
    uint64_t c = cp_prefix(flags, n, E);
    if (expand)
        rec_expand(&a, E);
    else
        rec_compact(&a, E);
    if (count)
        *count = (size_t)c;
    obl_free(&ac, E, (n + 1) * sizeof *E);
    return OBL_OK;
}

/* a variant of the obl/sort.h function (sort/entry.h) */
obl_err OBL_V(srt_compact)(void *recs, size_t n, const uint8_t *flags, size_t *count,
                    const obl_sort_params *p)
{
    return cp_run(recs, n, flags, count, p, 0);
}

/* a variant of the obl/sort.h function (sort/entry.h) */
obl_err OBL_V(srt_expand)(void *recs, size_t n, const uint8_t *flags, const obl_sort_params *p)
{
    return cp_run(recs, n, flags, NULL, p, 1);
}
