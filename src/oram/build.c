/*
 * Oblivious bulk build of a Circuit ORAM tree (32-bit metadata): places n
 * blocks with fresh uniform secret leaves in O(n log^2 n) work with a memory
 * trace that depends on n, vs and the tree shape only.
 *
 * Why this is needed: writing each block straight into a bucket on its
 * leaf's path would touch addresses chosen by the secret leaves, and the
 * layout would reveal the position map. Instead (docs/oram.md, "Build"):
 *
 *  1. draw leaf_i for i = 0 .. n-1 (sequential, public addresses);
 *  2. bitonic-sort the keys (leaf_i << 32 | i), without the payloads
 *     (Batcher 1968; a fixed network: the compare-exchange pattern is
 *     public; blocked for the caches, see bs_sort);
 *  3. one sequential pass over the sorted blocks computes each block's slot
 *     by first fit from the leaf bucket upwards (every bucket on a block's
 *     path is legal for it): per level a counter of the bucket currently
 *     being filled, reset when the sorted leaves enter a new bucket. Blocks
 *     that fit nowhere go to the stash (at most S of them; else the whole
 *     build is redone with fresh leaves, a public event of negligible
 *     probability);
 *  4. sort the (id, slot, leaf) triples back to id order (keys only), so
 *     that they line up with the payloads, which have not moved; then
 *     bitonic-sort the blocks with their payloads by slot (the only sort
 *     that moves payloads; the stash's slots are numbered after the
 *     tree's here), move the stash's blocks, the last few, to their slots
 *     by a scan of a window of P positions, and route the tree's blocks
 *     to their slots with an oblivious expansion: the order-preserving
 *     offset compaction of Sasy, Johnson and Goldberg (ORCompact, CCS
 *     2022) run backwards, depth first (bs_expand);
 *  5. one sequential pass writes every slot of the stash and the tree
 *     (the buckets from the last to the first when the payloads' working
 *     array lives in the tree's own memory: nr_build, "intree").
 *
 * Positions from n on hold the largest key in every sort, so the sorts
 * skip the cache blocks that start there (bs_sort, bsort.live).
 *
 * Everything but the loop bounds (n, vs, the tree's size) flows through
 * obl_ct selects and swaps; every step's addresses are fixed by n and the
 * tree size, so the build reveals nothing about the leaves or the data.
 */
#include <string.h>

#include "ct.h"
#include "common/secret.h"
#include "common/trace.h"
#include "oram/nroram_internal.h"

/* The trace hook (tests only): every compare-exchange reports the element
 * positions it touches (`lanes` consecutive ones from i). */
#define BS_TOUCH(i, lanes) OBL_TRACE_TOUCH(OBL_TRACE_REGION_SORT, OBL_TRACE_RW, (i), (lanes))

/* Sort keys stay below 2^63 (leaf << 32 | id with leaf < 2^31, or a slot
 * number), so a comparison is the sign of a difference. */
#define BUILD_EMPTY (UINT64_MAX >> 1)

/* Bits of the slot code in the packed form of nr_build's step 3. */
#define BS_CODE_BITS 8u

/* The arrays being sorted: keys, an optional aux word, an optional
 * payload of vs bytes per element. */
typedef struct bsort {
    uint64_t *key;
    uint64_t *aux;        /* NULL: none */
    unsigned char *pay;   /* NULL: none */
    size_t vs;
    unsigned tsh;         /* the expansion's target: key >> tsh (bs_expand) */
    size_t live;          /* bs_sort: the elements from `live` on have the
                             largest key, BUILD_EMPTY (public) */
} bsort;

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
 * stores every element after each step (docs/oram.md, "Build, fourth
 * session"). The same compare-exchanges, in the same order along every
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

/* The cache sizes the blocks are made for; nr_build_set_blocks (tests)
 * shrinks them, so that small sorts take every blocked path. */
OBL_TEST_KNOB(size_t, bs_l2_bytes, BS_BLOCK_BYTES);
OBL_TEST_KNOB(size_t, bs_l3_bytes, BS_L3_BYTES);

/* Tests only: the drawn leaves are ANDed with this (all ones: unchanged),
 * so that a test can crowd the blocks onto few paths and fill the stash. */
OBL_TEST_KNOB(uint64_t, bs_leaf_mask, UINT64_MAX);

/* Tests only: 0 makes every build take the two-word form of step 3. */
OBL_TEST_KNOB(int, bs_allow_packed, 1);

#ifdef OBL_TESTING
/* see nroram_internal.h */
void nr_build_set_packing(int allow)
{
    bs_allow_packed = allow;
}

/* see nroram_internal.h */
void nr_build_set_leaf_mask(uint64_t mask)
{
    bs_leaf_mask = mask;
}

/* see nroram_internal.h */
void nr_build_set_blocks(size_t l2_bytes, size_t l3_bytes)
{
    bs_l2_bytes = l2_bytes ? l2_bytes : BS_BLOCK_BYTES;
    bs_l3_bytes = l3_bytes ? l3_bytes : BS_L3_BYTES;
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
static void bs_sort(const bsort *s, size_t m)
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
 * m targets in its left half: sb and thr (see bs_expand). Secret. */
static inline void bs_xparams(size_t n, uint64_t z, uint64_t m, uint64_t *sb, uint64_t *thr)
{
    const uint64_t h = n / 2;
    *sb = obl_ct_ge64((z & (h - 1)) + m, h) ^ obl_ct_ge64(z, h);
    *thr = (z + m) & (h - 1);
}

static void bs_expand(const bsort *s, size_t base, size_t n, uint64_t z)
{
    if (n < 2)
        return;
    const size_t h = n / 2, q = n / 4;
    const uint64_t *key = s->key;
#if OBL_CT_AVX512
    const int vec = !s->pay || s->vs % 64 == 0; /* public */
#else
    const int vec = 0;
#endif
    if (n >= 4) {
        /* Two levels in one pass over the node (half the passes over
         * memory): the children's counts are those of the targets in the
         * first and third quarters, known before any swap. The swaps of
         * the four positions i, i + q, i + h, i + h + q: the node's (i and
         * i + h; i + q and i + h + q), then each child's (i and i + q;
         * i + h and i + h + q), the order of the two levels. */
        uint64_t m = 0, ml = 0, m3 = 0;
        const unsigned tsh = s->tsh;
        for (size_t i = base; i < base + n; i++) {
            uint64_t tg = key[i] >> tsh;
            m += tg < base + h; /* comparisons' 0/1 summed: no branch */
            ml += tg < base + q;
            m3 += tg < base + h + q;
        }
        const uint64_t mr = m3 - m;
        uint64_t sb, thr, sbl, thrl, sbr, thrr;
        bs_xparams(n, z, m, &sb, &thr);
        const uint64_t zl = z & (h - 1), zr = thr; /* the children's offsets */
        bs_xparams(h, zl, ml, &sbl, &thrl);
        bs_xparams(h, zr, mr, &sbr, &thrr);
        size_t i = 0;
#if OBL_CT_AVX512
        if (vec && q >= 8)
            for (; i < q; i += 8) {
                size_t a0 = base + i, a1 = a0 + q, a2 = a0 + h, a3 = a2 + q;
                bs_xswap8(s, a0, a2, bs_xmask8(sb, thr, i));
                bs_xswap8(s, a1, a3, bs_xmask8(sb, thr, i + q));
                bs_xswap8(s, a0, a1, bs_xmask8(sbl, thrl, i));
                bs_xswap8(s, a2, a3, bs_xmask8(sbr, thrr, i));
            }
#endif
        for (; i < q; i++) {
            size_t a0 = base + i, a1 = a0 + q, a2 = a0 + h, a3 = a2 + q;
            bs_xswap1(s, a0, a2, sb, thr, i);
            bs_xswap1(s, a1, a3, sb, thr, i + q);
            bs_xswap1(s, a0, a1, sbl, thrl, i);
            bs_xswap1(s, a2, a3, sbr, thrr, i);
        }
        const uint64_t zll = zl & (q - 1), zrl = zr & (q - 1);
        bs_expand(s, base, q, zll);
        bs_expand(s, base + q, q, thrl);
        bs_expand(s, base + h, q, zrl);
        bs_expand(s, base + h + q, q, thrr);
        return;
    }
    /* n = 2 */
    uint64_t m = (key[base] >> s->tsh) < base + 1, sb, thr;
    bs_xparams(n, z, m, &sb, &thr);
    bs_xswap1(s, base, base + 1, sb, thr, 0);
    (void)vec;
}

/* see nroram_internal.h */
obl_err nr_build(obl_nroram *o, uint64_t n, const unsigned char *data, size_t ss,
                 size_t data_len, const uint64_t *ids, nr_id_fn id_fn, const void *id_ctx,
                 uint32_t *leaves_out)
{
    const size_t vs = o->vs;
    const uint32_t P = o->P, logL = o->logL, D = o->D;
    const uint64_t T = (uint64_t)P + (uint64_t)NR_Z * o->nbuckets; /* all slots */
    /* sort keys are leaf << 32 | i: leaves below 2^31, positions below 2^32 */
    if (n > o->capacity || n > UINT32_MAX - 1 || T > UINT32_MAX || logL > 31 ||
        (o->pb == 4 && (ids || id_fn)))
        return OBL_ERR_TOO_LARGE;
    if (ids && id_fn)
        return OBL_ERR_INVALID_ARG;
    size_t m = 1;
    while (m < n)
        m <<= 1;
    /* Working positions: the tree's slots at [0, E), E = Z * (nbuckets + 1)
     * = 4L, a power of two at least m (L >= n / 2), for the expansion;
     * the stash's slots after them, at [E, E + P) (step 4). */
    const size_t E = (size_t)NR_Z * ((size_t)o->nbuckets + 1);
    size_t W = E + P; /* working length */
    obl_alloc_ctx *ac = &o->ac;
    /* Payload stride of the working array: blocks of up to 128 bytes are
     * padded to whole cache lines (56 -> 64, 100 -> 128), so that no
     * payload straddles a line and every move is whole 64-byte vectors
     * (in-process A/B, median of 5: RORAM 8/56 from an array at 2^20
     * 1.88 -> 1.29 s; blocks of 100 bytes at 2^19 1.06 -> 0.93 s); larger
     * ones only when that adds at most 1/16 to them (328 -> 384 bytes
     * measured slower: more traffic; 368 -> 384, the map's buckets, takes
     * the sorts' vector path: their payload sort at 2^16 55 -> 41 and
     * 72 -> 56 ms, alternating binaries). */
    /* Explicit ids travel with the payload, in 8 bytes after the value
     * (56-byte values and their ids fill one line). */
    const size_t idoff = vs, pl = vs + (ids ? 8 : 0);
    const int haspay = data || ids || id_fn;
    const size_t ps = nr_build_stride(pl);
    /* Packed form (public: n and the tree's shape): when the block's id,
     * its leaf and an 8-bit code of its slot fit in 62 bits, the first
     * fit leaves them in one word, id highest, so that the sort back to
     * id order moves 8-byte keys without an aux word (at 2^20 blocks,
     * 83 -> 31 ms). The code is level * Z + (slot in the bucket) for the
     * tree, whose slot the leaf then gives, or Z * D + j for stash slot j
     * (Z * D + P <= 64 + 66). */
    const unsigned idb = n > 1 ? 64 - (unsigned)__builtin_clzll((uint64_t)n - 1) : 0;
    const int packed = bs_allow_packed && idb + logL + BS_CODE_BITS <= 62;
    /* With ids from the caller or from the content (public), the payload
     * sort and the expansion need no aux word either: the key is the
     * working position << 32 | leaf, and the expansion's target is key >>
     * 32 (working positions below 2^31 - 1, so below BUILD_EMPTY >> 32). */
    const int kl = (ids || id_fn) && W < ((size_t)1 << 31) - 1;
    size_t kb = W * 8, pb = haspay ? W * ps : 0, ab = packed && kl ? 0 : kb;
    /* The payloads' working array lives in the tree's own memory when it
     * fits (public: sizes only): the tree is still all zeros, as a new
     * array would be, nr_create left room after the buckets
     * (nr_build_slack), and step 5 can then write the buckets from the last
     * to the first without overwriting a block it has yet to read, since
     * bucket b starts at b * bstride >= b * Z * ps, where its blocks are.
     * This saves the fresh memory of the largest array of the build (at
     * 2^20 values of 56 bytes, 128 of the map build's 422 MiB; docs/oram.md,
     * "Build"). */
    const int intree = haspay && o->tree_zero && pb <= o->tree_bytes && o->bstride >= NR_Z * ps;
    uint64_t *key = (uint64_t *)obl_alloc(ac, kb, 64);
    uint64_t *aux = key && ab ? (uint64_t *)obl_alloc(ac, ab, 64) : NULL;
    unsigned char *pay = !key || !haspay ? NULL
                         : intree        ? o->tree
                                         : (unsigned char *)obl_alloc(ac, pb, 64);
    /* intree: a bucket's blocks, read before the bucket is written */
    const size_t tbb = intree ? NR_Z * ps : 0;
    unsigned char *tb = pay && intree ? (unsigned char *)obl_alloc(ac, tbb, 64) : NULL;
    obl_err err = OBL_OK;
    if (!key || (ab && !aux) || (haspay && !pay) || (intree && !tb)) {
        err = OBL_ERR_NOMEM;
        goto out;
    }

    /* the payloads stay in id order until step 4 */
    if (pay) { /* zero: obl_alloc zeroed it, or the tree is (intree) */
        if (ss > vs)
            ss = vs;
        size_t len = !data ? 0 : data_len < n * ss ? data_len : n * ss;
        for (size_t i = 0; ss && i * ss < len; i++) {
            size_t l = len - i * ss < ss ? len - i * ss : ss;
            memcpy(pay + i * ps, data + i * ss, l);
        }
        for (size_t i = 0; ids && i < n; i++)
            memcpy(pay + i * ps + idoff, &ids[i], 8);
        OBL_SECRET(pay, pb);
    }
    for (int attempt = 0;; attempt++) {
        /* 1. leaves and keys, in id order */
        for (size_t i = 0; i < W; i++) {
            if (i < n) {
                uint64_t leaf = obl_prg_bits(&o->prg, logL) & bs_leaf_mask;
                leaves_out[i] = (uint32_t)leaf;
                key[i] = leaf << 32 | i;
            } else {
                key[i] = BUILD_EMPTY;
            }
            if (aux) /* public */
                aux[i] = 0;
        }
        /* the leaves and everything derived from them are secret */
        OBL_SECRET(key, kb);
        OBL_SECRET(leaves_out, n * sizeof(uint32_t));
        /* 2. sort the keys by (leaf, id) */
        bsort s1 = {key, NULL, NULL, vs, 0, n};
        bs_sort(&s1, m);

        /* 3. first fit: slot of each block. Per level, the fill of the
         * bucket currently being filled is kept as two bit masks over the
         * levels (Z = 2): f1 bit k, it holds at least one block; f2 bit k,
         * two (full). Entering a block whose leaf shares pl leading bits
         * with the previous one's keeps the buckets of levels 0 .. pl and
         * starts empty ones below. The block takes the deepest level with
         * room (the highest clear bit of f2). clz and shifts by secret
         * counts take the same time for every count on x86 (lzcnt, shlx,
         * shrx); clz gets non-zero arguments only. Before: a loop over the
         * D levels with a select per level and counter, 40 ms of the map
         * build at 2^20. */
        _Static_assert(NR_Z == 2, "first fit keeps two fill masks");
        const uint64_t all = ((uint64_t)2 << (D - 1)) - 1; /* D <= 32 */
        uint64_t f1 = 0, f2 = 0, prev = 0, stash = 0, fail = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t leaf = key[i] >> 32, id = key[i] & 0xffffffffu;
            uint64_t x = ((leaf ^ prev) << 1 | 1) << (63 - logL);
            uint64_t keep = ((uint64_t)2 << __builtin_clzll(x)) - 1; /* levels 0 .. pl */
            f1 &= keep;
            f2 &= keep;
            uint64_t open = ~f2 & all; /* levels with room */
            uint64_t placed = obl_ct_neq64(open, 0);
            uint64_t kk = 63 - (uint64_t)__builtin_clzll(open | 1); /* the deepest */
            uint64_t bit = (uint64_t)1 << kk, mk = obl_ct_mask(placed), c = (f1 >> kk) & 1;
            uint64_t t = P + ((bit - 1) + (leaf >> (logL - kk))) * NR_Z + c;
            f2 |= f1 & bit & mk;
            f1 |= bit & mk;
            uint64_t to_stash = placed ^ 1;
            fail |= to_stash & obl_ct_ge64(stash, o->S);
            t = obl_ct_select64(to_stash, stash, t);
            uint64_t code = obl_ct_select64(to_stash, NR_Z * D + stash, kk * NR_Z + c);
            stash += to_stash;
            prev = leaf;
            if (packed) { /* public */
                key[i] = id << (logL + BS_CODE_BITS) | code << logL | leaf;
            } else {
                key[i] = id;
                aux[i] = t << 32 | leaf;
            }
        }
        /* LEAK: whether first fit overflowed the tree and the stash; it
         * needs more than S blocks above the root, probability far below the
         * stash overflow's (docs/oram.md). The retry uses fresh leaves. */
        if (!OBL_DECLASSIFY_VAL(fail))
            break;
        if (attempt >= 3) {
            err = OBL_ERR_STASH_OVERFLOW;
            goto out;
        }
    }

    /* 4. back to id order (keys only), where the payloads are; then sort
     * by working position (the slot, the stash's after the tree's) with
     * the payloads, and expand */
    {
        /* Without payloads (a zero build) nothing waits in id order: the
         * keys stay in leaf order, each with its id (key[i] = id). */
        if (pay) {
            bsort s3 = {key, packed ? NULL : aux, NULL, vs, 0, n}; /* public: packed */
            bs_sort(&s3, m); /* ids 0 .. n - 1 in order now */
        }
        const uint64_t lmask = ((uint64_t)1 << logL) - 1;
        for (size_t i = 0; i < W; i++) {
            uint64_t real = obl_ct_lt64(i, n); /* public */
            uint64_t wp, leaf, id;
            if (packed) { /* public: the slot from the leaf and the code */
                uint64_t w = key[i], code = (w >> logL) & ((1u << BS_CODE_BITS) - 1);
                uint64_t kk = (code / NR_Z) & 31, sh = (logL - kk) & 63; /* garbage past n */
                uint64_t ts = ((((uint64_t)1 << kk) - 1) + ((w & lmask) >> sh)) * NR_Z + code % NR_Z;
                wp = obl_ct_select64(obl_ct_lt64(code, NR_Z * D), ts, E + code - NR_Z * D);
                leaf = w & lmask;
                id = pay ? i : w >> (logL + BS_CODE_BITS); /* public: pay */
            } else {
                uint64_t t = aux[i] >> 32; /* the slot: stash first, then the tree */
                wp = obl_ct_select64(obl_ct_lt64(t, P), E + t, t - P);
                leaf = aux[i] & 0xffffffffu;
                id = pay ? i : key[i] & 0xffffffffu; /* public: pay */
            }
            if (kl) { /* public */
                key[i] = obl_ct_select64(real, wp << 32 | leaf, BUILD_EMPTY);
            } else {
                key[i] = obl_ct_select64(real, wp, BUILD_EMPTY);
                aux[i] = obl_ct_select64(real, leaf << 32 | id, 0);
            }
        }
        bsort s2 = {key, kl ? NULL : aux, pay, ps, kl ? 32u : 0u, n}; /* public: kl */
        bs_sort(&s2, m);
        /* The stash's blocks (at most S < P of them) are the last ones of
         * [0, n): the window of the last P positions holds them all. Each
         * stash slot j takes the block whose key is E + j, by a swap with
         * the empty element there (every window position is tried). */
        size_t w0 = n > P ? n - P : 0;
        for (size_t j = 0; j < P; j++)
            for (size_t w = w0; w < n; w++) {
                BS_TOUCH(w, 1);
                BS_TOUCH(E + j, 1);
                uint64_t c = obl_ct_eq64(key[w] >> s2.tsh, E + j);
                obl_ct_cswap64(c, &key[w], &key[E + j]);
                if (!kl) /* public */
                    obl_ct_cswap64(c, &aux[w], &aux[E + j]);
                if (pay)
                    obl_ct_cswap(c, pay + w * ps, pay + (E + j) * ps, ps);
            }
        /* the tree's blocks, at [0, n - stash), to their slots */
        bs_expand(&s2, 0, E, 0);
    }

    /* 5. write the stash and the tree, slot by slot: the stash first, then
     * the buckets, from the last to the first when the payloads are in the
     * tree (intree, above: a bucket's blocks are copied to tb before it is
     * written), so that no block is overwritten before it is read */
    for (size_t ii = 0; ii < (size_t)T; ii++) {
        /* slot i; public */
        size_t i = !intree || ii < P ? ii : (size_t)T - 1 - (ii - P);
        OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_TREE, OBL_TRACE_WRITE, i, 1);
        size_t wp = i < P ? E + i : i - P; /* working position (step 4); public */
        const unsigned char *src = pay ? pay + wp * ps : NULL;
        if (intree && i >= P) { /* public: the bucket's blocks, once per bucket */
            size_t z = (i - P) % NR_Z;
            if (z == NR_Z - 1)
                memcpy(tb, pay + (wp - z) * ps, tbb);
            src = tb + z * ps;
        }
        uint64_t valid = obl_ct_neq64(key[wp], BUILD_EMPTY);
        uint64_t id = 0, leaf;
        if (kl) { /* public */
            leaf = obl_ct_select64(valid, key[wp] & 0xffffffffu, 0);
        } else {
            id = (uint32_t)aux[wp];
            leaf = obl_ct_select64(valid, aux[wp] >> 32, 0);
        }
        if (ids) /* public */
            memcpy(&id, src + idoff, 8);
        if (id_fn) /* public; every slot, real or empty */
            id = id_fn(id_ctx, src);
        unsigned char *mp, *dst;
        if (i < P) {
            mp = (unsigned char *)o->bmeta + i * 2 * o->pb;
            dst = o->bdata + i * vs;
        } else {
            size_t b = (i - P) / NR_Z, z = (i - P) % NR_Z; /* public */
            unsigned char *bp = o->tree + b * o->bstride;
            mp = bp + z * 2 * o->pb;
            dst = bp + o->doff + z * vs;
        }
        if (o->pb == 4) { /* public */
            nr_meta32 me = {obl_ct_select32(valid, (uint32_t)id, NR_DUMMY32), (uint32_t)leaf};
            memcpy(mp, &me, sizeof(me));
        } else {
            nr_meta64 me = {obl_ct_select64(valid, id, NR_DUMMY64), leaf};
            memcpy(mp, &me, sizeof(me));
        }
        if (pay)
            memcpy(dst, src, vs);
        else
            memset(dst, 0, vs);
    }
    if (intree) { /* public: the bytes the buckets leave, wiped */
        size_t used = o->doff + NR_Z * vs, tail = (size_t)o->nbuckets * o->bstride;
        for (uint64_t b = 0; used < o->bstride && b < o->nbuckets; b++)
            memset(o->tree + b * o->bstride + used, 0, o->bstride - used);
        memset(o->tree + tail, 0, o->tree_bytes - tail);
    }
    o->tree_zero = 0;
out:
    if (intree && err != OBL_OK && pay) /* public: the tree as it was, all zeros */
        memset(o->tree, 0, o->tree_bytes);
    obl_free(ac, tb, tbb);
    if (!intree)
        obl_free(ac, pay, pb);
    obl_free(ac, aux, ab);
    obl_free(ac, key, kb);
    return err;
}
