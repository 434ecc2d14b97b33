/* SPDX-License-Identifier: MIT */
/*
 * The map's batched access (obl_omap_access_batch, docs/omap.md "Batched
 * access"):
 * - batch_model: batches (sizes 1 to 40, keys repeated, hits and misses,
 *   gets, puts, erases and unknown op codes, maps up to full) against n
 *   single calls on a twin map (same parameters and seed) and a plain
 *   model: the same outputs, found bits and errors per request, and the
 *   same state byte for byte (every ORAM tree, stash and generator, the
 *   overflow stash, the count) after every batch; every layout and pass
 *   shape; with keys, values and ops secret (memcheck in the ct build);
 * - batch_trace: the batch touches exactly what the single calls touch
 *   (traces equal once its prefetches are left out); each prefetch asks
 *   for the path the next access of that tree reads; two maps with
 *   different requests (one key over and over, against distinct keys and
 *   misses) give the same trace once the read paths are reduced to their
 *   depths; and the planted stale prefetch (test_stale_prefetch) is
 *   caught;
 * - batch_bad_input: NULL arguments, n = 0; no allocation (it runs with
 *   every allocation failing);
 * - batch_not_ready: a value ORAM in the `full` state: single calls;
 * - batch_refused_midway: the value ORAM, or the index's data level,
 *   enters the `full` state during a batch and cannot recover: the next
 *   request (whose index walk already ran, or is refused) is refused with
 *   nothing applied, as single calls refuse it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <obl/omap.h>

#include "common/secret.h"
#include "common/trace.h"
#include "ct.h"
#include "omap/omap_internal.h"
#include "oram/nroram_internal.h"
#include "oram/roram_internal.h"
#include "test_rng.h"
#include "testutil.h"

static test_rng R;

static obl_omap_params params(uint64_t cap, size_t ks, size_t vs, uint32_t layout, uint64_t seed)
{
    obl_omap_params p = test_omap_params(cap, ks, vs, seed);
    p.layout = layout;
    return p;
}

/* ------------------------------------------------------ state equality -- */

/* Equal bytes, compared in constant time and the verdict declassified:
 * the structures' contents are secret in the ct build. */
static int same(const void *a, const void *b, size_t n)
{
    uint64_t e = obl_ct_memeq(a, b, n);
    return (int)OBL_DECLASSIFY_VAL(e);
}

static int nr_same(const obl_nroram *a, const obl_nroram *b)
{
    if (!a || !b)
        return a == b;
    return a->tree_bytes == b->tree_bytes && same(a->tree, b->tree, a->tree_bytes) &&
           same(a->bmeta, b->bmeta, a->bmeta_bytes) && same(a->bdata, b->bdata, a->bdata_bytes) &&
           a->evict_ctr == b->evict_ctr && a->owed == b->owed && a->full == b->full &&
           same(&a->prg, &b->prg, sizeof(a->prg));
}

/* The count of entries, declassified (a copy). */
static uint64_t count_of(const obl_omap *m)
{
    uint64_t c = m->count;
    return OBL_DECLASSIFY_VAL(c);
}

/* Every byte of state two maps of the same parameters hold: 1 if equal. */
static int map_same(const obl_omap *a, const obl_omap *b)
{
    const obl_roram *ra = a->oram, *rb = b->oram;
    int eq = count_of(a) == count_of(b) && same(a->stash, b->stash, a->stash_bytes) &&
             ra->T == rb->T && same(&ra->prg, &rb->prg, sizeof(ra->prg)) &&
             nr_same(a->vo, b->vo) && (!a->ones || same(a->ones, b->ones, a->ones_bytes)) &&
             a->st.operations == b->st.operations && a->st.full_errors == b->st.full_errors &&
             a->st.oram_accesses == b->st.oram_accesses;
    if (ra->T == 0)
        return eq && same(ra->scan, rb->scan, ra->scan_bytes);
    eq = eq && same(ra->base, rb->base, ra->base_bytes);
    for (uint32_t l = 0; l < ra->T; l++)
        eq = eq && nr_same(ra->lv[l], rb->lv[l]);
    return eq;
}

/* ------------------------------------------------------------ the model -- */

typedef struct {
    size_t ks, vs;
    uint64_t U, cap, count;
    unsigned char *keys, *vals;
    uint64_t *present;
} model;

static void model_init(model *md, uint64_t U, uint64_t cap, size_t ks, size_t vs)
{
    md->ks = ks;
    md->vs = vs;
    md->U = U;
    md->cap = cap;
    md->count = 0;
    md->keys = (unsigned char *)test_xzalloc(U * ks);
    md->vals = (unsigned char *)test_xzalloc(U * vs);
    md->present = (uint64_t *)test_xzalloc(U * 8);
    for (uint64_t i = 0; i < U; i++) { /* distinct keys: the index in the first bytes */
        test_rng_fill(&R, md->keys + i * ks, ks);
        memcpy(md->keys + i * ks, &i, ks < 4 ? ks : 4);
    }
}

static void model_free(model *md)
{
    free(md->keys);
    free(md->vals);
    free(md->present);
}

/* Request i's expected outputs, then the model updated. FULL only for a
 * put of a new key into a full model (the map may also refuse below
 * capacity: its stash; then the model is left as it is). */
static void model_check(model *md, uint64_t op, uint64_t idx, const unsigned char *in,
                        const unsigned char *out, uint64_t found, obl_err e)
{
    size_t vs = md->vs;
    unsigned char *mv = md->vals + idx * vs;
    uint64_t was = md->present[idx];
    if (e == OBL_ERR_FULL) {
        CHECK(op == OBL_OMAP_PUT && !was);
        return;
    }
    CHECK(e == OBL_OK || e == OBL_ERR_STASH_OVERFLOW);
    CHECK_EQ_U64(found, was);
    if (out) {
        unsigned char *z = (unsigned char *)test_xzalloc(vs);
        CHECK(!memcmp(out, was ? mv : z, vs));
        free(z);
    }
    if (op == OBL_OMAP_PUT) {
        memcpy(mv, in, vs);
        md->count += !was;
        md->present[idx] = 1;
    } else if (op == OBL_OMAP_ERASE) {
        memset(mv, 0, vs);
        md->count -= was;
        md->present[idx] = 0;
    }
}

/* One random batch of n requests over the model's keys. */
typedef struct {
    size_t n;
    uint64_t *ops, *idx;
    unsigned char *keys, *vin;
} batch;

static void batch_draw(batch *b, const model *md, size_t n, int puts_only)
{
    b->n = n;
    b->ops = (uint64_t *)test_xzalloc(n * 8);
    b->idx = (uint64_t *)test_xzalloc(n * 8);
    b->keys = (unsigned char *)test_xzalloc(n * md->ks);
    b->vin = (unsigned char *)test_xzalloc(n * md->vs);
    /* repeats when small; a put batch over every key fills the map */
    uint64_t few = puts_only ? md->U : 1 + test_rng_below(&R, md->U);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = test_rng_below(&R, 10);
        b->ops[i] = puts_only ? OBL_OMAP_PUT : r < 4 ? OBL_OMAP_GET : r < 7 ? OBL_OMAP_PUT
                                           : r < 9 ? OBL_OMAP_ERASE : 5 + r; /* 14: a GET */
        b->idx[i] = test_rng_below(&R, few);
        memcpy(b->keys + i * md->ks, md->keys + b->idx[i] * md->ks, md->ks);
    }
    test_rng_fill(&R, b->vin, n * md->vs);
}

static void batch_free(batch *b)
{
    free(b->ops);
    free(b->idx);
    free(b->keys);
    free(b->vin);
}

/* The batch on a (everything secret) and as n single calls on b; outputs,
 * errors and states compared, the model checked and updated. `form`: 0
 * every pointer, 1 no values_out, 2 no found, 3 no values_in. */
static void batch_vs_single(obl_omap *a, obl_omap *s, model *md, const batch *bt, int form)
{
    size_t n = bt->n, ks = md->ks, vs = md->vs;
    unsigned char *oa = (unsigned char *)test_xzalloc(n * vs),
                  *os = (unsigned char *)test_xzalloc(n * vs);
    uint64_t *fa = (uint64_t *)test_xzalloc(n * 8), *fs = (uint64_t *)test_xzalloc(n * 8);
    obl_err *ea = (obl_err *)test_xzalloc(n * sizeof(obl_err));
    const unsigned char *vin = form == 3 ? NULL : bt->vin;
    unsigned char *zeros = (unsigned char *)test_xzalloc(n * vs);
    OBL_SECRET(bt->keys, n * ks);
    OBL_SECRET(bt->vin, n * vs);
    OBL_SECRET(bt->ops, n * 8);
    obl_err first = obl_omap_access_batch(a, n, bt->ops, bt->keys, vin, form == 1 ? NULL : oa,
                                          form == 2 ? NULL : fa, ea);
    OBL_DECLASSIFY(oa, n * vs);
    OBL_DECLASSIFY(fa, n * 8);
    obl_err want_first = OBL_OK;
    for (size_t i = 0; i < n; i++) {
        obl_err e = obl_omap_access(s, bt->ops[i], bt->keys + i * ks, vin ? vin + i * vs : NULL,
                                    os + i * vs, &fs[i]);
        OBL_DECLASSIFY(os + i * vs, vs);
        OBL_DECLASSIFY(&fs[i], 8);
        CHECK_EQ_U64(ea[i], e);
        if (form != 1)
            CHECK(!memcmp(oa + i * vs, os + i * vs, vs));
        if (form != 2)
            CHECK_EQ_U64(fa[i], fs[i]);
        if (want_first == OBL_OK)
            want_first = e;
    }
    OBL_DECLASSIFY(bt->keys, n * ks);
    OBL_DECLASSIFY(bt->vin, n * vs);
    OBL_DECLASSIFY(bt->ops, n * 8);
    CHECK_EQ_U64(first, want_first);
    for (size_t i = 0; i < n; i++) {
        uint64_t op = bt->ops[i] <= OBL_OMAP_ERASE ? bt->ops[i] : OBL_OMAP_GET;
        model_check(md, op, bt->idx[i], vin ? vin + i * vs : zeros, os + i * vs, fs[i], ea[i]);
    }
    CHECK(map_same(a, s));
    free(oa);
    free(os);
    free(fa);
    free(fs);
    free(ea);
    free(zeros);
}

/* Twin maps of one shape through `batches` random batches; the key
 * universe U is larger than the capacity, so puts reach FULL. */
static void model_case(uint64_t cap, size_t ks, size_t vs, uint32_t layout, uint64_t U,
                       uint32_t scan_max, int batches)
{
    obl_omap_params p = params(cap, ks, vs, layout, 99 + cap);
    p.oram_scan_max = scan_max;
    obl_omap *a = NULL, *s = NULL;
    CHECK_EQ_U64(obl_omap_create(&a, &p), OBL_OK);
    CHECK_EQ_U64(obl_omap_create(&s, &p), OBL_OK);
    if (!a || !s)
        return;
    model md;
    model_init(&md, U, cap, ks, vs);
    for (int k = 0; k < batches; k++) {
        batch bt;
        /* batches of puts first, so that the map fills up */
        int puts = k < batches / 2;
        batch_draw(&bt, &md, 1 + test_rng_below(&R, puts ? 120 : 40), puts);
        batch_vs_single(a, s, &md, &bt, (int)test_rng_below(&R, 4));
        batch_free(&bt);
    }
    CHECK_EQ_U64(count_of(a), md.count);
    printf("   cap %" PRIu64 " %zu/%zu layout %u, %u index levels: %" PRIu64 " entries, %" PRIu64
           " FULL of %" PRIu64 " ops\n",
           cap, ks, vs, a->layout, a->oram->T, md.count, a->st.full_errors, a->st.operations);
    model_free(&md);
    obl_omap_destroy(a);
    obl_omap_destroy(s);
}

static void batch_model(void)
{
    int nb = T.ct ? 6 : 40;
    /* word passes and the value ORAM; then position trees above the
     * index (a small base), and keys repeated more */
    model_case(200, 8, 56, OBL_OMAP_LAYOUT_COMPACT, 260, 0, nb);
    model_case(4096, 8, 56, OBL_OMAP_LAYOUT_COMPACT, 64, 16, nb);
    model_case(600, 8, 56, OBL_OMAP_LAYOUT_COMPACT, 700, 16, nb);
    model_case(150, 16, 24, OBL_OMAP_LAYOUT_COMPACT, 200, 0, nb); /* fingerprints */
    model_case(300, 8, 8, OBL_OMAP_LAYOUT_INLINE, 400, 8, nb);    /* inline words */
    model_case(100, 12, 20, OBL_OMAP_LAYOUT_INLINE, 130, 0, nb);  /* generic passes */
    model_case(8, 4, 8, OBL_OMAP_LAYOUT_INLINE, 12, 0, nb);       /* a scanned index */
}

/* --------------------------------------------------------------- traces -- */

static uint32_t level_of(uint64_t b)
{
    uint32_t k = 0;
    while ((b + 1) >> (k + 1))
        k++;
    return k;
}

/* A copy of t without its PREFETCH events. */
static void trace_drop_prefetch(const obl_trace *t, obl_trace *out)
{
    obl_trace_reset(out);
    for (size_t i = 0; i < t->n && out->n < out->cap; i++)
        if (t->ev[i].kind != OBL_TRACE_PREFETCH)
            out->ev[out->n++] = t->ev[i];
}

/* The single calls' trace t of a map whose index has one tree (its
 * position map a scanned base), in the order of the batch's phases
 * (access_batch_impl.h): request i's events are S_i (the base scan), I_i
 * (up to the end of the index tree's read path) and F_i (the value ORAM);
 * out gets S_0 I_0 S_1 F_0 I_1 ... S_n-1 F_n-2 I_n-1 F_n-1. */
static void trace_pipeline_order(const obl_trace *t, obl_trace *out)
{
    size_t st[257], ie[257], nr = 0; /* each request's start, end of I */
    for (size_t i = 0; i < t->n && nr < 256; i++) {
        if (t->ev[i].region != OBL_TRACE_REGION_ORAM_SCAN)
            continue;
        st[nr] = i;
        size_t j = i + 1;
#define TREE_RW(e) ((e).region == OBL_TRACE_REGION_ORAM_TREE && (e).kind == OBL_TRACE_RW)
        while (j < t->n && !TREE_RW(t->ev[j]))
            j++; /* the index tree's evictions and stash scan */
        while (j < t->n && TREE_RW(t->ev[j]))
            j++; /* its read path */
#undef TREE_RW
        ie[nr++] = j;
    }
    st[nr] = t->n;
    obl_trace_reset(out);
#define COPY(a, b)                                                                          \
    for (size_t k = (a); k < (b) && out->n < out->cap; k++)                                 \
        out->ev[out->n++] = t->ev[k];
    for (size_t r = 0; r < nr; r++) {
        COPY(st[r], st[r] + 1);  /* S_r */
        if (r > 0)
            COPY(ie[r - 1], st[r]); /* F_r-1 */
        COPY(st[r] + 1, ie[r]); /* I_r */
    }
    if (nr > 0)
        COPY(ie[nr - 1], st[nr]);
#undef COPY
}

/* t with every tree read path (RW) and prefetch event's bucket replaced
 * by its level: what is left is public by design (eviction paths, stash
 * and base scans, the order of all). */
static void trace_levels(obl_trace *t)
{
    for (size_t i = 0; i < t->n; i++) {
        obl_trace_ev *e = &t->ev[i];
        if (e->region == OBL_TRACE_REGION_ORAM_TREE &&
            (e->kind == OBL_TRACE_RW || e->kind == OBL_TRACE_PREFETCH))
            e->offset = level_of(e->offset);
    }
}

/* Whether event i of t ends a path: a run of tree events of one kind,
 * read (an eviction's load) or read-write (an access's read path). */
static int path_end(const obl_trace *t, size_t i)
{
    const obl_trace_ev *e = &t->ev[i];
    if (e->region != OBL_TRACE_REGION_ORAM_TREE ||
        (e->kind != OBL_TRACE_RW && e->kind != OBL_TRACE_READ))
        return 0;
    return i + 1 == t->n || t->ev[i + 1].region != e->region || t->ev[i + 1].kind != e->kind;
}

/* The prefetch runs of t (PREFETCH events, deepest bucket first, a
 * path's levels falling) that do
 * not lie on one of the next three paths (read or eviction) reaching the
 * same depth: the paths their tree's next access touches anyway. Returns
 * their count and sets *runs to the number of runs. */
static long prefetch_mismatches(const obl_trace *t, long *runs)
{
    long bad = 0;
    *runs = 0;
    for (size_t i = 0; i < t->n; i++) {
        const obl_trace_ev *e = &t->ev[i];
        /* a run starts where the levels stop falling */
        if (e->kind != OBL_TRACE_PREFETCH ||
            (i > 0 && t->ev[i - 1].kind == OBL_TRACE_PREFETCH &&
             level_of(t->ev[i - 1].offset) > level_of(e->offset)))
            continue;
        (*runs)++;
        uint32_t lv = level_of(e->offset);
        int ok = 0, seen = 0;
        for (size_t j = i + 1; j < t->n && seen < 3 && !ok; j++) {
            if (!path_end(t, j) || level_of(t->ev[j].offset) != lv)
                continue;
            seen++;
            uint64_t leaf = t->ev[j].offset;
            ok = 1;
            for (size_t q = i; q < t->n && t->ev[q].kind == OBL_TRACE_PREFETCH && ok; q++) {
                uint32_t k = level_of(t->ev[q].offset);
                if (q > i && k >= level_of(t->ev[q - 1].offset))
                    break; /* the next run */
                ok = k <= lv && ((leaf + 1) >> (lv - k)) - 1 == t->ev[q].offset;
            }
        }
        bad += !ok;
    }
    return bad;
}

/* The traced requests: one key repeated with every op (rep), or distinct
 * keys, half of them absent. */
static void trace_requests(int rep, size_t n, uint64_t *ops, uint64_t *keys, unsigned char *vin)
{
    for (size_t i = 0; i < n; i++) {
        ops[i] = rep ? i % 3 : OBL_OMAP_GET + (i % 4 == 1);
        keys[i] = rep ? 7 : 1000 + i * (i % 2 ? 1 : 100000);
        memset(vin + i * 56, (int)i, 56);
    }
}

/* A map of 4096 8/56 entries (compact: an index tree of 128 leaves, a
 * value tree of 2048), 3000 of them built, then n requests, traced:
 * batched (single 0) or one by one. */
static void trace_run(int rep, int single, int stale, size_t n, obl_trace *t)
{
    obl_omap_params p = params(4096, 8, 56, OBL_OMAP_LAYOUT_COMPACT, 4242);
    uint64_t nb = 3000, *bk = (uint64_t *)test_xzalloc(nb * 8);
    unsigned char *bv = (unsigned char *)test_xzalloc(nb * 56);
    for (uint64_t i = 0; i < nb; i++)
        bk[i] = i * 2 + 1;
    obl_omap *m = NULL;
    CHECK_EQ_U64(obl_omap_build(&m, &p, bk, bv, nb), OBL_OK);
    uint64_t *ops = (uint64_t *)test_xzalloc(n * 8), *keys = (uint64_t *)test_xzalloc(n * 8);
    uint64_t *found = (uint64_t *)test_xzalloc(n * 8);
    unsigned char *vin = (unsigned char *)test_xzalloc(n * 56),
                  *vout = (unsigned char *)test_xzalloc(n * 56);
    obl_err *errs = (obl_err *)test_xzalloc(n * sizeof(obl_err));
    trace_requests(rep, n, ops, keys, vin);
    m->test_stale_prefetch = stale;
    obl_trace_reset(t);
    obl_trace_begin(t);
    if (single)
        for (size_t i = 0; i < n; i++)
            errs[i] = obl_omap_access(m, ops[i], &keys[i], vin + i * 56, vout + i * 56, &found[i]);
    else
        (void)obl_omap_access_batch(m, n, ops, keys, vin, vout, found, errs);
    obl_trace_end();
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_U64(errs[i], OBL_OK);
    obl_omap_destroy(m);
    free(bk);
    free(bv);
    free(ops);
    free(keys);
    free(found);
    free(vin);
    free(vout);
    free(errs);
}

static void batch_trace(void)
{
    if (!obl_trace_enabled()) {
        test_skip("trace hook not compiled in");
        return;
    }
    size_t n = T.ct ? 12 : 48;
    obl_trace ta, tb, tc, td;
    CHECK(obl_trace_init(&ta, 1u << 20));
    CHECK(obl_trace_init(&tb, 1u << 20));
    CHECK(obl_trace_init(&tc, 1u << 20));
    CHECK(obl_trace_init(&td, 1u << 20));
    /* the batch touches what the single calls touch, in the same order */
    trace_run(1, 0, 0, n, &ta);
    trace_run(1, 1, 0, n, &td);
    trace_pipeline_order(&td, &tb);
    trace_drop_prefetch(&ta, &tc);
    CHECK(tc.n > 0 && tc.n < ta.n && tb.n == td.n);
    CHECK(obl_trace_equal(&tc, &tb));
    /* each prefetch asks for the next read path of its tree */
    long runs = 0;
    CHECK_EQ_U64(prefetch_mismatches(&ta, &runs), 0);
    /* a request's index and value paths, and the evictions' but the
     * first request's (a built tree owes none) */
    CHECK_EQ_U64(runs, 4 * n - 2);
    /* other requests, same trace up to the read paths' leaves */
    trace_run(0, 0, 0, n, &tc);
    CHECK_EQ_U64(prefetch_mismatches(&tc, &runs), 0);
    trace_levels(&ta);
    trace_levels(&tc);
    CHECK(obl_trace_equal(&ta, &tc));
    if (!obl_trace_equal(&ta, &tc))
        fprintf(stderr, "  traces differ at event %zu\n", obl_trace_first_diff(&ta, &tc));
    /* negative control: a stale index prefetch is caught */
    trace_run(1, 0, 1, n, &td);
    long bad = prefetch_mismatches(&td, &runs);
    printf("   stale prefetch: %ld of %ld prefetches off the paths read next\n", bad, runs);
    CHECK(bad >= (long)n / 2);
    obl_trace_free(&ta);
    obl_trace_free(&tb);
    obl_trace_free(&tc);
    obl_trace_free(&td);
}

/* ------------------------------------------------------------ bad input -- */

static void batch_bad_input(void)
{
    obl_omap_params p = params(64, 8, 8, 0, 3);
    obl_omap *m = NULL;
    CHECK_EQ_U64(obl_omap_create(&m, &p), OBL_OK);
    uint64_t k[2] = {1, 2}, f[2];
    unsigned char out[16];
    obl_err errs[2] = {OBL_ERR_RANGE, OBL_ERR_RANGE};
    CHECK_EQ_U64(obl_omap_access_batch(NULL, 2, NULL, k, NULL, out, f, errs), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(obl_omap_access_batch(m, 2, NULL, NULL, NULL, out, f, errs), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(obl_omap_access_batch(m, 2, NULL, k, NULL, out, f, NULL), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(obl_omap_access_batch(m, 0, NULL, k, NULL, out, f, errs), OBL_OK);
    CHECK_EQ_U64(errs[0], OBL_ERR_RANGE); /* untouched */
    CHECK_EQ_U64(m->st.operations, 0);
    obl_omap_destroy(m);
    /* it allocates nothing: with every allocation failing it runs, and
     * leaves the map as single calls do */
    test_failing_alloc fa = {-1, 0, 0};
    obl_allocator al = {test_fa_alloc, test_fa_free, &fa};
    p.alloc = &al;
    obl_omap *a = NULL, *s = NULL;
    CHECK_EQ_U64(obl_omap_create(&a, &p), OBL_OK);
    p.alloc = NULL;
    CHECK_EQ_U64(obl_omap_create(&s, &p), OBL_OK);
    uint64_t ops[2] = {OBL_OMAP_PUT, OBL_OMAP_PUT};
    fa.budget = 0;
    CHECK_EQ_U64(obl_omap_access_batch(a, 2, ops, k, out, NULL, NULL, errs), OBL_OK);
    fa.budget = -1;
    for (int i = 0; i < 2; i++)
        CHECK_EQ_U64(obl_omap_put(s, &k[i], out + 8 * i, NULL), OBL_OK);
    CHECK(map_same(a, s));
    CHECK_EQ_U64(count_of(a), 2);
    obl_omap_destroy(a);
    obl_omap_destroy(s);
    CHECK_EQ_U64(fa.live, 0);
}

/* A value ORAM in the `full` state when a batch starts (white-box: the
 * flag set on both twins): the batch runs as single calls, whose checks
 * recover it, and the twins stay equal. */
static void batch_not_ready(void)
{
    obl_omap_params p = params(256, 8, 56, OBL_OMAP_LAYOUT_COMPACT, 11);
    obl_omap *a = NULL, *s = NULL;
    CHECK_EQ_U64(obl_omap_create(&a, &p), OBL_OK);
    CHECK_EQ_U64(obl_omap_create(&s, &p), OBL_OK);
    model md;
    model_init(&md, 300, 256, 8, 56);
    for (int k = 0; k < 6; k++) {
        a->vo->full = s->vo->full = k % 2;
        batch bt;
        batch_draw(&bt, &md, 1 + test_rng_below(&R, 30), k < 2);
        batch_vs_single(a, s, &md, &bt, 0);
        batch_free(&bt);
        CHECK_EQ_U64(a->vo->full, 0);
    }
    model_free(&md);
    obl_omap_destroy(a);
    obl_omap_destroy(s);
}

/* An ORAM of the map made to enter the `full` state during a request and
 * to refuse recovery (white-box: its put and recover wrapped), on the
 * batch and on single calls alike. The value ORAM (during F(t)): request
 * t + 1 has run its index walk in the batch (S(t + 1) precedes F(t)) and
 * must still be refused with its operation not applied
 * (omap_batch_value_refused). The index's data level (during I(t)): the
 * walk S(t + 1) is refused, and the batch must stop there. Then, recovery
 * allowed, both maps hold the same entries. */
static const nr_ops *trip_real;
static long trip_puts; /* puts of the wrapped tree until the trip; < 0: none */
static int trip_refuse;

static obl_err trip_put(obl_nroram *o, uint64_t keep, uint64_t id, uint64_t new_pos)
{
    obl_err e = trip_real->put(o, keep, id, new_pos);
    if (trip_puts >= 0 && trip_puts-- == 0) {
        o->full = 1;
        return OBL_ERR_STASH_OVERFLOW;
    }
    return e;
}

static obl_err trip_recover(obl_nroram *o)
{
    return trip_refuse ? OBL_ERR_STATE : trip_real->recover(o);
}

/* The tree wrapped: 0 the value ORAM, 1 the index's data level. */
static obl_nroram *trip_tree(obl_omap *m, int which)
{
    return which ? m->oram->lv[0] : m->vo;
}

static void refused_midway(int which)
{
    obl_omap_params p = params(600, 8, 56, OBL_OMAP_LAYOUT_COMPACT, 21);
    p.oram_scan_max = 16; /* index trees: the walk of S(t + 1) stores a leaf */
    obl_omap *m[2] = {NULL, NULL};
    CHECK_EQ_U64(obl_omap_create(&m[0], &p), OBL_OK);
    CHECK_EQ_U64(obl_omap_create(&m[1], &p), OBL_OK);
    if (!m[0] || !m[1])
        return;
    CHECK(m[0]->oram->T >= 1);
    trip_real = trip_tree(m[0], which)->ops;
    static nr_ops trip;
    trip = *trip_real;
    trip.put = trip_put;
    trip.recover = trip_recover;
    /* puts of keys 1..4 (the fourth trips), then a put of a new key, an
     * erase and a get: refused */
    enum { N = 7 };
    uint64_t ops[N] = {OBL_OMAP_PUT, OBL_OMAP_PUT, OBL_OMAP_PUT, OBL_OMAP_PUT,
                       OBL_OMAP_PUT, OBL_OMAP_ERASE, OBL_OMAP_GET};
    uint64_t keys[N] = {1, 2, 3, 4, 5, 1, 2};
    unsigned char vin[N * 56], vout[2][N * 56];
    uint64_t found[2][N];
    obl_err errs[2][N];
    for (size_t i = 0; i < sizeof vin; i++)
        vin[i] = (unsigned char)(i * 7 + 1);
    for (int k = 0; k < 2; k++) { /* 0: the batch, 1: single calls */
        trip_tree(m[k], which)->ops = &trip;
        trip_puts = 3;
        trip_refuse = 1;
        OBL_SECRET(keys, sizeof keys);
        OBL_SECRET(ops, sizeof ops);
        OBL_SECRET(vin, sizeof vin);
        if (k == 0)
            (void)obl_omap_access_batch(m[0], N, ops, keys, vin, vout[0], found[0], errs[0]);
        for (size_t i = 0; k == 1 && i < N; i++)
            errs[1][i] = obl_omap_access(m[1], ops[i], &keys[i], vin + i * 56, vout[1] + i * 56,
                                         &found[1][i]);
        OBL_DECLASSIFY(keys, sizeof keys);
        OBL_DECLASSIFY(ops, sizeof ops);
        OBL_DECLASSIFY(vin, sizeof vin);
        OBL_DECLASSIFY(vout[k], sizeof vout[k]);
        OBL_DECLASSIFY(found[k], sizeof found[k]);
        trip_refuse = 0;
        trip_puts = -1;
    }
    for (size_t i = 0; i < N; i++) {
        CHECK_EQ_U64(errs[0][i], i < 3 ? OBL_OK : i == 3 ? OBL_ERR_STASH_OVERFLOW : OBL_ERR_STATE);
        CHECK_EQ_U64(errs[0][i], errs[1][i]);
        if (i < 4)
            CHECK(found[0][i] == 0 && found[1][i] == 0);
    }
    /* recovery allowed: keys 1..4 with their values, 5 absent, in both */
    for (int k = 0; k < 2; k++) {
        for (uint64_t key = 1; key <= 5; key++) {
            unsigned char v[56];
            uint64_t f = 9;
            CHECK_EQ_U64(obl_omap_get(m[k], &key, v, &f), OBL_OK);
            OBL_DECLASSIFY(v, sizeof v);
            OBL_DECLASSIFY(&f, sizeof f);
            CHECK_EQ_U64(f, key <= 4);
            if (key <= 4)
                CHECK(!memcmp(v, vin + (key - 1) * 56, 56));
        }
        CHECK_EQ_U64(count_of(m[k]), 4);
        CHECK_EQ_U64(trip_tree(m[k], which)->full, 0);
        trip_tree(m[k], which)->ops = trip_real;
        obl_omap_destroy(m[k]);
    }
}

static void batch_refused_midway(void)
{
    refused_midway(0);
    refused_midway(1);
}

static const test_case cases[] = {
    TEST_CASE(batch_model),
    TEST_CASE(batch_trace),
    TEST_CASE(batch_bad_input),
    TEST_CASE(batch_not_ready),
    TEST_CASE(batch_refused_midway),
};

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_omap_batch");
    return test_run("test_omap_batch", cases, sizeof(cases) / sizeof(cases[0]), &R);
}
