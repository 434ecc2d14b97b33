/* SPDX-License-Identifier: MIT */
/*
 * The bulk build's oblivious dealing (shard_deal, src/shard/deal.c), each
 * a sub-test:
 *   model     against a plain partition by the map's PRF: every pair in its
 *             shard's range, the ranges' sizes the shards' counts, S = 1, 2,
 *             3, 15, 64, n = 0 .. 3000, keys of 8 and 16 bytes, duplicate
 *             keys kept as they are; FULL when a shard gets more than its
 *             capacity;
 *   trace     two inputs of the same n and the same per-shard counts, other
 *             keys at other positions: equal traces (controls: other
 *             counts, and a planted declassification of the labels, make
 *             them differ);
 *   alloc     every allocation of the dealing and of obl_shard_build
 *             failing in turn: NOMEM, nothing left allocated, then success.
 * With --ct the keys and values are secret for memcheck (the labels are
 * computed from them); the ct build's negative control links a dealing that
 * branches on the label (tests/shard/tests.cmake).
 */
#include <obl/shard.h>

#include "common/secret.h"
#include "common/trace.h"
#include "shard/shard_map.h"
#include "testutil.h"
#include "trace_check.h"

static test_rng R;

static const unsigned SHARDS[5] = {1, 2, 3, 15, 64};

/* A map with S shards for n pairs of ks/vs bytes on one thread (the trace
 * sink is the calling thread's), allocating through a (may be NULL). */
static obl_shard *map_new(unsigned S, uint64_t cap, size_t ks, size_t vs,
                          const obl_allocator *a)
{
    obl_shard_params p = test_shard_params(ks, vs, T.seed);
    p.capacity = cap < S ? S : cap;
    p.shards = S;
    p.threads = 1;
    p.alloc = a;
    obl_shard *m = NULL;
    CHECK(obl_shard_create(&m, &p) == OBL_OK);
    return m;
}

static uint64_t shard_of(const obl_shard *m, const unsigned char *key)
{
    uint64_t s = shard_route_shard_of(&m->rt, key);
    return OBL_DECLASSIFY_VAL(s);
}

static size_t g_rs; /* qsort's record size */
static int rec_cmp(const void *a, const void *b) { return memcmp(a, b, g_rs); }

/* The dealing of n pairs (keys, vals) on m, its inputs secret under --ct.
 * Returns its error; out: dk, dv and off (S + 1 entries). */
static obl_err run_deal(obl_shard *m, unsigned char *keys, unsigned char *vals, size_t n,
                        unsigned char *dk, unsigned char *dv, size_t *off)
{
    size_t ks = m->p.key_size, vs = m->p.value_size;
    if (T.ct) {
        OBL_SECRET(keys, n * ks);
        OBL_SECRET(vals, n * vs);
    }
    obl_err e = shard_deal(m, keys, vals, n, dk, dv, off);
    OBL_DECLASSIFY(keys, n * ks);
    OBL_DECLASSIFY(vals, n * vs);
    OBL_DECLASSIFY(dk, n * ks);
    OBL_DECLASSIFY(dv, n * vs);
    return e;
}

/* Checks the dealing of n pairs against the plain model: off[s + 1] -
 * off[s] is shard s's count and its range holds its pairs (as multisets). */
static void check_deal(const obl_shard *m, const unsigned char *keys, const unsigned char *vals,
                       size_t n, const unsigned char *dk, const unsigned char *dv,
                       const size_t *off)
{
    size_t ks = m->p.key_size, vs = m->p.value_size, rs = ks + vs;
    unsigned S = m->S;
    unsigned char *want = test_xzalloc(n * rs + 1), *got = test_xzalloc(n * rs + 1);
    size_t *cnt = test_xzalloc((S + 1) * sizeof *cnt), bad = 0;
    for (size_t i = 0; i < n; i++) /* counting sort by shard: the model */
        cnt[shard_of(m, keys + i * ks) + 1]++;
    for (unsigned s = 0; s < S; s++)
        cnt[s + 1] += cnt[s];
    CHECK(off[0] == 0);
    for (unsigned s = 0; s <= S; s++)
        bad += off[s] != cnt[s];
    CHECK_EQ_U64(bad, 0);
    for (size_t i = 0; i < n; i++) {
        size_t p = cnt[shard_of(m, keys + i * ks)]++;
        memcpy(want + p * rs, keys + i * ks, ks);
        memcpy(want + p * rs + ks, vals + i * vs, vs);
        memcpy(got + i * rs, dk + i * ks, ks);
        memcpy(got + i * rs + ks, dv + i * vs, vs);
    }
    g_rs = rs;
    for (unsigned s = 0; bad == 0 && s < S; s++) {
        qsort(want + off[s] * rs, off[s + 1] - off[s], rs, rec_cmp);
        qsort(got + off[s] * rs, off[s + 1] - off[s], rs, rec_cmp);
    }
    CHECK(bad || memcmp(want, got, n * rs) == 0);
    free(want);
    free(got);
    free(cnt);
}

/* n random pairs, keys below universe (small: duplicates), dealt and
 * checked. */
static void deal_case(unsigned S, size_t n, size_t ks, size_t vs, uint64_t universe)
{
    obl_shard *m = map_new(S, n + n / 2 + 64, ks, vs, NULL);
    if (!m)
        return;
    unsigned char *k = test_xzalloc(n * ks + 1), *v = test_xzalloc(n * vs + 1);
    unsigned char *dk = test_xzalloc(n * ks + 1), *dv = test_xzalloc(n * vs + 1);
    size_t off[65];
    for (size_t i = 0; i < n; i++) {
        uint64_t x = 1 + test_rng_below(&R, universe);
        test_rng_fill(&R, k + i * ks, ks);
        memcpy(k + i * ks, &x, 8);
        test_rng_fill(&R, v + i * vs, vs);
    }
    obl_err e = run_deal(m, k, v, n, dk, dv, off);
    CHECK(e == OBL_OK || e == OBL_ERR_FULL); /* FULL: a shard over cap_s */
    if (e == OBL_OK)
        check_deal(m, k, v, n, dk, dv, off);
    else
        fprintf(stderr, "  S %u n %zu: FULL\n", S, n);
    free(k), free(v), free(dk), free(dv);
    obl_shard_destroy(m);
}

static void model(void)
{
    static const size_t ns[] = {0, 1, 2, 3, 7, 64, 100, 1000, 3000};
    size_t nn = T.ct ? 5 : 9;
    for (unsigned si = 0; si < 5; si++)
        for (size_t i = 0; i < nn; i++) {
            unsigned S = SHARDS[si];
            deal_case(S, ns[i], 8, 24, UINT64_MAX - 1);
            deal_case(S, ns[i], 8, 24, 1 + ns[i] / 4); /* many duplicates */
            if (i % 3 == 2)
                deal_case(S, ns[i], 16, 5, UINT64_MAX - 1);
        }
    /* FULL: cap_s + 1 keys of shard 0, no other pair dealt */
    obl_shard *m = map_new(3, 60, 8, 8, NULL);
    if (!m)
        return;
    size_t n = m->cap_s + 1, got = 0;
    uint64_t *k = test_xzalloc(n * 8), *v = test_xzalloc(n * 8), *dk = test_xzalloc(n * 8),
             *dv = test_xzalloc(n * 8);
    for (uint64_t x = 1; got < n; x++)
        if (shard_of(m, (unsigned char *)&x) == 0)
            k[got++] = x;
    size_t off[4];
    CHECK(run_deal(m, (unsigned char *)k, (unsigned char *)v, n, (unsigned char *)dk,
                   (unsigned char *)dv, off) == OBL_ERR_FULL);
    CHECK(run_deal(m, (unsigned char *)k, (unsigned char *)v, n - 1, (unsigned char *)dk,
                   (unsigned char *)dv, off) == OBL_OK);
    CHECK(off[1] == n - 1 && off[3] == n - 1);
    free(k), free(v), free(dk), free(dv);
    obl_shard_destroy(m);
}

/* n keys whose shards are sh[0 .. n-1], fresh ones from rng seed rs. */
static void keys_with_shards(const obl_shard *m, const unsigned *sh, size_t n, uint64_t rs,
                             uint64_t *k)
{
    test_rng g;
    test_rng_seed(&g, rs);
    for (size_t i = 0; i < n; i++)
        do
            k[i] = test_rng_next(&g);
        while (shard_of(m, (unsigned char *)&k[i]) != sh[i]);
}

/* The trace of dealing the keys k (values: the keys) on m into t. */
static void deal_trace(obl_shard *m, uint64_t *k, size_t n, obl_trace *t)
{
    uint64_t *v = test_xzalloc(n * 8 + 8), *dk = test_xzalloc(n * 8 + 8),
             *dv = test_xzalloc(n * 8 + 8);
    size_t off[16];
    memcpy(v, k, n * 8);
    obl_trace_begin(t);
    CHECK(run_deal(m, (unsigned char *)k, (unsigned char *)v, n, (unsigned char *)dk,
                   (unsigned char *)dv, off) == OBL_OK);
    obl_trace_end();
    free(v), free(dk), free(dv);
}

static void trace(void)
{
    if (!obl_trace_enabled()) {
        test_skip("the library was built without OBL_TRACE");
        return;
    }
    size_t n = T.ct ? 40 : 300;
    const unsigned Ss[] = {2, 3, 15};
    for (size_t si = 0; si < 3; si++) {
        unsigned S = Ss[si];
        obl_shard *m = map_new(S, 2 * n, 8, 8, NULL);
        if (!m)
            return;
        unsigned *sh = test_xzalloc(n * sizeof *sh);
        uint64_t *k[4];
        for (int i = 0; i < 4; i++)
            k[i] = test_xzalloc(n * 8);
        for (size_t i = 0; i < n; i++)
            sh[i] = (unsigned)test_rng_below(&R, S);
        keys_with_shards(m, sh, n, 1, k[0]);
        for (size_t i = n - 1; i > 0; i--) { /* the same counts, other positions */
            size_t j = test_rng_below(&R, i + 1);
            unsigned x = sh[i];
            sh[i] = sh[j], sh[j] = x;
        }
        keys_with_shards(m, sh, n, 2, k[1]);
        sh[0] = (sh[0] + 1) % S; /* the control: other counts */
        keys_with_shards(m, sh, n, 3, k[2]);
        obl_trace t[4];
        for (int i = 0; i < 4; i++)
            CHECK(obl_trace_init(&t[i], 1u << 22));
        for (int i = 0; i < 3; i++)
            deal_trace(m, k[i], n, &t[i]);
        shard_deal_test_plant(1); /* the control: labels declassified */
        deal_trace(m, k[1], n, &t[3]);
        shard_deal_test_plant(0);
        CHECK(t[0].n > 0 && !t[0].overflow);
        CHECK_TRACES_EQUAL(&t[0], &t[1], "S %u", S);
        CHECK(!obl_trace_equal(&t[0], &t[2]));
        CHECK(!obl_trace_equal(&t[1], &t[3]));
        for (int i = 0; i < 4; i++)
            obl_trace_free(&t[i]), free(k[i]);
        free(sh);
        obl_shard_destroy(m);
    }
}

/* obl_shard_build of the n pairs with the allocator failing after 0, 1,
 * ... allocations: NOMEM and no map, nothing left allocated, until it
 * succeeds. */
static void alloc_build(unsigned S, size_t n, const uint64_t *k, const uint64_t *v,
                        test_failing_alloc *fa, const obl_allocator *a)
{
    obl_shard_params p = test_shard_params(8, 8, T.seed);
    p.capacity = 2 * n, p.shards = S, p.threads = 1, p.alloc = a;
    obl_err e = OBL_ERR_NOMEM;
    for (long budget = 0; e == OBL_ERR_NOMEM; budget++) {
        obl_shard *b = NULL;
        fa->budget = budget;
        e = obl_shard_build(&b, &p, k, v, n);
        fa->budget = -1;
        CHECK(e == OBL_OK ? b != NULL : (e == OBL_ERR_NOMEM && b == NULL && fa->live == 0));
        obl_shard_destroy(b);
    }
    CHECK(e == OBL_OK && fa->live == 0);
}

/* The dealing with the allocator failing after 0, 1, ... allocations:
 * NOMEM until it succeeds, with nothing left allocated by it; then the
 * same for the whole build if `build`. */
static void alloc_deal(unsigned S, size_t n, int build)
{
    test_failing_alloc fa = {-1, 0, 0};
    obl_allocator a = {test_fa_alloc, test_fa_free, &fa};
    obl_shard *m = map_new(S, 2 * n, 8, 8, &a);
    if (!m)
        return;
    uint64_t *k = test_xzalloc(n * 8), *v = test_xzalloc(n * 8), *dk = test_xzalloc(n * 8),
             *dv = test_xzalloc(n * 8);
    for (size_t i = 0; i < n; i++)
        k[i] = test_rng_next(&R), v[i] = ~k[i];
    size_t off[65];
    long live = fa.live;
    obl_err e = OBL_ERR_NOMEM;
    long budget = 0;
    for (; e == OBL_ERR_NOMEM; budget++) {
        fa.budget = budget;
        e = run_deal(m, (unsigned char *)k, (unsigned char *)v, n, (unsigned char *)dk,
                     (unsigned char *)dv, off);
        fa.budget = -1;
        CHECK(e == OBL_OK || e == OBL_ERR_NOMEM);
        CHECK(fa.live == live);
    }
    CHECK(S == 1 || budget > 1); /* at least the first allocation failed */
    if (e == OBL_OK)
        check_deal(m, (unsigned char *)k, (unsigned char *)v, n, (unsigned char *)dk,
                   (unsigned char *)dv, off);
    obl_shard_destroy(m);
    CHECK(fa.live == 0);
    if (build) /* the whole build: NOMEM and no map until it succeeds */
        alloc_build(S, n, k, v, &fa, &a);
    free(k), free(v), free(dk), free(dv);
}

static void alloc(void)
{
    /* under memcheck the build's loop (a pool per try) for S = 2 alone */
    for (unsigned si = T.ct ? 1 : 0; si < (T.ct ? 3u : 4u); si++)
        alloc_deal(SHARDS[si], T.ct ? 20 : 200, !T.ct || si == 1);
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_deal");
    static const test_case cases[] = {
        TEST_CASE(model),
        TEST_CASE(trace),
        TEST_CASE(alloc),
    };
    return test_run("test_deal", cases, sizeof(cases) / sizeof(cases[0]), &R);
}
