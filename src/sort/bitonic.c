/* SPDX-License-Identifier: MIT */
/*
 * Bitonic sort of records for any n (obl/sort.h): Batcher's network (1968)
 * in the arbitrary-n form of H. W. Lang: sort the first half descending,
 * the second ascending, then merge; a merge of n compares i with i + m (m
 * the largest power of two below n) and merges both parts. Run depth first,
 * every sub-network works on a contiguous range, so once a range fits in a
 * cache level all its steps stay there (a cache-oblivious blocking). The
 * compare-exchanges depend on n alone; threads split the two halves of the
 * top levels and the compare passes of the large merges.
 *
 * Secret: keys, payloads. Public: n, sizes, threads.
 */
#include "sort/entry.h"
#include "sort/par.h"
#include "sort/rec.h"

/* Ranges below this many records run on one thread. */
#define BT_PAR_MIN ((size_t)1 << 12)

/* The masked swap of `words` words; vec (a constant): a width known at
 * compile time, swapped as whole 32-byte vectors where the variant has
 * them (AND/XOR of full vectors, then words), straight-line code with no
 * tail loop for the compiler to turn into masked memory operands.
 * Secret: mask, x, y. Public: words, vec. */
OBL_INLINE void bt_cswap(uint64_t mask, uint64_t *x, uint64_t *y, size_t words, int vec)
{
    size_t k = 0;
#if OBL_CT_AVX2
    if (vec) { /* public: a whole number of vectors, so no tail is compiled */
        k = words & ~(size_t)3;
        obl_ct_cswap_avx2_inl(mask & 1, x, y, 8 * k);
    }
#else
    (void)vec;
#endif
    rec_cswap(mask, x + k, y + k, words - k);
}

/* Compare-exchange passes: records lo .. hi - 1 of x against the same of
 * y, so that afterwards key(x) <= key(y) (asc) or >= (desc). Secret: the
 * records. Public: everything else. */
OBL_INLINE void bt_pass_w(uint64_t *x, uint64_t *y, size_t lo, size_t hi, int asc, size_t kw,
                          size_t words, int vec)
{
    for (size_t i = lo; i < hi; i++) {
        uint64_t *p = x + i * words, *q = y + i * words;
        uint64_t c = asc ? rec_key_gt(p, q, kw) : rec_key_gt(q, p, kw); /* public: asc */
        bt_cswap(obl_ct_mask(c), p, q, words, vec);
    }
}

/* Records of up to 16 words get a copy with the width a constant: the
 * swap is then a few whole vectors with no loop or tail to set up, which
 * cost more than the exchange itself for short passes. */
#define BT_W(w) \
    case w: bt_pass_w(x, y, lo, hi, asc, kw, w, (w) > 4); break;

static void bt_pass(uint64_t *x, uint64_t *y, size_t lo, size_t hi, int asc, size_t kw,
                    size_t words)
{
    switch (words) { /* public */
    case 1: bt_pass_w(x, y, lo, hi, asc, 1, 1, 0); break;
    BT_W(2) BT_W(3) BT_W(4) BT_W(5) BT_W(6) BT_W(7) BT_W(8) BT_W(9)
    BT_W(10) BT_W(11) BT_W(12) BT_W(13) BT_W(14) BT_W(15) BT_W(16)
    default: bt_pass_w(x, y, lo, hi, asc, kw, words, 0); break;
    }
}

typedef struct bt_node {
    const rec_arr *a;
    size_t base, n;
    int asc;
    unsigned threads;
} bt_node;

typedef struct bt_pass_ctx {
    const bt_node *nd;
    size_t m;
} bt_pass_ctx;

static void bt_pass_range(void *ctx, size_t lo, size_t hi)
{
    const bt_pass_ctx *c = ctx;
    const rec_arr *a = c->nd->a;
#ifdef OBL_TRACE
    for (size_t i = lo; i < hi; i++) {
        REC_TOUCH(c->nd->base + i);
        REC_TOUCH(c->nd->base + c->m + i);
    }
#endif
    bt_pass(rec_at(a, c->nd->base), rec_at(a, c->nd->base + c->m), lo, hi, c->nd->asc, a->kw,
            a->words);
}

static void bt_merge(const bt_node *nd);
static void bt_sort(const bt_node *nd);

static void bt_merge_task(void *ctx)
{
    bt_merge(ctx);
}

static void bt_sort_task(void *ctx)
{
    bt_sort(ctx);
}

/* Runs x and y (disjoint ranges) in parallel when nd may use threads. */
static void bt_two(const bt_node *nd, bt_node *x, bt_node *y, obl_par_task_fn fn)
{
    if (nd->threads >= 2 && nd->n >= BT_PAR_MIN) { /* public */
        x->threads = nd->threads / 2;
        y->threads = nd->threads - x->threads;
        obl_par_two(fn, x, fn, y);
        return;
    }
    x->threads = y->threads = 1;
    fn(x);
    fn(y);
}

/* Below this many records a merge or sort runs on one thread, its passes
 * called directly: through the parallel loop a pass of a few exchanges
 * cost several times its exchanges. The same exchanges in the same order. */
#define BT_SMALL ((size_t)64)

/* The largest power of two below n (n >= 2). */
static size_t bt_pow2_below(size_t n)
{
    size_t m = 1;
    while (m * 2 < n)
        m *= 2;
    return m;
}

static void bt_merge_small(const rec_arr *a, size_t base, size_t n, int asc)
{
    if (n < 2)
        return;
    size_t m = bt_pow2_below(n);
#ifdef OBL_TRACE
    for (size_t i = 0; i < n - m; i++) {
        REC_TOUCH(base + i);
        REC_TOUCH(base + m + i);
    }
#endif
    bt_pass(rec_at(a, base), rec_at(a, base + m), 0, n - m, asc, a->kw, a->words);
    bt_merge_small(a, base, m, asc);
    bt_merge_small(a, base + m, n - m, asc);
}

static void bt_sort_small(const rec_arr *a, size_t base, size_t n, int asc)
{
    if (n < 2)
        return;
    size_t m = n / 2;
    bt_sort_small(a, base, m, !asc);
    bt_sort_small(a, base + m, n - m, asc);
    bt_merge_small(a, base, n, asc);
}

static void bt_merge(const bt_node *nd)
{
    const size_t n = nd->n;
    if (n < BT_SMALL) { /* public */
        bt_merge_small(nd->a, nd->base, n, nd->asc);
        return;
    }
    size_t m = bt_pow2_below(n);
    bt_pass_ctx c = {nd, m};
    obl_par_for(n >= BT_PAR_MIN ? nd->threads : 1, n - m, 256, bt_pass_range, &c);
    bt_node x = {nd->a, nd->base, m, nd->asc, 1}, y = {nd->a, nd->base + m, n - m, nd->asc, 1};
    bt_two(nd, &x, &y, bt_merge_task);
}

static void bt_sort(const bt_node *nd)
{
    const size_t n = nd->n;
    if (n < BT_SMALL) { /* public */
        bt_sort_small(nd->a, nd->base, n, nd->asc);
        return;
    }
    const size_t m = n / 2;
    bt_node x = {nd->a, nd->base, m, !nd->asc, 1}, y = {nd->a, nd->base + m, n - m, nd->asc, 1};
    bt_two(nd, &x, &y, bt_sort_task);
    bt_merge(nd);
}

/* see rec.h */
obl_err rec_arr_init(rec_arr *a, void *recs, size_t n, const obl_sort_params *p)
{
    if (!p || (p->key_size != 8 && p->key_size != 16) || p->rec_size < p->key_size ||
        p->rec_size % 8 != 0 || (n > 0 && !recs))
        return OBL_ERR_INVALID_ARG;
    /* n * rec_size must be an array's size, with 64 bytes a record to spare
     * for obl_sort_shuffled's scratch (rec_sort_scratch_bytes) */
    if ((uint64_t)n >= ((uint64_t)1 << 32) || p->rec_size > SIZE_MAX / (n ? n : 1) - 64)
        return OBL_ERR_TOO_LARGE;
    *a = (rec_arr){recs, n, p->rec_size / 8, p->key_size / 8, p->threads ? p->threads : 1};
    return OBL_OK;
}

/* see rec.h */
void rec_sort_bitonic(const rec_arr *a)
{
    bt_node nd = {a, 0, a->n, 1, a->threads};
    bt_sort(&nd);
}

/* a variant of the obl/sort.h function (sort/entry.h) */
obl_err OBL_V(srt_bitonic)(void *recs, size_t n, const obl_sort_params *p)
{
    rec_arr a;
    obl_err e = rec_arr_init(&a, recs, n, p);
    if (e != OBL_OK)
        return e;
    rec_sort_bitonic(&a);
    return OBL_OK;
}
