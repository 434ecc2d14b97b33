/* SPDX-License-Identifier: MIT */
/*
 * Contract checks found by an outside audit, one sub-test each:
 * - build_hash: obl_omap_build keeps the keys' hashes secret. Under
 *   memcheck (--ct) the keys are marked secret, so a branch on a hash is
 *   reported (the negative control ct_negative_omap_hash plants one); with
 *   the trace hook, two inputs with one public bucket list and duplicates
 *   at different places give the same trace (the check compares every pair);
 * - ids: an NRORAM id outside the id space (4-byte ids above 2^32 - 2, the
 *   all-ones dummy id) never aliases a stored id nor reads an empty slot;
 * - export: obl_nroram_export hands out every stored block, also after an
 *   overflow left the structure refusing accesses (OBL_ERR_STATE), and
 *   matches a reference model after random operations;
 * - small: RORAM stash_size checked for every n; a map's FULL zeroes
 *   value_out; obl_nroram_insert refuses value NULL.
 * `test_audit -s SEED [--ct] [--only NAME | --list]`.
 */
#include <obl/omap.h>
#include <obl/oram.h>

#include "common/secret.h"
#include "common/trace.h"
#include "testutil.h"

static test_rng R;

/* ------------------------------------------------------------ build_hash */

/* A map of one bucket (capacity 8, 64 entries per bucket): every key's
 * bucket is 0, so inputs differing only in where their duplicate is have
 * the same public part. */
static void one_bucket_params(obl_omap_params *p, uint32_t layout, size_t ks, size_t vs)
{
    memset(p, 0, sizeof(*p));
    p->capacity = 8;
    p->key_size = ks;
    p->value_size = vs;
    p->bucket_load = 64;
    p->layout = layout;
    p->use_seed = 1;
    p->seed = T.seed;
}

static obl_err build_traced(const obl_omap_params *p, const unsigned char *K,
                            const unsigned char *V, uint64_t n, obl_trace *t)
{
    unsigned char *k = (unsigned char *)test_xzalloc(n * p->key_size);
    memcpy(k, K, n * p->key_size);
    OBL_SECRET(k, n * p->key_size);
    obl_omap *m = NULL;
    obl_trace_reset(t);
    obl_trace_begin(t);
    obl_err e = obl_omap_build(&m, p, k, V, n);
    obl_trace_end();
    obl_omap_destroy(m);
    free(k);
    return e;
}

static void build_hash(void)
{
    /* inline 8/16: SipHash, keys compared; inline 8/8: Speck words;
     * compact 16/8: fingerprints */
    const struct { uint32_t layout; size_t ks, vs; } cfg[] = {
        {OBL_OMAP_LAYOUT_INLINE, 8, 16},
        {OBL_OMAP_LAYOUT_INLINE, 8, 8},
        {OBL_OMAP_LAYOUT_COMPACT, 16, 8},
    };
    obl_trace ta, tb;
    CHECK(obl_trace_init(&ta, 1 << 12));
    CHECK(obl_trace_init(&tb, 1 << 12));
    for (size_t c = 0; c < sizeof(cfg) / sizeof(cfg[0]); c++) {
        obl_omap_params p;
        one_bucket_params(&p, cfg[c].layout, cfg[c].ks, cfg[c].vs);
        const size_t ks = p.key_size, n = 6;
        unsigned char *K = (unsigned char *)test_xzalloc(n * ks);
        unsigned char *A = (unsigned char *)test_xzalloc(n * ks);
        unsigned char *V = (unsigned char *)test_xzalloc(n * p.value_size);
        test_rng_fill(&R, K, n * ks);
        test_rng_fill(&R, V, n * p.value_size);
        /* distinct keys: built; the same with the keys in another order */
        CHECK_EQ_U64(build_traced(&p, K, V, n, &ta), OBL_OK);
        /* duplicates at (0, 1) and at (2, 5): same trace */
        memcpy(A, K, n * ks);
        memcpy(A + ks, A, ks);
        CHECK_EQ_U64(build_traced(&p, A, V, n, &ta), OBL_ERR_DUPLICATE_KEY);
        memcpy(A, K, n * ks);
        memcpy(A + 5 * ks, A + 2 * ks, ks);
        CHECK_EQ_U64(build_traced(&p, A, V, n, &tb), OBL_ERR_DUPLICATE_KEY);
        if (obl_trace_enabled()) {
            CHECK(ta.n > 0);
            CHECK(obl_trace_equal(&ta, &tb));
        }
        free(K);
        free(A);
        free(V);
    }
    obl_trace_free(&ta);
    obl_trace_free(&tb);
}

/* -------------------------------------------------------------- nroram */

static obl_nroram *nr_new(uint64_t cap, uint32_t pb, uint32_t stash)
{
    obl_nroram_params p;
    memset(&p, 0, sizeof(p));
    p.capacity = cap;
    p.value_size = 8;
    p.pos_bytes = pb;
    p.stash_size = stash;
    p.use_seed = 1;
    p.seed = test_rng_next(&R);
    obl_nroram *o = NULL;
    CHECK_EQ_U64(obl_nroram_create(&o, &p), OBL_OK);
    return o;
}

/* A fresh public leaf: the caller's position for an absent id. */
static uint64_t nr_fresh(obl_nroram *o)
{
    uint64_t x = obl_nroram_random_pos(o);
    return OBL_DECLASSIFY_VAL(x);
}

/* One access with a secret id and op; returns found, *pos_io moved to the
 * block's new position. */
static uint64_t nr_acc(obl_nroram *o, uint64_t id, uint64_t *pos_io, uint64_t op,
                       const void *in, void *out, obl_err *err)
{
    uint64_t np = obl_nroram_random_pos(o), found = 0;
    OBL_SECRET(&id, sizeof(id));
    OBL_SECRET(&op, sizeof(op));
    *err = obl_nroram_access(o, id, *pos_io, np, op, in, out, &found);
    *pos_io = OBL_DECLASSIFY_VAL(np);
    if (out)
        OBL_DECLASSIFY(out, 8);
    return OBL_DECLASSIFY_VAL(found);
}

static void ids(void)
{
    const uint64_t a = 0x1111111111111111ULL, b = 0x2222222222222222ULL;
    uint64_t out = 0, zero = 0;
    obl_err e;
    /* 4-byte ids: 2^32 + 5 must not reach id 5 */
    obl_nroram *o = nr_new(64, 4, 0);
    if (o) {
        CHECK_EQ_U64(obl_nroram_id_limit(o), UINT32_MAX);
        uint64_t p5 = 0;
        CHECK_EQ_U64(obl_nroram_insert(o, 5, &a, &p5), OBL_OK);
        OBL_DECLASSIFY(&p5, sizeof(p5));
        uint64_t q = p5; /* the alias at id 5's own path: old code found it there */
        CHECK_EQ_U64(nr_acc(o, ((uint64_t)1 << 32) + 5, &q, OBL_ORAM_WRITE, &b, &out, &e), 0);
        CHECK_EQ_U64(e, OBL_OK);
        CHECK_MEM(&out, &zero, 8);
        CHECK_EQ_U64(nr_acc(o, 5, &p5, OBL_ORAM_READ, NULL, &out, &e), 1);
        CHECK_MEM(&out, &a, 8);
        /* the 4-byte dummy id: written, then read, never found */
        q = nr_fresh(o);
        nr_acc(o, UINT32_MAX, &q, OBL_ORAM_WRITE, &b, NULL, &e);
        for (int i = 0; i < 8; i++) {
            q = nr_fresh(o);
            CHECK_EQ_U64(nr_acc(o, UINT32_MAX, &q, OBL_ORAM_READ, NULL, &out, &e), 0);
            CHECK_MEM(&out, &zero, 8);
        }
        obl_nroram_destroy(o);
    }
    /* 8-byte ids: the all-ones id is outside the space */
    o = nr_new(64, 8, 0);
    if (o) {
        CHECK_EQ_U64(obl_nroram_id_limit(o), UINT64_MAX);
        uint64_t q = nr_fresh(o);
        CHECK_EQ_U64(nr_acc(o, UINT64_MAX, &q, OBL_ORAM_WRITE, &b, NULL, &e), 0);
        for (int i = 0; i < 8; i++) {
            q = nr_fresh(o);
            CHECK_EQ_U64(nr_acc(o, UINT64_MAX, &q, OBL_ORAM_READ, NULL, &out, &e), 0);
            CHECK_MEM(&out, &zero, 8);
        }
        /* the largest id inside the space is an ordinary id */
        uint64_t p = 0;
        CHECK_EQ_U64(obl_nroram_insert(o, UINT64_MAX - 1, &a, &p), OBL_OK);
        OBL_DECLASSIFY(&p, sizeof(p));
        CHECK_EQ_U64(nr_acc(o, UINT64_MAX - 1, &p, OBL_ORAM_READ, NULL, &out, &e), 1);
        CHECK_MEM(&out, &a, 8);
        obl_nroram_destroy(o);
    }
}

/* The export's view: value per id, and the number of blocks seen. */
typedef struct {
    uint64_t n_ids;
    uint64_t *val;   /* n_ids entries */
    uint64_t *seen;  /* times id i was handed out */
    uint64_t present, calls, bad;
} export_view;

static void export_cb(void *ctx, uint64_t id, const void *value, uint64_t present)
{
    export_view *v = (export_view *)ctx;
    v->calls++;
    uint64_t pr = OBL_DECLASSIFY_VAL(present), i = OBL_DECLASSIFY_VAL(id);
    if (!pr) /* the test's own branch, on declassified values */
        return;
    v->present++;
    if (i >= v->n_ids) {
        v->bad++;
        return;
    }
    uint64_t x;
    memcpy(&x, value, 8);
    v->seen[i]++;
    v->val[i] = OBL_DECLASSIFY_VAL(x);
}

static void export_run(obl_nroram *o, export_view *v, uint64_t n_ids)
{
    memset(v, 0, sizeof(*v));
    v->n_ids = n_ids;
    v->val = (uint64_t *)test_xzalloc(n_ids * 8);
    v->seen = (uint64_t *)test_xzalloc(n_ids * 8);
    CHECK_EQ_U64(obl_nroram_export(o, export_cb, v), OBL_OK);
    CHECK_EQ_U64(v->calls, obl_nroram_export_slots(o));
    CHECK_EQ_U64(v->bad, 0);
}

static void export_free(export_view *v)
{
    free(v->val);
    free(v->seen);
}

/* A rebuild: every exported slot inserted into a new tree, empty ones
 * (all-ones id, outside the id space) included. */
typedef struct {
    obl_nroram *o;
    uint64_t n_ids, *pos, errors;
} rebuild_ctx;

static void rebuild_cb(void *ctx, uint64_t id, const void *value, uint64_t present)
{
    rebuild_ctx *c = (rebuild_ctx *)ctx;
    uint64_t p = 0;
    (void)present;
    c->errors += obl_nroram_insert(c->o, id, value, &p) != OBL_OK;
    uint64_t i = OBL_DECLASSIFY_VAL(id); /* the test's bookkeeping */
    if (i < c->n_ids)
        c->pos[i] = OBL_DECLASSIFY_VAL(p);
}

/* A tree past its capacity (8 blocks, stash 2, inserts until refused)
 * exports every block it stored, which rebuild a tree with room for them. */
static void export_past_capacity(void)
{
    enum { N = 64 };
    obl_nroram *o = nr_new(8, 0, 2);
    if (!o)
        return;
    uint64_t stored[N] = {0}, state = 0, nstored = 0;
    for (uint64_t i = 0; i < N; i++) {
        uint64_t v = i * 0x0101010101010101ULL + 7, p = 0;
        obl_err e = obl_nroram_insert(o, i, &v, &p);
        CHECK(e == OBL_OK || e == OBL_ERR_STASH_OVERFLOW || e == OBL_ERR_STATE);
        stored[i] = e != OBL_ERR_STATE;
        nstored += stored[i];
        state += e == OBL_ERR_STATE;
    }
    CHECK(state > 0); /* the structure did end up refusing accesses */
    uint64_t out, q = nr_fresh(o);
    obl_err e;
    nr_acc(o, 0, &q, OBL_ORAM_READ, NULL, &out, &e);
    CHECK_EQ_U64(e, OBL_ERR_STATE);
    export_view v;
    export_run(o, &v, N);
    CHECK_EQ_U64(v.present, nstored);
    for (uint64_t i = 0; i < N; i++) {
        CHECK_EQ_U64(v.seen[i], stored[i]);
        if (stored[i])
            CHECK_EQ_U64(v.val[i], i * 0x0101010101010101ULL + 7);
    }
    export_free(&v);
    /* ... and rebuilt into a tree with room for them */
    uint64_t rpos[N] = {0};
    rebuild_ctx rc = {nr_new(256, 0, 0), N, rpos, 0};
    if (rc.o) {
        CHECK_EQ_U64(obl_nroram_export(o, rebuild_cb, &rc), OBL_OK);
        CHECK_EQ_U64(rc.errors, 0);
        for (uint64_t i = 0; i < N; i++) {
            if (!stored[i])
                rpos[i] = nr_fresh(rc.o);
            CHECK_EQ_U64(nr_acc(rc.o, i, &rpos[i], OBL_ORAM_READ, NULL, &out, &e), stored[i]);
            CHECK_EQ_U64(e, OBL_OK);
            CHECK_EQ_U64(out, stored[i] ? i * 0x0101010101010101ULL + 7 : 0);
        }
        obl_nroram_destroy(rc.o);
    }
    CHECK_EQ_U64(obl_nroram_export(NULL, export_cb, &v), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(obl_nroram_export(o, NULL, &v), OBL_ERR_INVALID_ARG);
    obl_nroram_destroy(o);
}

/* A healthy tree's export against a model, both id widths. */
static void export_healthy(void)
{
    uint64_t out;
    obl_err e;
    export_view v;
    for (uint32_t pb = 4; pb <= 8; pb += 4) {
        enum { U = 48 };
        obl_nroram *o = nr_new(64, pb, 0);
        if (!o)
            continue;
        uint64_t pos[U], val[U], has[U] = {0};
        for (int i = 0; i < U; i++)
            pos[i] = nr_fresh(o);
        for (int t = 0; t < 600; t++) {
            uint64_t id = test_rng_below(&R, U), op = test_rng_below(&R, 3);
            uint64_t in = test_rng_next(&R);
            uint64_t f = nr_acc(o, id, &pos[id], op, &in, &out, &e);
            CHECK(e == OBL_OK || e == OBL_ERR_STASH_OVERFLOW);
            CHECK_EQ_U64(f, has[id]);
            if (op == OBL_ORAM_WRITE) {
                has[id] = 1;
                val[id] = in;
            } else if (op == OBL_ORAM_REMOVE) {
                has[id] = 0;
            }
            if (!has[id])
                pos[id] = nr_fresh(o);
        }
        export_run(o, &v, U);
        for (int i = 0; i < U; i++) {
            CHECK_EQ_U64(v.seen[i], has[i]);
            if (has[i])
                CHECK_EQ_U64(v.val[i], val[i]);
        }
        export_free(&v);
        obl_nroram_destroy(o);
    }
}

static void export_blocks(void)
{
    export_past_capacity();
    export_healthy();
}

/* --------------------------------------------------------------- small */

static void small_checks(void)
{
    /* RORAM stash_size: checked whatever n (a scan for n = 100) */
    const uint64_t ns[] = {100, 100000};
    const uint32_t bad[] = {1, 65, 1000}, good[] = {2, 64};
    for (size_t i = 0; i < 2; i++) {
        obl_roram_params p;
        memset(&p, 0, sizeof(p));
        p.n = ns[i];
        p.value_size = 8;
        p.use_seed = 1;
        obl_roram *r = NULL;
        for (size_t j = 0; j < 3; j++) {
            p.stash_size = bad[j];
            CHECK_EQ_U64(obl_roram_create(&r, &p), OBL_ERR_INVALID_ARG);
            CHECK(r == NULL);
        }
        for (size_t j = 0; j < 2; j++) {
            p.stash_size = good[j];
            CHECK_EQ_U64(obl_roram_create(&r, &p), OBL_OK);
            obl_roram_destroy(r);
        }
    }
    /* a map's FULL: value_out zeroed, found 0 */
    for (uint32_t layout = OBL_OMAP_LAYOUT_INLINE; layout <= OBL_OMAP_LAYOUT_COMPACT; layout++) {
        obl_omap_params p;
        memset(&p, 0, sizeof(p));
        p.capacity = 4;
        p.key_size = 8;
        p.value_size = 8;
        p.layout = layout;
        p.use_seed = 1;
        p.seed = T.seed;
        obl_omap *m = NULL;
        CHECK_EQ_U64(obl_omap_create(&m, &p), OBL_OK);
        if (!m)
            continue;
        for (uint64_t k = 1; k <= 4; k++)
            CHECK_EQ_U64(obl_omap_put(m, &k, &k, NULL), OBL_OK);
        uint64_t k = 5, v = 9, out = 0xababababababababULL, found = 7;
        CHECK_EQ_U64(obl_omap_access(m, OBL_OMAP_PUT, &k, &v, &out, &found), OBL_ERR_FULL);
        CHECK_EQ_U64(out, 0);
        CHECK_EQ_U64(found, 0);
        obl_omap_destroy(m);
    }
    /* obl_nroram_insert with value NULL: refused, nothing stored */
    obl_nroram *o = nr_new(16, 0, 0);
    if (o) {
        uint64_t p = 0, out, v = 3;
        obl_err e;
        CHECK_EQ_U64(obl_nroram_insert(o, 1, NULL, &p), OBL_ERR_INVALID_ARG);
        uint64_t q = nr_fresh(o);
        CHECK_EQ_U64(nr_acc(o, 1, &q, OBL_ORAM_READ, NULL, &out, &e), 0);
        CHECK_EQ_U64(obl_nroram_insert(o, 1, &v, &p), OBL_OK);
        obl_nroram_destroy(o);
    }
}

/* The sub-tests (testutil.h: `--list`, `--only NAME`; one ctest entry
 * each, registered from these lines). */
static const test_case cases[] = {
    TEST_CASE(build_hash),
    TEST_CASE(ids),
    TEST_CASE(export_blocks),
    TEST_CASE(small_checks),
};

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_audit");
    return test_run("test_audit", cases, sizeof(cases) / sizeof(cases[0]), &R);
}
