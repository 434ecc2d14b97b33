/* SPDX-License-Identifier: MIT */
/*
 * Oblivious random shuffle and shuffle-then-sort (obl/sort.h).
 *
 * ORShuffle (Sasy, Johnson, Goldberg, CCS 2022, section 5): mark exactly
 * floor(n/2) of the n records, a uniformly random subset (sequential
 * sampling: record i is marked with probability need / (n - i)), compact
 * the marked ones to the front (compact.c), and shuffle both halves the
 * same way. The subset is uniform and each half is shuffled uniformly, so
 * the permutation is uniform (up to the PRG and the bias of obl_prg_below,
 * below n / 2^64 per draw).
 *
 * Shuffle-then-sort: each record carries its original index through the
 * shuffle; a merge sort of the (key, original index) pairs, which are
 * distinct and fixed before the shuffle, branches on comparisons whose
 * outcomes are all fixed by the permutation from the shuffled order to the
 * sorted one; that permutation is uniform whatever the keys, because the
 * shuffle is (docs/sort.md). The records then move by that permutation.
 */
#include <string.h>

#include "common/prg.h"
#include "common/secret.h"
#include "sort/columns.h"
#include "sort/entry.h"
#include "sort/par.h"
#include "sort/rec.h"

/* Nodes below this many records run on one thread. */
#define SH_PAR_MIN ((size_t)1 << 13)

typedef struct sh_node {
    const rec_arr *a;  /* the whole array */
    uint32_t *E;       /* scratch prefix counts, one per record */
    size_t base, n;
    obl_prg *g;
    unsigned threads;
} sh_node;

/* Marks floor(n/2) of the records [base, base + n) at random and writes
 * their exclusive prefix counts E[base .. base + n) (the compaction reads
 * no count at its end). Secret: the marks, E. Public: n. */
static void sh_mark(const sh_node *nd)
{
    uint64_t need = nd->n / 2;
    uint32_t c = 0, *E = nd->E + nd->base;
    for (size_t i = 0; i < nd->n; i++) {
        uint64_t f = obl_ct_lt64(obl_prg_below(nd->g, nd->n - i), need);
        E[i] = c;
        c += (uint32_t)f;
        need -= f;
    }
}

static void sh_run(sh_node *nd);

static void sh_task(void *ctx)
{
    sh_run(ctx);
}

static void sh_run(sh_node *nd)
{
    const size_t n = nd->n, h = n / 2;
    if (n < 2)
        return;
    sh_mark(nd);
    rec_arr sub = *nd->a;
    sub.w = rec_at(nd->a, nd->base);
    sub.n = n;
    sub.threads = nd->threads;
    rec_compact(&sub, nd->E + nd->base);
    sh_node L = {nd->a, nd->E, nd->base, h, nd->g, 1};
    sh_node R = {nd->a, nd->E, nd->base + h, n - h, nd->g, 1};
    if (nd->threads >= 2 && n >= SH_PAR_MIN) { /* public */
        obl_prg g2;
        unsigned char seed[32];
        obl_prg_fill(nd->g, seed, sizeof seed);
        obl_prg_init_bytes(&g2, seed);
        memset(seed, 0, sizeof seed);
        L.g = &g2;
        L.threads = nd->threads / 2;
        R.threads = nd->threads - L.threads;
        obl_par_two(sh_task, &L, sh_task, &R);
        obl_prg_wipe(&g2);
        return;
    }
    sh_run(&L);
    sh_run(&R);
}

/* Seeds g from p's randomness. */
static obl_err sh_seed(obl_prg *g, const obl_sort_params *p)
{
    return obl_prg_init(g, p->random, p->random_opaque);
}

/* see rec.h */
obl_err rec_shuffle(const rec_arr *a, uint32_t *E, struct obl_prg *g)
{
    sh_node nd = {a, E, 0, a->n, g, a->threads};
    sh_run(&nd);
    return OBL_OK;
}

/* a variant of the obl/sort.h function (sort/entry.h) */
obl_err OBL_V(srt_shuffle)(void *recs, size_t n, const obl_sort_params *p)
{
    rec_arr a;
    obl_err e = rec_arr_init(&a, recs, n, p);
    if (e != OBL_OK || n < 2)
        return e;
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, p->alloc);
    uint32_t *E = obl_alloc(&ac, n * sizeof *E, 64);
    if (!E)
        return OBL_ERR_NOMEM;
    obl_prg g;
    e = sh_seed(&g, p);
    if (e == OBL_OK)
        rec_shuffle(&a, E, &g);
    obl_prg_wipe(&g);
    obl_free(&ac, E, n * sizeof *E);
    return e;
}

/* ---------------------------------------------------- shuffle, then sort -- */

/* A key and its tie-break: the record's original index (high 32 bits,
 * fixed before the shuffle, distinct) and its position after the shuffle
 * (low 32 bits, where the record is fetched from; it never decides a
 * comparison, as the original indices differ). */
typedef struct sh_ent {
    uint64_t k0, k1;
    uint64_t tie;
} sh_ent;

/* 1 if x < y. LEAK: the outcome is declassified: the (key, original index)
 * pairs are distinct, so after the shuffle the outcomes of the merge
 * sort's comparisons are a function of a uniformly random permutation,
 * independent of the keys (docs/sort.md). The trace hook records each
 * outcome as a read of length 0 at offset 0 or 1 (test_sort checks their
 * distribution). */
static inline int sh_lt(const sh_ent *x, const sh_ent *y)
{
    uint64_t c = obl_ct_lt64(x->k0, y->k0) |
                 (obl_ct_eq64(x->k0, y->k0) &
                  (obl_ct_lt64(x->k1, y->k1) |
                   (obl_ct_eq64(x->k1, y->k1) & obl_ct_lt64(x->tie, y->tie))));
    int r = (int)OBL_DECLASSIFY_VAL(c);
    OBL_TRACE_TOUCH(OBL_TRACE_REGION_SORT, OBL_TRACE_READ, r, 0);
    return r;
}

/* Merges the sorted runs x[0, nx) and y[0, ny) into out. */
static void sh_merge(const sh_ent *x, size_t nx, const sh_ent *y, size_t ny, sh_ent *out)
{
    size_t i = 0, j = 0, k = 0;
    while (i < nx && j < ny) { /* the comparison picks a source, no branch */
        size_t c = (size_t)sh_lt(&y[j], &x[i]);
        const sh_ent *src = c ? &y[j] : &x[i];
        out[k++] = *src;
        j += c;
        i += c ^ 1;
    }
    while (i < nx)
        out[k++] = x[i++];
    while (j < ny)
        out[k++] = y[j++];
}

/* Sorts v[0, n) (result in v), with tmp of n entries; threads split the
 * halves of the top levels. */
typedef struct sh_ms {
    sh_ent *v, *tmp;
    size_t n;
    unsigned threads;
} sh_ms;

static void sh_msort(sh_ms *s);

static void sh_msort_task(void *ctx)
{
    sh_msort(ctx);
}

static void sh_msort(sh_ms *s)
{
    const size_t n = s->n;
    if (n <= 16) { /* insertion sort */
        for (size_t i = 1; i < n; i++) {
            sh_ent t = s->v[i];
            size_t j = i;
            while (j > 0 && sh_lt(&t, &s->v[j - 1])) {
                s->v[j] = s->v[j - 1];
                j--;
            }
            s->v[j] = t;
        }
        return;
    }
    const size_t h = n / 2;
    sh_ms L = {s->v, s->tmp, h, 1}, R = {s->v + h, s->tmp + h, n - h, 1};
    if (s->threads >= 2 && n >= SH_PAR_MIN) { /* public */
        L.threads = s->threads / 2;
        R.threads = s->threads - L.threads;
        obl_par_two(sh_msort_task, &L, sh_msort_task, &R);
    } else {
        sh_msort(&L);
        sh_msort(&R);
    }
    sh_merge(s->v, h, s->v + h, n - h, s->tmp);
    memcpy(s->v, s->tmp, n * sizeof *s->v);
}

/* see rec.h */
size_t rec_sort_scratch_bytes(size_t n, size_t words)
{
    return n * (2 * sizeof(sh_ent) + (words + 1) * 8);
}

/* see rec.h */
void rec_sort_shuffled(const rec_arr *a, uint32_t *E, struct obl_prg *g, void *scratch)
{
    const size_t n = a->n, W = a->words;
    sh_ent *v = scratch, *tmp = v + n;
    /* each record with its original index as one more word, shuffled */
    rec_arr x = {(uint64_t *)(tmp + n), n, W + 1, a->kw, a->threads};
    for (size_t i = 0; i < n; i++) {
        memcpy(rec_at(&x, i), rec_at(a, i), W * 8);
        rec_at(&x, i)[W] = i;
    }
    rec_shuffle(&x, E, g);
    /* r[1] exists (W + 1 words) and is masked, not loaded conditionally:
     * clang made the load a masked one (masked-operand audit) */
    const uint64_t k1 = a->kw == 2 ? UINT64_MAX : 0; /* public: kw */
    for (size_t i = 0; i < n; i++) {
        const uint64_t *r = rec_at(&x, i);
        v[i] = (sh_ent){r[0], r[1] & k1, r[W] << 32 | i};
    }
    sh_ms s = {v, tmp, n, a->threads};
    sh_msort(&s);
    /* the records move by the revealed permutation */
    for (size_t i = 0; i < n; i++)
        memcpy(rec_at(a, i), rec_at(&x, (uint32_t)v[i].tie), W * 8);
}

/* Shuffle-then-sort with a fresh generator and scratch memory. */
static obl_err sh_sort(const rec_arr *a, const obl_sort_params *p)
{
    const size_t n = a->n, sb = rec_sort_scratch_bytes(n, a->words), eb = n * sizeof(uint32_t);
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, p->alloc);
    void *scratch = obl_alloc(&ac, sb, 64);
    uint32_t *E = obl_alloc(&ac, eb, 64);
    obl_prg g;
    obl_err e = scratch && E ? sh_seed(&g, p) : OBL_ERR_NOMEM;
    if (e == OBL_OK) {
        rec_sort_shuffled(a, E, &g, scratch);
        obl_prg_wipe(&g);
    }
    obl_free(&ac, E, eb);
    obl_free(&ac, scratch, sb);
    return e;
}

/* a variant of the obl/sort.h function (sort/entry.h) */
obl_err OBL_V(srt_shuffled)(void *recs, size_t n, const obl_sort_params *p)
{
    rec_arr a;
    obl_err e = rec_arr_init(&a, recs, n, p);
    if (e != OBL_OK || n < 2)
        return e;
    return sh_sort(&a, p);
}

/* The column network on a copy of the records as columns (n a power of
 * two, at most 8 words a record): the records' words move to the columns
 * and back at public addresses. */
static obl_err sh_sort_columns(const rec_arr *a, const obl_sort_params *p)
{
    const size_t n = a->n, W = a->words, bytes = n * W * 8;
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, p->alloc);
    uint64_t *buf = obl_alloc(&ac, bytes, 64);
    if (!buf)
        return OBL_ERR_NOMEM;
    uint64_t *cols[8]; /* all eight set: clang stored the first W with a masked store */
    for (size_t c = 0; c < 8; c++)
        cols[c] = buf + (c < W ? c : 0) * n;
    /* The moves address the columns from buf and the records from a local
     * copy of a->w: cols escapes to col_sort, so its pointers would be read
     * again after every store of a record's word, and a store address
     * loaded behind a pending store of secret data made the time depend on
     * that data (docs/timing.md, "Findings"). */
    uint64_t *const w = a->w;
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < W; c++)
            buf[c * n + i] = w[i * W + c];
    col_arr s = {cols, W, a->kw, n, a->threads};
    col_sort(&s);
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < W; c++)
            w[i * W + c] = buf[c * n + i];
    obl_free(&ac, buf, bytes);
    return OBL_OK;
}

/* a variant of the obl/sort.h function (sort/entry.h) */
obl_err OBL_V(srt_sort)(void *recs, size_t n, const obl_sort_params *p)
{
    rec_arr a;
    obl_err e = rec_arr_init(&a, recs, n, p);
    if (e != OBL_OK || n < 2)
        return e;
    if ((n & (n - 1)) == 0 && a.words <= 8) /* public */
        return sh_sort_columns(&a, p);
    rec_sort_bitonic(&a);
    return OBL_OK;
}
