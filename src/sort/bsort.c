/* SPDX-License-Identifier: MIT */
/*
 * The bitonic sort of 64-bit keys and the oblivious expansion that the tree
 * ORAM's bulk build runs (src/oram/build.c): keys below 2^63, an optional
 * aux word and an optional payload per element, vectorised with AVX-512
 * where the build targets it and blocked for the caches. The general
 * record sorts of obl/sort.h live next to it (bitonic.c, compact.c ...).
 *
 * Every step's addresses are fixed by the sizes: the keys, aux words and
 * payloads are secret, the element count and sizes public.
 */
#include <string.h>

#include "ct.h"
#include "common/secret.h"
#include "common/testing.h"
#include "common/trace.h"
#include "sort/bsort.h"
#include "sort/par.h"

/* The trace hook (tests only): every compare-exchange reports the element
 * positions it touches (`lanes` consecutive ones from i). */
#define BS_TOUCH(i, lanes) OBL_TRACE_TOUCH(OBL_TRACE_REGION_SORT, OBL_TRACE_RW, (i), (lanes))

/* Compare-exchange of elements i < j: afterwards key[i] <= key[j].
 * Secret: the keys, aux, payloads. Public: i, j. */
static inline void bs_ce(const bsort *s, size_t i, size_t j)
{
    BS_TOUCH(i, 1);
    BS_TOUCH(j, 1);
    uint64_t a = s->key[i], b = s->key[j];
    uint64_t c = obl_ct_barrier64((b - a) >> 63); /* a > b, keys < 2^63 */
    uint64_t m = obl_ct_mask(c), t = m & (a ^ b);
    s->key[i] = a ^ t;
    s->key[j] = b ^ t;
    if (s->aux) {
        uint64_t x = s->aux[i], y = s->aux[j], u = m & (x ^ y);
        s->aux[i] = x ^ u;
        s->aux[j] = y ^ u;
    }
    if (s->pay)
        obl_ct_cswap(c, s->pay + i * s->vs, s->pay + j * s->vs, s->vs);
}

#if OBL_CT_AVX512
/* Eight mirror compare-exchanges: i .. i+7 against j+7 .. j (reversed). */
static inline void bs_ce8_mirror(const bsort *s, size_t i, size_t j)
{
    BS_TOUCH(i, 8);
    BS_TOUCH(j, 8);
    const __m512i rev = _mm512_set_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    __m512i a = _mm512_loadu_si512((const void *)(s->key + i));
    __m512i b = _mm512_permutexvar_epi64(rev, _mm512_loadu_si512((const void *)(s->key + j)));
    if (s->aux) {
        __mmask8 k = _mm512_cmpgt_epu64_mask(a, b);
        __m512i x = _mm512_loadu_si512((const void *)(s->aux + i));
        __m512i y = _mm512_permutexvar_epi64(rev, _mm512_loadu_si512((const void *)(s->aux + j)));
        _mm512_storeu_si512((void *)(s->aux + i), _mm512_mask_blend_epi64(k, x, y));
        _mm512_storeu_si512((void *)(s->aux + j),
                            _mm512_permutexvar_epi64(rev, _mm512_mask_blend_epi64(k, y, x)));
    }
    _mm512_storeu_si512((void *)(s->key + i), _mm512_min_epu64(a, b));
    _mm512_storeu_si512((void *)(s->key + j),
                        _mm512_permutexvar_epi64(rev, _mm512_max_epu64(a, b)));
}

/* One in-register step on 8 consecutive elements: lane i against lane
 * i ^ px; lanes with bit ub set keep the larger key. */
static inline void bs_lane_step(__m512i *x, __m512i *a, int has_aux, int px, int ub)
{
    const __m512i idx = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i perm = _mm512_xor_si512(idx, _mm512_set1_epi64(px));
    const __mmask8 upper = (__mmask8)_mm512_test_epi64_mask(idx, _mm512_set1_epi64(ub));
    __m512i y = _mm512_permutexvar_epi64(perm, *x);
    if (has_aux) {
        __mmask8 gt = _mm512_cmpgt_epu64_mask(*x, y), lt = _mm512_cmpgt_epu64_mask(y, *x);
        __mmask8 sw = (__mmask8)((~upper & gt) | (upper & lt));
        *a = _mm512_mask_blend_epi64(sw, *a, _mm512_permutexvar_epi64(perm, *a));
    }
    *x = _mm512_mask_blend_epi64(upper, _mm512_min_epu64(*x, y), _mm512_max_epu64(*x, y));
}

/* The steps of stage k that stay within aligned groups of 8: for k <= 8
 * the whole stage (mirror, then half-cleaners), else j = 4, 2, 1. */
static void bs_small8(const bsort *s, size_t lo, size_t hi, size_t k)
{
    int has_aux = s->aux != NULL;
    for (size_t b = lo; b < hi; b += 8) {
        BS_TOUCH(b, 8);
        __m512i x = _mm512_loadu_si512((const void *)(s->key + b));
        __m512i a = has_aux ? _mm512_loadu_si512((const void *)(s->aux + b)) : x;
        size_t j = 4;
        if (k <= 8) {
            bs_lane_step(&x, &a, has_aux, (int)k - 1, (int)k / 2);
            j = k / 4;
        }
        for (; j > 0; j >>= 1)
            bs_lane_step(&x, &a, has_aux, (int)j, (int)j);
        _mm512_storeu_si512((void *)(s->key + b), x);
        if (has_aux)
            _mm512_storeu_si512((void *)(s->aux + b), a);
    }
}

/* Eight compare-exchanges (i .. i+7 against j .. j+7) at once. */
static inline void bs_ce8(const bsort *s, size_t i, size_t j)
{
    BS_TOUCH(i, 8);
    BS_TOUCH(j, 8);
    __m512i a = _mm512_loadu_si512((const void *)(s->key + i));
    __m512i b = _mm512_loadu_si512((const void *)(s->key + j));
    if (s->aux) {
        __mmask8 k = _mm512_cmpgt_epu64_mask(a, b);
        __m512i x = _mm512_loadu_si512((const void *)(s->aux + i));
        __m512i y = _mm512_loadu_si512((const void *)(s->aux + j));
        _mm512_storeu_si512((void *)(s->aux + i), _mm512_mask_blend_epi64(k, x, y));
        _mm512_storeu_si512((void *)(s->aux + j), _mm512_mask_blend_epi64(k, y, x));
    }
    _mm512_storeu_si512((void *)(s->key + i), _mm512_min_epu64(a, b));
    _mm512_storeu_si512((void *)(s->key + j), _mm512_max_epu64(a, b));
}

/* The payloads of the eight pairs (i + l, j + l), or (i + l, j + 7 - l)
 * when `rev`, swapped where bit l of sw is set: AND/XOR with a broadcast
 * mask, whole 64-byte vectors (s->vs a multiple of 64). Secret: sw, the
 * payloads. Public: i, j, rev. */
static inline void bs_pay8(const bsort *s, size_t i, size_t j, unsigned sw, int rev)
{
    for (size_t l = 0; l < 8; l++) {
        const __m512i m = _mm512_set1_epi64(-(long long)((sw >> l) & 1));
        unsigned char *p = s->pay + (i + l) * s->vs;
        unsigned char *q = s->pay + (j + (rev ? 7 - l : l)) * s->vs;
        for (size_t o = 0; o < s->vs; o += 64) {
            __m512i x = _mm512_load_si512((const void *)(p + o));
            __m512i y = _mm512_load_si512((const void *)(q + o));
            __m512i t = _mm512_and_si512(_mm512_xor_si512(x, y), m);
            _mm512_store_si512((void *)(p + o), _mm512_xor_si512(x, t));
            _mm512_store_si512((void *)(q + o), _mm512_xor_si512(y, t));
        }
    }
}

/* bs_ce8 and bs_ce8_mirror with payloads: the swap decisions of the eight
 * keys at once, then the eight payload swaps. */
static inline void bs_ce8p(const bsort *s, size_t i, size_t j, int rev)
{
    BS_TOUCH(i, 8);
    BS_TOUCH(j, 8);
    const __m512i r = _mm512_set_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    __m512i a = _mm512_loadu_si512((const void *)(s->key + i));
    __m512i b = _mm512_loadu_si512((const void *)(s->key + j));
    if (rev)
        b = _mm512_permutexvar_epi64(r, b);
    __mmask8 k = _mm512_cmpgt_epu64_mask(a, b);
    __m512i lo = _mm512_min_epu64(a, b), hi = _mm512_max_epu64(a, b);
    _mm512_storeu_si512((void *)(s->key + i), lo);
    _mm512_storeu_si512((void *)(s->key + j), rev ? _mm512_permutexvar_epi64(r, hi) : hi);
    if (s->aux) {
        __m512i x = _mm512_loadu_si512((const void *)(s->aux + i));
        __m512i y = _mm512_loadu_si512((const void *)(s->aux + j));
        if (rev)
            y = _mm512_permutexvar_epi64(r, y);
        /* AND/XOR with a vector mask: no blend that a compiler could
         * turn into a load masked by the secret k (docs/oram.md) */
        __m512i t = _mm512_and_si512(_mm512_xor_si512(x, y), _mm512_movm_epi64(k));
        __m512i ya = _mm512_xor_si512(y, t);
        _mm512_storeu_si512((void *)(s->aux + i), _mm512_xor_si512(x, t));
        _mm512_storeu_si512((void *)(s->aux + j), rev ? _mm512_permutexvar_epi64(r, ya) : ya);
    }
    bs_pay8(s, i, j, (unsigned)k, rev);
}

/* bs_small8 with 64-byte payloads: each group of 8 elements, keys, aux
 * words and payloads, is held in registers through the steps. Secret: the
 * keys, aux, payloads. Public: lo, hi, k. */
static void bs_small8p(const bsort *s, size_t lo, size_t hi, size_t k)
{
    const __m512i idx = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    int has_aux = s->aux != NULL;
    for (size_t b = lo; b < hi; b += 8) {
        BS_TOUCH(b, 8);
        __m512i x = _mm512_loadu_si512((const void *)(s->key + b));
        __m512i a = has_aux ? _mm512_loadu_si512((const void *)(s->aux + b)) : x;
        __m512i P[8];
        for (int l = 0; l < 8; l++)
            P[l] = _mm512_load_si512((const void *)(s->pay + (b + l) * 64));
        int px = 4, ub = 4; /* this step's partner distance and upper bit */
        size_t j = 2;       /* the next step's */
        if (k <= 8) {
            px = (int)k - 1;
            ub = (int)k / 2;
            j = k / 4;
        }
        for (;;) {
            const __m512i perm = _mm512_xor_si512(idx, _mm512_set1_epi64(px));
            const __mmask8 upper = (__mmask8)_mm512_test_epi64_mask(idx, _mm512_set1_epi64(ub));
            __m512i y = _mm512_permutexvar_epi64(perm, x);
            __mmask8 gt = _mm512_cmpgt_epu64_mask(x, y), lt = _mm512_cmpgt_epu64_mask(y, x);
            __mmask8 sw = (__mmask8)((~upper & gt) | (upper & lt));
            if (has_aux)
                a = _mm512_mask_blend_epi64(sw, a, _mm512_permutexvar_epi64(perm, a));
            x = _mm512_mask_blend_epi64(upper, _mm512_min_epu64(x, y), _mm512_max_epu64(x, y));
            unsigned bits = (unsigned)sw;
            for (int l = 0; l < 8; l++) {
                if (l & ub) /* public: lower lane of each pair */
                    continue;
                int q = l ^ px;
                const __m512i m = _mm512_set1_epi64(-(long long)((bits >> l) & 1));
                __m512i t = _mm512_and_si512(_mm512_xor_si512(P[l], P[q]), m);
                P[l] = _mm512_xor_si512(P[l], t);
                P[q] = _mm512_xor_si512(P[q], t);
            }
            if (j == 0)
                break;
            px = ub = (int)j;
            j >>= 1;
        }
        _mm512_storeu_si512((void *)(s->key + b), x);
        if (has_aux)
            _mm512_storeu_si512((void *)(s->aux + b), a);
        for (int l = 0; l < 8; l++)
            _mm512_store_si512((void *)(s->pay + (b + l) * 64), P[l]);
    }
}
#endif

/* A compare-exchange of one element (vec 0) or of 8 consecutive ones
 * (vec 1: no payload; vec 2: payloads of 64-byte multiples) at i and j.
 * Public: i, j, vec. */
static inline void bs_ce_w(const bsort *s, size_t i, size_t j, int vec)
{
#if OBL_CT_AVX512
    if (vec == 2) {
        bs_ce8p(s, i, j, 0);
        return;
    }
    if (vec) {
        bs_ce8(s, i, j);
        return;
    }
#endif
    (void)vec;
    bs_ce(s, i, j);
}

/*
 * t consecutive half-cleaner steps, spans j, j/2, .., j >> (t - 1) (t = 1,
 * 2 or 3), in one pass over [lo, hi): the 2^t elements e + a * q (q = the
 * smallest span, a = 0 .. 2^t - 1) are closed under these steps, so each
 * such group runs all t steps at once, while it is in the L1 cache. The
 * compare-exchanges, and their order along every element's dependencies,
 * are those of the t separate steps; a full pass over a large array is
 * made once instead of t times (the payload sorts of the build are bound
 * by that traffic). Public: every argument.
 */
static inline void bs_half(const bsort *s, size_t lo, size_t hi, size_t j, unsigned t, int vec)
{
    const size_t q = j >> (t - 1), w = vec ? 8 : 1, G = (size_t)1 << t;
    for (size_t b = lo; b < hi; b += 2 * j)
        for (size_t r = 0; r < q; r += w)
            for (unsigned u = 0; u < t; u++) {
                size_t d = (size_t)1 << (t - 1 - u); /* this step's span / q */
                for (size_t a = 0; a < G; a++)
                    if (!(a & d)) /* public */
                        bs_ce_w(s, b + r + a * q, b + r + (a + d) * q, vec);
            }
}

#if OBL_CT_AVX512
/* Compare-exchange of the register-held elements a < a + d of a group:
 * keys k[], 64-byte payloads P[] (bs_half3_r64, bs_mirror3_r64). */
#define BS_CE_R(a, d)                                                                    \
    do {                                                                                 \
        uint64_t A_ = k[a], B_ = k[(a) + (d)];                                           \
        uint64_t m_ = obl_ct_mask(obl_ct_barrier64((B_ - A_) >> 63));                    \
        uint64_t tk_ = m_ & (A_ ^ B_);                                                   \
        k[a] = A_ ^ tk_;                                                                 \
        k[(a) + (d)] = B_ ^ tk_;                                                         \
        __m512i T_ = _mm512_and_si512(_mm512_xor_si512(P[a], P[(a) + (d)]),              \
                                      _mm512_set1_epi64((long long)m_));                 \
        P[a] = _mm512_xor_si512(P[a], T_);                                               \
        P[(a) + (d)] = _mm512_xor_si512(P[(a) + (d)], T_);                               \
    } while (0)
/* Three half-cleaner steps (spans j, j / 2, j / 4 = q) on 64-byte payloads
 * without aux words, each group of 8 (e + a * q) held in registers: one
 * load and one store per element for the three steps, where bs_half
 * stores every element after each step (docs/oram.md, "Build: why it
 * is oblivious"). The same compare-exchanges, in the same order along every
 * element's dependencies. Secret: keys, payloads. Public: lo, hi, j. */
static void bs_half3_r64(const bsort *s, size_t lo, size_t hi, size_t j)
{
    const size_t q = j >> 2;
    for (size_t b = lo; b < hi; b += 2 * j)
        for (size_t r = 0; r < q; r++) {
            const size_t e = b + r;
            uint64_t k[8];
            __m512i P[8];
#pragma GCC unroll 8
            for (size_t a = 0; a < 8; a++) {
                BS_TOUCH(e + a * q, 1);
                k[a] = s->key[e + a * q];
                P[a] = _mm512_load_si512((const void *)(s->pay + (e + a * q) * 64));
            }
            BS_CE_R(0, 4); BS_CE_R(1, 4); BS_CE_R(2, 4); BS_CE_R(3, 4);
            BS_CE_R(0, 2); BS_CE_R(1, 2); BS_CE_R(4, 2); BS_CE_R(5, 2);
            BS_CE_R(0, 1); BS_CE_R(2, 1); BS_CE_R(4, 1); BS_CE_R(6, 1);
#pragma GCC unroll 8
            for (size_t a = 0; a < 8; a++) {
                s->key[e + a * q] = k[a];
                _mm512_store_si512((void *)(s->pay + (e + a * q) * 64), P[a]);
            }
        }
}

/* The mirror step of stage k and its first two half-cleaner steps (spans
 * k / 4, k / 8), as bs_half3_r64: in each block of k, the four elements
 * r + a * k / 8 (a = 0 .. 3) of its lower half and their mirrors are
 * closed under the three steps. Public: lo, hi, kb (the stage, >= 8). */
static void bs_mirror3_r64(const bsort *s, size_t lo, size_t hi, size_t kb)
{
    const size_t e = kb / 8;
    for (size_t b = lo; b < hi; b += kb)
        for (size_t r = 0; r < e; r++) {
            /* 0 .. 3: lower half, ascending; 4 .. 7: the upper half's
             * elements in ascending order, 4 + a mirroring 3 - a */
            size_t at[8];
            uint64_t k[8];
            __m512i P[8];
#pragma GCC unroll 4
            for (size_t a = 0; a < 4; a++) {
                at[a] = b + r + a * e;
                at[7 - a] = b + kb - 1 - (r + a * e);
            }
#pragma GCC unroll 8
            for (size_t a = 0; a < 8; a++) {
                BS_TOUCH(at[a], 1);
                k[a] = s->key[at[a]];
                P[a] = _mm512_load_si512((const void *)(s->pay + at[a] * 64));
            }
            BS_CE_R(0, 7); BS_CE_R(1, 5); BS_CE_R(2, 3); BS_CE_R(3, 1);
            BS_CE_R(0, 2); BS_CE_R(1, 2); BS_CE_R(4, 2); BS_CE_R(5, 2);
            BS_CE_R(0, 1); BS_CE_R(2, 1); BS_CE_R(4, 1); BS_CE_R(6, 1);
#pragma GCC unroll 8
            for (size_t a = 0; a < 8; a++) {
                s->key[at[a]] = k[a];
                _mm512_store_si512((void *)(s->pay + at[a] * 64), P[a]);
            }
        }
}

/* bs_half3_r64 for keys alone, eight lanes per vector: the groups of the
 * eight lanes r .. r + 7 in eight registers through the three steps
 * (q >= 8: bs_halves calls it for spans of at least 32). */
#define BS_CE_K8(a, d)                                                                   \
    do {                                                                                 \
        __m512i lo_ = _mm512_min_epu64(X[a], X[(a) + (d)]);                              \
        X[(a) + (d)] = _mm512_max_epu64(X[a], X[(a) + (d)]);                             \
        X[a] = lo_;                                                                      \
    } while (0)
static void bs_half3_k8(const bsort *s, size_t lo, size_t hi, size_t j)
{
    const size_t q = j >> 2;
    for (size_t b = lo; b < hi; b += 2 * j)
        for (size_t r = 0; r < q; r += 8) {
            __m512i X[8];
#pragma GCC unroll 8
            for (size_t a = 0; a < 8; a++) {
                BS_TOUCH(b + r + a * q, 8);
                X[a] = _mm512_loadu_si512((const void *)(s->key + b + r + a * q));
            }
            BS_CE_K8(0, 4); BS_CE_K8(1, 4); BS_CE_K8(2, 4); BS_CE_K8(3, 4);
            BS_CE_K8(0, 2); BS_CE_K8(1, 2); BS_CE_K8(4, 2); BS_CE_K8(5, 2);
            BS_CE_K8(0, 1); BS_CE_K8(2, 1); BS_CE_K8(4, 1); BS_CE_K8(6, 1);
#pragma GCC unroll 8
            for (size_t a = 0; a < 8; a++)
                _mm512_storeu_si512((void *)(s->key + b + r + a * q), X[a]);
        }
}
#endif

/* The half-cleaner steps j = jtop, jtop / 2, .., down to jbot (and at
 * least w, the lanes per compare-exchange), three at a time where they
 * can be. Public: every argument. */
static void bs_halves(const bsort *s, size_t lo, size_t hi, size_t jtop, size_t jbot, int vec)
{
    const size_t w = vec ? 8 : 1, lim = jbot > w ? jbot : w;
    size_t j = jtop;
#if OBL_CT_AVX512
    if (vec == 1 && !s->aux) /* public */
        for (; j / 4 >= lim; j >>= 3)
            bs_half3_k8(s, lo, hi, j);
    if (vec == 2 && s->vs == 64 && !s->aux) { /* public */
        for (; j / 4 >= lim; j >>= 3)
            bs_half3_r64(s, lo, hi, j);
    }
#endif
    while (j >= lim) {
        unsigned t = j / 4 >= lim ? 3 : j / 2 >= lim ? 2 : 1;
        if (t == 3)
            bs_half(s, lo, hi, j, 3, vec);
        else if (t == 2)
            bs_half(s, lo, hi, j, 2, vec);
        else
            bs_half(s, lo, hi, j, 1, vec);
        j >>= t;
    }
}

/*
 * Steps of stage k of the network on the elements [lo, hi) (hi - lo a
 * multiple of the steps' spans): the mirror step if `mirror`, then the
 * half-cleaner steps j = jtop, jtop / 2, ..., down to jbot (jbot >= 1).
 * Public: every argument.
 */
static void bs_steps(const bsort *s, size_t lo, size_t hi, size_t k, int mirror, size_t jtop,
                     size_t jbot)
{
#if OBL_CT_AVX512
    /* vector path: no payload and whole groups of 8 */
    if (!s->pay && hi - lo >= 8) {
        if (k <= 8) {
            bs_small8(s, lo, hi, k); /* the whole stage, in registers */
            return;
        }
        if (mirror)
            for (size_t b = lo; b < hi; b += k)
                for (size_t i = 0; i < k / 2; i += 8)
                    bs_ce8_mirror(s, b + i, b + k - 8 - i);
        bs_halves(s, lo, hi, jtop, jbot, 1); /* j >= 8 */
        if (jbot < 8)
            bs_small8(s, lo, hi, k); /* j = 4, 2, 1 */
        return;
    }
    /* payloads of whole vectors: eight key decisions at once for the spans
     * of at least 8, element by element below */
    if (s->pay && s->vs == 64 && hi - lo >= 8 && k <= 8) {
        bs_small8p(s, lo, hi, k); /* the whole stage, in registers */
        return;
    }
    if (s->pay && s->vs % 64 == 0 && k >= 16 && hi - lo >= 16) {
        if (mirror && s->vs == 64 && !s->aux && jtop == k / 4 && k / 8 >= jbot && k >= 64) {
            bs_mirror3_r64(s, lo, hi, k); /* the mirror and spans k/4, k/8 */
            jtop = k / 16;
            mirror = 0;
        }
        if (mirror)
            for (size_t b = lo; b < hi; b += k)
                for (size_t i = 0; i < k / 2; i += 8)
                    bs_ce8p(s, b + i, b + k - 8 - i, 1);
        bs_halves(s, lo, hi, jtop, jbot, 2); /* j >= 8 */
        if (jbot < 8 && s->vs == 64)
            bs_small8p(s, lo, hi, k); /* j = 4, 2, 1 */
        else if (jbot < 8)
            bs_halves(s, lo, hi, jtop < 4 ? jtop : 4, jbot, 0);
        return;
    }
#endif
    if (mirror)
        for (size_t b = lo; b < hi; b += k)
            for (size_t i = 0; i < k / 2; i++)
                bs_ce(s, b + i, b + k - 1 - i);
    bs_halves(s, lo, hi, jtop, jbot, 0);
}

/* Elements per cache block of the blocked network: the largest power of
 * two whose keys, aux words and payloads fit in about half of a 1 MiB L2,
 * and the same for a second, outer block in the L3 (32 MiB, shared). */
#define BS_BLOCK_BYTES ((size_t)512 << 10)
#ifndef BS_L3_BYTES
#define BS_L3_BYTES ((size_t)8 << 20)
#endif

/* The cache sizes the blocks are made for; obl_bsort_set_blocks (tests)
 * shrinks them, so that small sorts take every blocked path. */
OBL_TEST_KNOB(size_t, bs_l2_bytes, BS_BLOCK_BYTES);
OBL_TEST_KNOB(size_t, bs_l3_bytes, BS_L3_BYTES);

/* Sorts and expansions below this many elements stay on one thread
 * (obl_bsort_sort_par); tests that shrink the cache blocks lower it to 16,
 * so that small sorts take the two-thread paths. */
#define BS_PAR_MIN ((size_t)1 << 14)
OBL_TEST_KNOB(size_t, bs_par_min, BS_PAR_MIN);

/* Tests only: 1 leaves out the last pair of the split mirror step, a
 * planted fault that the tests comparing one and two threads must see. */
OBL_TEST_KNOB(int, bs_par_fault, 0);

#ifdef OBL_TESTING
/* see sort/bsort.h */
void obl_bsort_set_blocks(size_t l2_bytes, size_t l3_bytes)
{
    bs_l2_bytes = l2_bytes ? l2_bytes : BS_BLOCK_BYTES;
    bs_l3_bytes = l3_bytes ? l3_bytes : BS_L3_BYTES;
    bs_par_min = l2_bytes ? 16 : BS_PAR_MIN;
}

/* see sort/bsort.h */
void obl_bsort_set_par_fault(int on)
{
    bs_par_fault = on;
}
#endif

/* The largest power of two C >= 8, at most m (itself a power of two, or
 * below 8), with C elements of esz bytes in at most bytes / 2. Public. */
static size_t bs_block(size_t esz, size_t bytes, size_t m)
{
    size_t C = 8;
    while (C * 2 * esz <= bytes)
        C <<= 1;
    return C > m ? m : C;
}

/* Sorts the C3 elements from lo (the whole network for C3 elements),
 * blocked for blocks of C elements (C <= C3, both powers of two): the
 * stages k <= C block by block, each later stage's spans of at least C as
 * passes over [lo, lo + C3), its shorter spans block by block. Public:
 * every argument. */
static void bs_sort_blk(const bsort *s, size_t lo, size_t C3, size_t C)
{
    /* blocks from s->live on hold only the largest key: skipped */
    for (size_t b = lo; b < lo + C3 && b < s->live; b += C)
        for (size_t k = 2; k <= C; k <<= 1)
            bs_steps(s, b, b + C, k, 1, k / 4, 1);
    for (size_t k = 2 * C; k <= C3; k <<= 1) {
        bs_steps(s, lo, lo + C3, k, 1, k / 4, C); /* mirror and spans above C */
        size_t jt = k / 4 < C / 2 ? k / 4 : C / 2;
        for (size_t b = lo; b < lo + C3 && b < s->live; b += C)
            bs_steps(s, b, b + C, k, 0, jt, 1);
    }
}

/*
 * Sorts m elements (m a power of two) ascending by key: Batcher's bitonic
 * network (1968) in its "all ascending" form, where the first step of each
 * merge compares i with the mirror element of its block, so that every
 * compare-exchange puts the smaller key first.
 *
 * Blocked for the caches, at two levels: a step of span at most C (the
 * block, C elements in BS_BLOCK_BYTES) pairs elements of one aligned
 * C-block only, so the stages k <= C run block by block (each block sorted
 * in cache), and every later stage makes passes only for its steps of span
 * above C, then finishes its short steps block by block; the same holds
 * for the outer blocks of C3 elements (BS_L3_BYTES), so the stages up to
 * C3 run outer block by outer block, in the L3, and only the stages above
 * C3 make passes over all m elements, for their spans above C3. The
 * compare-exchanges and their order within each pair's dependencies are
 * those of the plain network: the result is the same, and the sequence of
 * addresses is a function of m and the element size only. Public: m and
 * the network.
 */
/* see sort/bsort.h */
void obl_bsort_sort(const bsort *s, size_t m)
{
    size_t esz = 8 + (s->aux ? 8 : 0) + (s->pay ? s->vs : 0);
    size_t C = bs_block(esz, bs_l2_bytes, m), C3 = bs_block(esz, bs_l3_bytes, m);
    if (C3 < C)
        C3 = C;
    for (size_t b3 = 0; b3 < m && b3 < s->live; b3 += C3)
        bs_sort_blk(s, b3, C3, C);
    for (size_t k = 2 * C3; k <= m; k <<= 1) {
        bs_steps(s, 0, m, k, 1, k / 4, C3); /* mirror and spans above C3 */
        for (size_t b3 = 0; b3 < m && b3 < s->live; b3 += C3) {
            bs_steps(s, b3, b3 + C3, k, 0, C3 / 2, C); /* spans C3 / 2 .. C */
            size_t jt = C3 / 2 < C / 2 ? C3 / 2 : C / 2;
            for (size_t b = b3; b < b3 + C3 && b < s->live; b += C)
                bs_steps(s, b, b + C, k, 0, jt, 1);
        }
    }
}

/*
 * Expansion (step 4): the elements at [base, base + n) (n a power of two)
 * are those bound for the slots [base, base + n), in increasing target
 * order (key = target, strictly increasing), placed cyclically from
 * base + z; afterwards each is at its target. It runs the order-preserving
 * offset compaction of Sasy, Johnson and Goldberg (ORCompact's
 * OROffCompact, CCS 2022, section 4, algorithm 2) backwards: the marked
 * cells of that compaction are our targets, its swap pass of the merge
 * step is its own inverse and comes first here, then the two halves are
 * expanded with the offsets the compaction gave them. With z = 0 this is
 * the inverse of compacting the targets to the front in order, which is
 * what places the j-th element at the j-th target.
 *
 * The swap pass pairs i with i + n/2; element i swaps when
 * s XOR (i >= (z + m) mod n/2), with m the number of targets in the left
 * half (counted from the keys: an empty slot's key is above every target)
 * and s = ((z mod n/2) + m >= n/2) XOR (z >= n/2). Depth first: once a
 * node fits in the caches, all its levels run there, so only the nodes
 * above the cache size make passes over memory (the Goodrich network,
 * used before, made log W of them).
 *
 * Secret: z, m, the keys, aux words, payloads. Public: base, n and the
 * sequence of addresses, which depends on them only.
 */
#if OBL_CT_AVX512
/* -1 in lane l where sb XOR (i + l >= thr), else 0. Secret: sb, thr. */
static inline __m512i bs_xmask8(uint64_t sb, uint64_t thr, size_t i)
{
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    /* the sign of thr - 1 - (i + l): thr and i are below 2^63 */
    __m512i ge = _mm512_srai_epi64(
        _mm512_sub_epi64(_mm512_set1_epi64((long long)thr - 1),
                         _mm512_add_epi64(lane, _mm512_set1_epi64((long long)i))),
        63);
    return _mm512_xor_si512(ge, _mm512_set1_epi64(-(long long)sb));
}

/* Swaps elements a + l and b + l (keys, aux words, payloads) where lane l
 * of mv is all ones. AND/XOR: no blend a compiler could turn into a masked
 * load. Secret: mv and the elements. Public: a, b. */
static inline void bs_xswap8(const bsort *s, size_t a, size_t b, __m512i mv)
{
    BS_TOUCH(a, 8);
    BS_TOUCH(b, 8);
    __m512i k0 = _mm512_loadu_si512((const void *)(s->key + a));
    __m512i k1 = _mm512_loadu_si512((const void *)(s->key + b));
    __m512i t = _mm512_and_si512(_mm512_xor_si512(k0, k1), mv);
    _mm512_storeu_si512((void *)(s->key + a), _mm512_xor_si512(k0, t));
    _mm512_storeu_si512((void *)(s->key + b), _mm512_xor_si512(k1, t));
    if (s->aux) {
        __m512i x0 = _mm512_loadu_si512((const void *)(s->aux + a));
        __m512i x1 = _mm512_loadu_si512((const void *)(s->aux + b));
        t = _mm512_and_si512(_mm512_xor_si512(x0, x1), mv);
        _mm512_storeu_si512((void *)(s->aux + a), _mm512_xor_si512(x0, t));
        _mm512_storeu_si512((void *)(s->aux + b), _mm512_xor_si512(x1, t));
    }
    if (s->pay)
        bs_pay8(s, a, b, (unsigned)_mm512_movepi64_mask(mv), 0);
}
#endif

/* Swaps elements a and b where sb XOR (i >= thr). Secret: sb, thr, the
 * elements. Public: a, b, i. */
static inline void bs_xswap1(const bsort *s, size_t a, size_t b, uint64_t sb, uint64_t thr,
                             size_t i)
{
    BS_TOUCH(a, 1);
    BS_TOUCH(b, 1);
    uint64_t *key = s->key, *aux = s->aux;
    uint64_t c = sb ^ obl_ct_ge64(i, thr);
    uint64_t mk = obl_ct_mask(c), tk = mk & (key[a] ^ key[b]);
    key[a] ^= tk;
    key[b] ^= tk;
    if (aux) {
        uint64_t ta = mk & (aux[a] ^ aux[b]);
        aux[a] ^= ta;
        aux[b] ^= ta;
    }
    if (s->pay)
        obl_ct_cswap(c, s->pay + a * s->vs, s->pay + b * s->vs, s->vs);
}

/* The swap bit's parts of a node of n positions (n >= 2) with offset z and
 * m targets in its left half: sb and thr (see obl_bsort_expand). Secret. */
static inline void bs_xparams(size_t n, uint64_t z, uint64_t m, uint64_t *sb, uint64_t *thr)
{
    const uint64_t h = n / 2;
    *sb = obl_ct_ge64((z & (h - 1)) + m, h) ^ obl_ct_ge64(z, h);
    *thr = (z + m) & (h - 1);
}

/* A node of the expansion (n >= 4 positions from base, offset z): the
 * swap parameters of its level and of its two children's, which one pass
 * applies (obl_bsort_expand), and the offsets of its four grandchildren.
 * Secret: all but base and n. */
typedef struct bs_xnode {
    uint64_t sb, thr, sbl, thrl, sbr, thrr, z4[4];
} bs_xnode;

/* The node's parameters: the children's counts are those of the targets
 * in the first and third quarters, known before any swap. */
static void bs_xnode_params(const bsort *s, size_t base, size_t n, uint64_t z, bs_xnode *x)
{
    const size_t h = n / 2, q = n / 4;
    const uint64_t *key = s->key;
    uint64_t m = 0, ml = 0, m3 = 0;
    const unsigned tsh = s->tsh;
    for (size_t i = base; i < base + n; i++) {
        uint64_t tg = key[i] >> tsh;
        m += tg < base + h; /* comparisons' 0/1 summed: no branch */
        ml += tg < base + q;
        m3 += tg < base + h + q;
    }
    bs_xparams(n, z, m, &x->sb, &x->thr);
    const uint64_t zl = z & (h - 1), zr = x->thr; /* the children's offsets */
    bs_xparams(h, zl, ml, &x->sbl, &x->thrl);
    bs_xparams(h, zr, m3 - m, &x->sbr, &x->thrr);
    x->z4[0] = zl & (q - 1);
    x->z4[1] = x->thrl;
    x->z4[2] = zr & (q - 1);
    x->z4[3] = x->thrr;
}

/* The swaps of the node's two levels for i in [i0, i1) (of [0, n / 4)):
 * those of the four positions i, i + q, i + h, i + h + q: the node's (i
 * and i + h; i + q and i + h + q), then each child's (i and i + q; i + h
 * and i + h + q), the order of the two levels. Public: base, n, i0, i1. */
static void bs_xnode_swaps(const bsort *s, size_t base, size_t n, const bs_xnode *x, size_t i0,
                           size_t i1)
{
    const size_t h = n / 2, q = n / 4;
    size_t i = i0;
#if OBL_CT_AVX512
    const int vec = !s->pay || s->vs % 64 == 0; /* public */
    if (vec && q >= 8)
        for (; i + 8 <= i1; i += 8) {
            size_t a0 = base + i, a1 = a0 + q, a2 = a0 + h, a3 = a2 + q;
            bs_xswap8(s, a0, a2, bs_xmask8(x->sb, x->thr, i));
            bs_xswap8(s, a1, a3, bs_xmask8(x->sb, x->thr, i + q));
            bs_xswap8(s, a0, a1, bs_xmask8(x->sbl, x->thrl, i));
            bs_xswap8(s, a2, a3, bs_xmask8(x->sbr, x->thrr, i));
        }
#endif
    for (; i < i1; i++) {
        size_t a0 = base + i, a1 = a0 + q, a2 = a0 + h, a3 = a2 + q;
        bs_xswap1(s, a0, a2, x->sb, x->thr, i);
        bs_xswap1(s, a1, a3, x->sb, x->thr, i + q);
        bs_xswap1(s, a0, a1, x->sbl, x->thrl, i);
        bs_xswap1(s, a2, a3, x->sbr, x->thrr, i);
    }
}

/* see sort/bsort.h */
void obl_bsort_expand(const bsort *s, size_t base, size_t n, uint64_t z)
{
    if (n < 2)
        return;
    const size_t q = n / 4;
    if (n >= 4) {
        /* Two levels in one pass over the node (half the passes over
         * memory), then the four grandchildren. */
        bs_xnode x;
        bs_xnode_params(s, base, n, z, &x);
        bs_xnode_swaps(s, base, n, &x, 0, q);
        for (size_t c = 0; c < 4; c++)
            obl_bsort_expand(s, base + c * q, q, x.z4[c]);
        return;
    }
    /* n = 2 */
    uint64_t m = (s->key[base] >> s->tsh) < base + 1, sb, thr;
    bs_xparams(n, z, m, &sb, &thr);
    bs_xswap1(s, base, base + 1, sb, thr, 0);
}

/*
 * Two threads (obl_bsort_sort_par, obl_bsort_expand_par). The network is
 * the one above, its independent parts run on two threads: the result is
 * the same as one thread's, and each thread's addresses are a function of
 * the sizes. In the test build, with a trace sink set, both parts run on
 * the calling thread, one after the other, so that the trace holds all of
 * them (the sink is thread-local).
 */


static void bs_two(obl_par_task_fn a, void *actx, obl_par_task_fn b, void *bctx)
{
#ifdef OBL_TRACE
    if (obl_trace_sink) {
        a(actx);
        b(bctx);
        return;
    }
#endif
    obl_par_two(a, actx, b, bctx);
}

/* The elements from lo on, as an array of their own. Public: lo. */
static bsort bs_from(const bsort *s, size_t lo)
{
    bsort t = *s;
    t.key = s->key + lo;
    t.aux = s->aux ? s->aux + lo : NULL;
    t.pay = s->pay ? s->pay + lo * s->vs : NULL;
    t.live = s->live > lo ? s->live - lo : 0;
    return t;
}

/* The mirror step of stage k on the block at lo, for its pairs i in
 * [i0, i1) (i against k - 1 - i; i0 and i1 multiples of 8, k >= 16): the
 * compare-exchanges of bs_steps'. Public: every argument. */
static void bs_mirror_part(const bsort *s, size_t lo, size_t k, size_t i0, size_t i1)
{
    size_t i = i0;
#if OBL_CT_AVX512
    if (!s->pay)
        for (; i + 8 <= i1; i += 8)
            bs_ce8_mirror(s, lo + i, lo + k - 8 - i);
    else if (s->vs % 64 == 0)
        for (; i + 8 <= i1; i += 8)
            bs_ce8p(s, lo + i, lo + k - 8 - i, 1);
#endif
    for (; i < i1; i++)
        bs_ce(s, lo + i, lo + k - 1 - i);
}

typedef struct bs_pjob {
    const bsort *s;
    size_t lo, m, C, C3, i0, i1;
    unsigned threads;
} bs_pjob;

static void bs_sort_par(const bsort *s, size_t m, unsigned threads);

static void bs_task_sort(void *p)
{
    const bs_pjob *j = (const bs_pjob *)p;
    bs_sort_par(j->s, j->m, j->threads);
}

static void bs_task_mirror(void *p)
{
    const bs_pjob *j = (const bs_pjob *)p;
    bs_mirror_part(j->s, 0, j->m, j->i0, j->i1);
}

/* The last stage (k = m) below its mirror step on the half [lo, lo + m/2):
 * obl_bsort_sort's passes and blocks for that stage, restricted to it. */
static void bs_task_tail(void *p)
{
    const bs_pjob *j = (const bs_pjob *)p;
    const bsort *s = j->s;
    const size_t k = j->m, C = j->C, C3 = j->C3, lo = j->lo, hi = lo + k / 2;
    bs_steps(s, lo, hi, k, 0, k / 4, C3);
    for (size_t b3 = lo; b3 < hi && b3 < s->live; b3 += C3) {
        bs_steps(s, b3, b3 + C3, k, 0, C3 / 2, C);
        size_t jt = C3 / 2 < C / 2 ? C3 / 2 : C / 2;
        for (size_t b = b3; b < b3 + C3 && b < s->live; b += C)
            bs_steps(s, b, b + C, k, 0, jt, 1);
    }
}

/* The halves sorted on threads / 2 threads each, then the last stage: its
 * mirror step's pairs split in two, then each half's remaining steps. */
static void bs_sort_par(const bsort *s, size_t m, unsigned threads)
{
    size_t esz = 8 + (s->aux ? 8 : 0) + (s->pay ? s->vs : 0);
    size_t C = bs_block(esz, bs_l2_bytes, m), C3 = bs_block(esz, bs_l3_bytes, m);
    if (C3 < C)
        C3 = C;
    if (threads < 2 || m < bs_par_min || C3 > m / 2) { /* public */
        obl_bsort_sort(s, m);
        return;
    }
    const size_t h = m / 2;
    bsort hi = bs_from(s, h);
    bs_pjob a = {s, 0, h, C, C3, 0, 0, threads / 2}, b = {&hi, 0, h, C, C3, 0, 0, threads - threads / 2};
    bs_two(bs_task_sort, &a, bs_task_sort, &b);
    bs_pjob ma = {s, 0, m, C, C3, 0, m / 4, 0}, mb = {s, 0, m, C, C3, m / 4, m / 2 - (size_t)bs_par_fault, 0};
    bs_two(bs_task_mirror, &ma, bs_task_mirror, &mb);
    bs_pjob ta = {s, 0, m, C, C3, 0, 0, 0}, tb = {s, h, m, C, C3, 0, 0, 0};
    bs_two(bs_task_tail, &ta, bs_task_tail, &tb);
}

/* see sort/bsort.h */
void obl_bsort_sort_par(const bsort *s, size_t m, unsigned threads)
{
    bs_sort_par(s, m, threads);
}

typedef struct bs_xjob {
    const bsort *s;
    size_t base, n, i0, i1;
    const bs_xnode *x;
    uint64_t z[2];
    unsigned threads;
} bs_xjob;

static void bs_task_xswaps(void *p)
{
    const bs_xjob *j = (const bs_xjob *)p;
    bs_xnode_swaps(j->s, j->base, j->n, j->x, j->i0, j->i1);
}

/* Two consecutive quarters of the node at base (n / 4 each). */
static void bs_task_xquarters(void *p)
{
    const bs_xjob *j = (const bs_xjob *)p;
    obl_bsort_expand_par(j->s, j->base, j->n, j->z[0], j->threads);
    obl_bsort_expand_par(j->s, j->base + j->n, j->n, j->z[1], j->threads);
}

/* see sort/bsort.h: the node's pass split in two halves of its i, then
 * the first two and the last two quarters on a thread each */
void obl_bsort_expand_par(const bsort *s, size_t base, size_t n, uint64_t z, unsigned threads)
{
    if (threads < 2 || n < bs_par_min) { /* public */
        obl_bsort_expand(s, base, n, z);
        return;
    }
    const size_t q = n / 4;
    bs_xnode x;
    bs_xnode_params(s, base, n, z, &x);
    bs_xjob a = {s, base, n, 0, q / 2, &x, {0, 0}, 0}, b = {s, base, n, q / 2, q, &x, {0, 0}, 0};
    bs_two(bs_task_xswaps, &a, bs_task_xswaps, &b);
    bs_xjob c = {s, base, q, 0, 0, &x, {x.z4[0], x.z4[1]}, threads / 2};
    bs_xjob d = {s, base + 2 * q, q, 0, 0, &x, {x.z4[2], x.z4[3]}, threads - threads / 2};
    bs_two(bs_task_xquarters, &c, bs_task_xquarters, &d);
}
