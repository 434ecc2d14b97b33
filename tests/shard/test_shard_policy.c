/* SPDX-License-Identifier: MIT */
/*
 * The sharded map's store policy (obl/shard.h, docs/shard.md "Store
 * policy"): with engines AUTO and a hint expected_batch, the map keeps
 * the one store whose engine the cost model puts cheaper for that batch
 * size. Sub-tests, against the plain model of shard_model.h:
 *   forced_choice  the choice with given cost constants (nothing timed:
 *                  shard_test_pick_costs), for hints on both
 *                  sides of the crossover the constants put (S = 1, 2, 3);
 *                  control: the same hints under other constants keep the
 *                  other store; explicit engine sets and AUTO without a
 *                  hint ignore the hint;
 *   timed_choice   the constants timed on the machine (shard capacities
 *                  below and above the small scratch omap's): the kept
 *                  store is the one of the lower estimate; in the release
 *                  build a hint of 1 keeps the omaps and one of 2^16 the
 *                  scan store;
 *   every_size     maps made (created and built) with either store answer
 *                  get, put, erase and mixed batches of every size (1 to
 *                  600, far from the hint) like the model;
 *   bad_hints      hints above OBL_SHARD_MAX_BATCH (and UINT64_MAX) are
 *                  INVALID_ARG for create and build, with any engine set;
 *                  the largest hint is fine; bad batches on a map that
 *                  kept one store leave it unchanged;
 *   alloc_create   create and build with a hint, every allocation failing
 *                  in turn (the timing's scratch stores too): NOMEM and
 *                  nothing left allocated (not under memcheck: minutes).
 * With --ct the keys, values, ops and the map's seed are secret for
 * memcheck and the map runs one thread.
 */
#include <obl/shard.h>

#include "common/secret.h"
#include "shard/shard_map.h"
#include "shard/shard_model.h"
#include "testutil.h"

#define KS 8
#define VS 16

static test_rng R;

/* The sanitizers' build (-O0): timings of another shape. */
#if defined(__SANITIZE_ADDRESS__)
#define POLICY_SANITIZE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POLICY_SANITIZE 1
#endif
#endif
#ifndef POLICY_SANITIZE
#define POLICY_SANITIZE 0
#endif

static obl_shard_params params(uint64_t cap, unsigned S, unsigned threads, uint64_t hint)
{
    obl_shard_params p = {0};
    p.capacity = cap;
    p.key_size = KS;
    p.value_size = VS;
    p.shards = S;
    p.threads = T.ct ? 1 : threads;
    p.engines = OBL_SHARD_ENGINES_AUTO;
    p.expected_batch = hint;
    p.use_seed = 1;
    p.seed = T.seed;
    if (T.ct) /* the map's randomness is secret */
        OBL_SECRET(&p.seed, sizeof p.seed);
    return p;
}

static unsigned kept(const obl_shard *s)
{
    obl_shard_stats st;
    obl_shard_get_stats(s, &st);
    return st.engines;
}

/* One batch of B random requests over keys 1 .. universe (kind 0 gets,
 * 1 mixed), checked against the model and applied to it. */
static int one_batch(obl_shard *s, model *m, size_t B, uint64_t universe, int kind)
{
    uint64_t *ops = calloc(B, 8), *keys = calloc(B, 8), *found = calloc(B, 8);
    unsigned char *vin = calloc(B, VS), *vout = calloc(B, VS);
    static const unsigned char zero[VS];
    int ok = ops && keys && found && vin && vout;
    for (size_t i = 0; ok && i < B; i++) {
        keys[i] = 1 + test_rng_below(&R, universe);
        ops[i] = kind ? test_rng_below(&R, 3) : OBL_OMAP_GET; /* GET, PUT, ERASE */
        for (size_t k = 0; k < VS; k++)
            vin[i * VS + k] = (unsigned char)test_rng_next(&R);
    }
    if (ok && T.ct) {
        OBL_SECRET(ops, B * 8);
        OBL_SECRET(keys, B * 8);
        OBL_SECRET(vin, B * VS);
    }
    obl_err e = ok ? obl_shard_batch(s, B, kind ? ops : NULL, keys, kind ? vin : NULL, vout, found)
                   : OBL_ERR_NOMEM;
    ok &= e == OBL_OK;
    if (T.ct) {
        OBL_DECLASSIFY(vout, B * VS);
        OBL_DECLASSIFY(found, B * 8);
        OBL_DECLASSIFY(keys, B * 8);
        OBL_DECLASSIFY(ops, B * 8);
        OBL_DECLASSIFY(vin, B * VS);
    }
    for (size_t i = 0; ok && i < B; i++) {
        long p = model_find(m, keys[i]);
        ok &= found[i] == (p >= 0);
        ok &= !memcmp(vout + i * VS, p >= 0 ? m->v + (size_t)p * VS : zero, VS);
    }
    for (size_t i = 0; ok && kind && i < B; i++)
        model_write(m, ops[i], keys[i], vin + i * VS);
    free(ops);
    free(keys);
    free(found);
    free(vin);
    free(vout);
    return ok;
}

/* Every key of 1 .. universe as one get batch: the map equals the model. */
static int same_as_model(obl_shard *s, model *m, uint64_t universe)
{
    uint64_t *keys = calloc(universe, 8), *found = calloc(universe, 8);
    unsigned char *vout = calloc(universe, VS);
    static const unsigned char zero[VS];
    int ok = keys && found && vout;
    for (uint64_t i = 0; ok && i < universe; i++)
        keys[i] = 1 + i;
    ok = ok && obl_shard_get(s, universe, keys, vout, found) == OBL_OK;
    if (ok && T.ct) {
        OBL_DECLASSIFY(vout, universe * VS);
        OBL_DECLASSIFY(found, universe * 8);
    }
    for (uint64_t i = 0; ok && i < universe; i++) {
        long p = model_find(m, keys[i]);
        ok &= found[i] == (p >= 0);
        ok &= !memcmp(vout + i * VS, p >= 0 ? m->v + (size_t)p * VS : zero, VS);
    }
    free(keys);
    free(found);
    free(vout);
    return ok;
}

/* Constants under which a shard's scan costs cap_s * entry and a request
 * through the omaps `access`: everything else free. */
static shard_costs simple_costs(double access, double entry)
{
    shard_costs c = {0};
    c.access_us = access;
    c.entry_us = entry;
    return c;
}

/* The store AUTO keeps for hint B on S shards (T = 1) under simple_costs:
 * scan iff cap_s * entry < b * access, b the balancer's per-shard batch. */
static unsigned expected_store(uint64_t cap, unsigned S, uint64_t B, double access, double entry)
{
    double cap_s = (double)shard_capacity_each(cap, S, 40);
    double b = (double)shard_route_b((size_t)B, S, 40);
    return cap_s * entry < b * access ? OBL_SHARD_ENGINES_SCAN : OBL_SHARD_ENGINES_PER_REQUEST;
}

static void forced_choice(void)
{
    const uint64_t cap = 4000;
    const uint64_t hints[] = {1, 2, 3, 4, 5, 8, 64, 1000, OBL_SHARD_MAX_BATCH};
    const unsigned Ss[] = {1, 2, 3};
    int seen[3] = {0, 0, 0}; /* per-request, scan kept; control differed */
    for (size_t si = 0; si < 3; si++)
        for (size_t h = 0; h < sizeof hints / sizeof hints[0]; h++) {
            if (T.ct && (hints[h] == OBL_SHARD_MAX_BATCH || hints[h] == 4 || hints[h] == 5 ||
                         hints[h] == 64 || Ss[si] == 3)) /* memcheck: fewer maps */
                continue;
            /* the crossover at b = 2 per shard: 2 * cap_s * entry = access */
            double entry = 2.0 / (double)shard_capacity_each(cap, Ss[si], 40);
            shard_costs c = simple_costs(1.0, entry), ctl = simple_costs(1.0, 1e6);
            unsigned want = expected_store(cap, Ss[si], hints[h], 1.0, entry), got[2];
            for (int k = 0; k < 2; k++) {
                shard_test_pick_costs(k ? &ctl : &c);
                obl_shard_params p = params(cap, Ss[si], 1, hints[h]);
                obl_shard *s = NULL;
                CHECK(obl_shard_create(&s, &p) == OBL_OK);
                got[k] = s ? kept(s) : 0;
                obl_shard_destroy(s);
            }
            shard_test_pick_costs(NULL);
            CHECK_EQ_U64(got[0], want);
            CHECK_EQ_U64(got[1], OBL_SHARD_ENGINES_PER_REQUEST); /* the scan too dear */
            seen[0] |= got[0] == OBL_SHARD_ENGINES_PER_REQUEST;
            seen[1] |= got[0] == OBL_SHARD_ENGINES_SCAN;
            seen[2] |= got[0] != got[1];
        }
    CHECK(seen[0] && seen[1] && seen[2]); /* both sides of the crossover met */
    /* explicit engine sets, and AUTO without a hint, ignore the hint */
    shard_costs c = simple_costs(1.0, 1e-9); /* the scan would win any hint */
    shard_test_pick_costs(&c);
    const unsigned sets[4][2] = {{OBL_SHARD_ENGINES_PER_REQUEST, 1000},
                                 {OBL_SHARD_ENGINES_SCAN, 1},
                                 {OBL_SHARD_ENGINES_BOTH, 1000},
                                 {OBL_SHARD_ENGINES_AUTO, 0}};
    for (int i = 0; i < 4; i++) {
        obl_shard_params p = params(cap, 2, 1, sets[i][1]);
        p.engines = sets[i][0];
        obl_shard *s = NULL;
        CHECK(obl_shard_create(&s, &p) == OBL_OK);
        unsigned want = sets[i][0] == OBL_SHARD_ENGINES_AUTO ? OBL_SHARD_ENGINES_BOTH : sets[i][0];
        CHECK_EQ_U64(s ? kept(s) : 0, want);
        obl_shard_destroy(s);
    }
    shard_test_pick_costs(NULL);
}

static void timed_choice(void)
{
    const uint64_t hints[2] = {1, 1u << 16};
    const unsigned want[2] = {OBL_SHARD_ENGINES_PER_REQUEST, OBL_SHARD_ENGINES_SCAN};
    /* a shard capacity below the small scratch omap's and one above it
     * (the scan first timed against the small omap, then the full one; a
     * hint of 1 only: the model's estimates for 2^16 at one shard of
     * 2^16 lie within a tenth of each other) */
    for (int h = 0; h < 3; h++) {
        obl_shard_params p = params(h < 2 ? 1u << 14 : 1u << 16, h < 2 ? 2 : 1, 1, hints[h % 2]);
        obl_shard *s = NULL;
        CHECK(obl_shard_create(&s, &p) == OBL_OK);
        if (!s)
            continue;
        obl_shard_stats st;
        obl_shard_get_stats(s, &st);
        printf("  capacity %" PRIu64 ", hint %" PRIu64
               ": estimates per-request %.0f us, scan %.0f us; kept %u\n",
               p.capacity, hints[h % 2], st.est_per_request_us, st.est_scan_us, st.engines);
        CHECK(st.est_per_request_us > 0 && st.est_scan_us > 0);
        CHECK_EQ_U64(st.engines, st.est_scan_us < st.est_per_request_us
                                     ? OBL_SHARD_ENGINES_SCAN
                                     : OBL_SHARD_ENGINES_PER_REQUEST);
        /* the model's margins here are tens of times (hint 1) and about 2 */
        if (!T.ct && !POLICY_SANITIZE)
            CHECK_EQ_U64(st.engines, want[h % 2]);
        obl_shard_destroy(s);
    }
}

/* A map of store `store` (forced), created empty or built from n0 pairs,
 * through batches of every size; then equal to the model. */
static void sizes_run(unsigned S, unsigned store, int build)
{
    const uint64_t cap = T.ct ? 80 : 700, universe = cap + cap / 4, n0 = cap / 2;
    const size_t Bs[] = {1, 2, 7, 33, 100, 600};
    const size_t nB = T.ct ? 4 : 6;
    shard_costs c = store == OBL_SHARD_ENGINES_SCAN ? simple_costs(1.0, 1e-9)
                                                    : simple_costs(1e-9, 1.0);
    shard_test_pick_costs(&c);
    obl_shard_params p = params(cap, S, 2, 64);
    model m = model_new(cap, VS);
    obl_shard *s = NULL;
    if (build) {
        uint64_t *k = calloc(n0, 8);
        unsigned char *v = calloc(n0, VS);
        for (uint64_t i = 0; k && v && i < n0; i++) {
            k[i] = 1 + 2 * i; /* odd keys: half the universe present */
            for (size_t j = 0; j < VS; j++)
                v[i * VS + j] = (unsigned char)test_rng_next(&R);
            model_write(&m, OBL_OMAP_PUT, k[i], v + i * VS);
        }
        CHECK(k && v && obl_shard_build(&s, &p, k, v, n0) == OBL_OK);
        free(k);
        free(v);
    } else {
        CHECK(obl_shard_create(&s, &p) == OBL_OK);
    }
    shard_test_pick_costs(NULL);
    if (!s) {
        model_free(&m);
        return;
    }
    CHECK_EQ_U64(kept(s), store);
    int ok = 1;
    for (size_t i = 0; i < nB; i++)
        for (int kind = 1; kind >= 0; kind--) /* a mixed batch, then gets */
            ok &= one_batch(s, &m, Bs[i], universe, kind);
    if (!ok)
        fprintf(stderr, "  S %u store %u build %d: wrong answers\n", S, store, build);
    CHECK(ok);
    CHECK(same_as_model(s, &m, universe));
    obl_shard_stats st;
    obl_shard_get_stats(s, &st);
    CHECK_EQ_U64(st.last_engine, store == OBL_SHARD_ENGINES_SCAN ? OBL_SHARD_ENGINE_SCAN
                                                                 : OBL_SHARD_ENGINE_PER_REQUEST);
    obl_shard_destroy(s);
    model_free(&m);
}

static void every_size(void)
{
    const unsigned Ss[] = {1, 2, 3};
    for (size_t si = 0; si < 3; si++)
        for (int build = 0; build <= 1; build++) {
            sizes_run(Ss[si], OBL_SHARD_ENGINES_PER_REQUEST, build);
            sizes_run(Ss[si], OBL_SHARD_ENGINES_SCAN, build);
        }
}

static void bad_hints(void)
{
    const uint64_t bad[] = {(uint64_t)OBL_SHARD_MAX_BATCH + 1, (uint64_t)1 << 40, UINT64_MAX};
    uint64_t keys[4] = {1, 2, 3, 4};
    unsigned char vals[4 * VS] = {0};
    for (unsigned e = 0; e <= OBL_SHARD_ENGINES_BOTH; e++)
        for (int i = 0; i < 3; i++) {
            obl_shard_params p = params(64, 2, 1, bad[i]);
            p.engines = e;
            obl_shard *s = (obl_shard *)&p; /* must be reset to NULL */
            CHECK(obl_shard_create(&s, &p) == OBL_ERR_INVALID_ARG && s == NULL);
            s = (obl_shard *)&p;
            CHECK(obl_shard_build(&s, &p, keys, vals, 4) == OBL_ERR_INVALID_ARG && s == NULL);
        }
    obl_shard_params p = params(64, 2, 1, 64);
    p.engines = OBL_SHARD_ENGINES_BOTH + 1;
    obl_shard *s = NULL;
    CHECK(obl_shard_create(&s, &p) == OBL_ERR_INVALID_ARG && s == NULL);
    /* the largest hint: the scan's store for any sensible constants; a map
     * of either store refuses bad batches and stays as it was */
    for (int h = 0; h < 2; h++) {
        uint64_t hint = h ? (T.ct ? 1u << 16 : OBL_SHARD_MAX_BATCH) : 1;
        p = params(64, 2, 1, hint);
        model m = model_new(64, VS);
        CHECK(obl_shard_create(&s, &p) == OBL_OK);
        if (!s) {
            model_free(&m);
            continue;
        }
        CHECK(one_batch(s, &m, 20, 40, 1));
        uint64_t k1[1] = {1}, f1[1];
        unsigned char v1[VS];
        CHECK(obl_shard_get(s, 0, k1, v1, f1) == OBL_ERR_INVALID_ARG);
        CHECK(obl_shard_get(s, OBL_SHARD_MAX_BATCH + 1, k1, v1, f1) == OBL_ERR_INVALID_ARG);
        CHECK(obl_shard_put(s, 1, k1, NULL, NULL) == OBL_ERR_INVALID_ARG);
        CHECK(obl_shard_batch(s, 1, NULL, NULL, NULL, v1, f1) == OBL_ERR_INVALID_ARG);
        CHECK(same_as_model(s, &m, 40));
        obl_shard_destroy(s);
        model_free(&m);
    }
}

/* Create or build with a hint, every allocation failing in turn. */
static void alloc_create(void)
{
    if (T.ct) { /* a hundred timed creations under memcheck: minutes */
        test_skip("allocation failures run in the release and sanitizer builds");
        return;
    }
    uint64_t keys[20];
    unsigned char vals[20 * VS];
    for (int i = 0; i < 20; i++)
        keys[i] = 100 + (uint64_t)i;
    memset(vals, 5, sizeof vals);
    for (int build = 0; build <= 1; build++)
        for (long budget = 0;; budget++) {
            test_failing_alloc fa = {budget, 0, 0};
            obl_allocator a = {test_fa_alloc, test_fa_free, &fa};
            obl_shard_params p = params(40, 2, 2, 16);
            p.alloc = &a;
            obl_shard *s = NULL;
            obl_err e = build ? obl_shard_build(&s, &p, keys, vals, 20) : obl_shard_create(&s, &p);
            if (e != OBL_OK) {
                CHECK(e == OBL_ERR_NOMEM && s == NULL && fa.live == 0);
                continue;
            }
            model m = model_new(40, VS);
            for (int i = 0; build && i < 20; i++)
                model_write(&m, OBL_OMAP_PUT, keys[i], vals + i * VS);
            fa.budget = -1;
            CHECK(one_batch(s, &m, 16, 50, 1));
            CHECK(same_as_model(s, &m, 50));
            obl_shard_destroy(s);
            CHECK(fa.live == 0);
            model_free(&m);
            printf("  %s: %ld allocations failed in turn\n", build ? "build" : "create", budget);
            break;
        }
}

/* A map made for its expected batch size (AUTO with a hint) that keeps the
 * omaps makes their value trees dense (shard_dense_omaps): at a shard
 * capacity just above 2.5 x a power of two they take less memory than the
 * omaps of a map whose caller asked for PER_REQUEST, the control, and
 * both answer against the model. */
static void dense_omaps(void)
{
    const uint64_t cap = 10241; /* S = 1: a shard capacity just over 2.5 x 2^12 */
    size_t bytes[2] = {0, 0};
    shard_costs c = simple_costs(1e-9, 1.0); /* the omaps win */
    for (int dense = 0; dense < 2; dense++) {
        obl_shard_params p = params(cap, 1, 2, dense ? 1024 : 0);
        if (!dense)
            p.engines = OBL_SHARD_ENGINES_PER_REQUEST;
        shard_test_pick_costs(&c);
        obl_shard *s = NULL;
        CHECK_EQ_U64(obl_shard_create(&s, &p), OBL_OK);
        shard_test_pick_costs(NULL);
        if (!s)
            continue;
        CHECK_EQ_U64(kept(s), OBL_SHARD_ENGINES_PER_REQUEST);
        CHECK_EQ_U64(shard_dense_omaps(s), (uint64_t)dense);
        obl_shard_stats st;
        obl_shard_get_stats(s, &st);
        CHECK(st.shard_capacity * 2 > (uint64_t)5 << 12 && st.shard_capacity * 25 <= 63u << 12);
        bytes[dense] = obl_omap_memory_bytes(s->om[0]);
        model m = model_new(cap, VS);
        for (int b = 0; b < 3; b++)
            CHECK(one_batch(s, &m, 200, 4 * cap / 5, 1));
        CHECK(same_as_model(s, &m, 4 * cap / 5));
        model_free(&m);
        obl_shard_destroy(s);
    }
    printf("  omap bytes, PER_REQUEST %zu, AUTO with a hint (dense) %zu\n", bytes[0], bytes[1]);
    CHECK(bytes[1] > 0 && 10 * bytes[1] < 7 * bytes[0]);
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_shard_policy");
    static const test_case cases[] = {
        TEST_CASE(forced_choice),
        TEST_CASE(timed_choice),
        TEST_CASE(every_size),
        TEST_CASE(bad_hints),
        TEST_CASE(alloc_create),
        TEST_CASE(dense_omaps),
    };
    return test_run("test_shard_policy", cases, sizeof(cases) / sizeof(cases[0]), &R);
}
