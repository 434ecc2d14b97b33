/* SPDX-License-Identifier: MIT */
/*
 * Tests of the sharded map (obl/shard.h) against a plain model (a list of
 * pairs): seeded streams of get, put, erase and mixed batches with
 * duplicates and misses, for S = 1, 2, 3, 15, 64, each engine set, get
 * batches cut into 2 and 3 sub-batches (parts.c, forced), batch
 * sizes 1 .. 2^16 (small ones under memcheck, up to 4K under the
 * sanitizers), a bulk build, all keys in
 * one shard, empty and full maps; bad input and allocation failure leave
 * the map unchanged. With --ct the batches' keys, values and ops, the
 * built pairs and the map's seed are marked secret for memcheck and the map runs one thread (two in two
 * streams: memcheck serialises them).
 */
#include <obl/shard.h>

#include "common/secret.h"
#include "shard/shard_map.h"
#include "shard/shard_model.h"
#include "testutil.h"

#define KS 8
#define VS 16

/* The sanitizers' build (-O0): smaller large batches. */
#if defined(__SANITIZE_ADDRESS__)
#define SHARD_SANITIZE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHARD_SANITIZE 1
#endif
#endif
#ifndef SHARD_SANITIZE
#define SHARD_SANITIZE 0
#endif

/* The batch's answers from the state before it, then its writes in order. */
static int model_batch(model *m, size_t B, const uint64_t *ops, const uint64_t *keys,
                       const unsigned char *vin, const unsigned char *vout,
                       const uint64_t *found)
{
    static const unsigned char zero[VS];
    int ok = 1;
    for (size_t i = 0; i < B; i++) {
        long p = model_find(m, keys[i]);
        ok &= found[i] == (p >= 0);
        ok &= !memcmp(vout + i * VS, p >= 0 ? m->v + (size_t)p * VS : zero, VS);
    }
    for (size_t i = 0; vin && i < B; i++)
        model_write(m, ops[i], keys[i], vin + i * VS);
    return ok;
}

typedef struct {
    uint64_t *ops, *keys, *found;
    unsigned char *vin, *vout;
} bufs;

static void bufs_init(bufs *b, size_t B)
{
    b->ops = calloc(B, 8);
    b->keys = calloc(B, 8);
    b->found = calloc(B, 8);
    b->vin = calloc(B, VS);
    b->vout = calloc(B, VS);
}

static void bufs_free(bufs *b)
{
    free(b->ops);
    free(b->keys);
    free(b->found);
    free(b->vin);
    free(b->vout);
}

/* Runs one batch (kind 0 get, 1 put, 2 erase, 3 mixed) and checks it. */
static obl_err do_batch(obl_shard *s, model *m, bufs *b, size_t B, int kind)
{
    if (T.ct) {
        OBL_SECRET(b->ops, B * 8);
        OBL_SECRET(b->keys, B * 8);
        OBL_SECRET(b->vin, B * VS);
    }
    obl_err e;
    if (kind == 0)
        e = obl_shard_get(s, B, b->keys, b->vout, b->found);
    else
        e = obl_shard_batch(s, B, b->ops, b->keys, b->vin, b->vout, b->found);
    OBL_DECLASSIFY(b->ops, B * 8);
    OBL_DECLASSIFY(b->keys, B * 8);
    OBL_DECLASSIFY(b->vin, B * VS);
    OBL_DECLASSIFY(b->vout, B * VS);
    OBL_DECLASSIFY(b->found, B * 8);
    if (e == OBL_OK) {
        int ok = model_batch(m, B, b->ops, b->keys, kind ? b->vin : NULL, b->vout, b->found);
        CHECK(ok);
        if (!ok && T.failures <= 5) {
            obl_shard_stats st;
            obl_shard_get_stats(s, &st);
            fprintf(stderr, "  S %u engines %u engine %u B %zu b %zu kind %d\n", st.shards,
                    st.engines, st.last_engine, B, st.last_b, kind);
        }
    }
    return e;
}

/* Keys from a small universe (duplicates, hits and misses); ops by kind. */
static void fill_batch(test_rng *r, bufs *b, size_t B, int kind, uint64_t universe)
{
    for (size_t i = 0; i < B; i++) {
        b->keys[i] = 1 + test_rng_below(r, universe);
        b->ops[i] = kind == 3 ? test_rng_below(r, 3) : (uint64_t)(kind ? kind : 0);
        test_rng_fill(r, b->vin + i * VS, VS);
    }
}

/* Threads under memcheck (which serialises them): 1, and 2 for one stream. */
static unsigned ct_threads = 1;

/* Sub-batches of the get batches through the omaps (0: the cost model's). */
static unsigned force_parts = 0;

static obl_shard_params params(uint64_t cap, unsigned S, unsigned engines, unsigned threads)
{
    obl_shard_params p = {0};
    p.capacity = cap;
    p.key_size = KS;
    p.value_size = VS;
    p.shards = S;
    p.threads = T.ct ? ct_threads : threads;
    p.engines = engines;
    p.use_seed = 1;
    p.seed = T.seed;
    if (T.ct) /* the map's randomness (its PRF key, the omaps' leaves) is secret */
        OBL_SECRET(&p.seed, sizeof p.seed);
    return p;
}

/* Every key of the universe, as a get batch: the map equals the model. */
static void check_all(obl_shard *s, model *m, uint64_t universe)
{
    bufs b;
    bufs_init(&b, universe);
    for (size_t i = 0; i < universe; i++)
        b.keys[i] = 1 + i;
    CHECK(do_batch(s, m, &b, universe, 0) == OBL_OK);
    bufs_free(&b);
}

/* A stream of batches over keys 1 .. universe; built from n0 pairs. A FULL
 * batch must leave the map as it was. */
static void stream(uint64_t cap, unsigned S, unsigned engines, const size_t *Bs, size_t nB,
                   uint64_t universe, int rounds)
{
    test_rng r;
    test_rng_seed(&r, T.seed ^ cap ^ (uint64_t)S << 32 ^ engines);
    model m = model_new(universe, VS);
    size_t n0 = (size_t)(cap < universe ? cap : universe) / 2;
    for (size_t i = 0; i < n0; i++) {
        m.k[i] = 1 + 2 * i % universe;
        test_rng_fill(&r, m.v + i * VS, VS);
    }
    m.n = n0;
    obl_shard_params p = params(cap, S, engines, 3);
    obl_shard *s = NULL;
    if (T.ct) { /* the stored pairs are secret: so is the map's state */
        OBL_SECRET(m.k, n0 * 8);
        OBL_SECRET(m.v, n0 * VS);
    }
    CHECK(obl_shard_build(&s, &p, m.k, m.v, n0) == OBL_OK);
    OBL_DECLASSIFY(m.k, n0 * 8);
    OBL_DECLASSIFY(m.v, n0 * VS);
    if (!s)
        return;
    s->parts_force = force_parts;
    for (int it = 0; it < rounds; it++) {
        size_t B = Bs[it % nB];
        bufs b;
        bufs_init(&b, B);
        int kind = it % 4;
        fill_batch(&r, &b, B, kind, universe);
        obl_err e = do_batch(s, &m, &b, B, kind);
        CHECK(e == OBL_OK || (e == OBL_ERR_FULL && universe > cap));
        if (e != OBL_OK)
            check_all(s, &m, universe);
        bufs_free(&b);
    }
    check_all(s, &m, universe);
    obl_shard_stats st;
    obl_shard_get_stats(s, &st);
    CHECK(st.shards == S && st.batches > 0 && st.shard_capacity >= cap / S);
    CHECK(obl_shard_memory_bytes(s) > 0);
    obl_shard_destroy(s);
    model_free(&m);
}

/* Keys of one shard only: fine while the batch's distinct keys fit in b;
 * more is the balancer's capacity event, and changes nothing. */
static void one_shard(unsigned engines)
{
    obl_shard_params p = params(400, 4, engines, 2);
    obl_shard *s = NULL;
    CHECK(obl_shard_create(&s, &p) == OBL_OK);
    if (!s)
        return;
    size_t B = 64, b = shard_route_b(B, 4, 40);
    uint64_t ks[400];
    size_t nk = 0;
    for (uint64_t k = 1; nk < 400 && k < 100000; k++) {
        uint64_t sh = shard_route_shard_of(&s->rt, (const unsigned char *)&k);
        OBL_DECLASSIFY(&sh, sizeof sh); /* secret under --ct: the map's seed is */
        if (sh == 0)
            ks[nk++] = k;
    }
    CHECK(nk > b && b < B);
    s->parts_force = 1; /* the whole batch's bound; sub-batches below */
    model m = model_new(400, VS);
    bufs bb;
    bufs_init(&bb, B);
    test_rng r;
    test_rng_seed(&r, T.seed);
    fill_batch(&r, &bb, B, 1, 1);
    for (size_t i = 0; i < B; i++) /* b - 1 distinct keys of shard 0 */
        bb.keys[i] = ks[i % (b - 1)];
    CHECK(do_batch(s, &m, &bb, B, 1) == OBL_OK);
    for (size_t i = 0; i < B; i++) /* B distinct keys of shard 0 */
        bb.keys[i] = ks[i];
    CHECK(do_batch(s, &m, &bb, B, 3) == OBL_ERR_FULL);
    for (size_t i = 0; i < B; i++)
        bb.keys[i] = ks[i % (b - 1)];
    CHECK(do_batch(s, &m, &bb, B, 0) == OBL_OK); /* unchanged */
    if (engines == OBL_SHARD_ENGINES_PER_REQUEST) { /* gets in two sub-batches */
        s->parts_force = 2;
        size_t b2 = shard_part_b(s, B / 2, 2);
        CHECK(b2 < B / 2);
        for (size_t i = 0; i < B; i++) /* each half: b2 distinct keys, shared */
            bb.keys[i] = ks[i % b2];
        CHECK(do_batch(s, &m, &bb, B, 0) == OBL_OK);
        obl_shard_stats st;
        obl_shard_get_stats(s, &st);
        CHECK(st.last_parts == 2 && st.last_engine == OBL_SHARD_ENGINE_PER_REQUEST);
        for (size_t i = 0; i < B; i++) /* the second half: more than b2 */
            bb.keys[i] = ks[i < B / 2 ? 0 : i];
        CHECK(do_batch(s, &m, &bb, B, 0) == OBL_ERR_FULL);
    }
    bufs_free(&bb);
    model_free(&m);
    obl_shard_destroy(s);
}

/* Keys at the ends of the word (0, 1, 2^63, all ones and its neighbour),
 * present and absent, asked with duplicates in every batch kind and in
 * get batches of 1, 2 and 3 sub-batches: with answers in request order a
 * dummy's answer takes key all ones in its shard (route.c), which must
 * not shadow a real key all ones. */
static void extreme_keys(unsigned engines)
{
    static const uint64_t ek[] = {0, 1, 1ull << 63, UINT64_MAX - 1, UINT64_MAX, 5, 6, 7};
    static const uint64_t present[] = {0, 1ull << 63, UINT64_MAX, 6};
    const size_t ne = sizeof ek / sizeof ek[0];
    obl_shard_params p = params(64, 2, engines, 2);
    model m = model_new(64, VS);
    for (; m.n < 4; m.n++) {
        m.k[m.n] = present[m.n];
        memset(m.v + m.n * VS, (int)(0x40 + m.n), VS);
    }
    obl_shard *s = NULL;
    CHECK(obl_shard_build(&s, &p, m.k, m.v, m.n) == OBL_OK);
    if (!s) {
        model_free(&m);
        return;
    }
    test_rng r;
    test_rng_seed(&r, T.seed ^ 0xe4);
    for (int it = 0; it < 12; it++) {
        size_t B = it < 8 ? 16 : 5;
        int kind = it % 4;
        s->parts_force = kind == 0 ? (unsigned)(1 + it % 3) : 0;
        bufs b;
        bufs_init(&b, B);
        fill_batch(&r, &b, B, kind, 1);
        for (size_t i = 0; i < B; i++)
            b.keys[i] = ek[test_rng_below(&r, ne)];
        CHECK(do_batch(s, &m, &b, B, kind) == OBL_OK);
        bufs_free(&b);
    }
    obl_shard_destroy(s);
    model_free(&m);
}

static void bad_input(void)
{
    obl_shard_params p = params(100, 3, 0, 2);
    obl_shard *s = (obl_shard *)&p;
    obl_shard_params q = p;
    CHECK(obl_shard_create(NULL, &p) == OBL_ERR_INVALID_ARG);
    CHECK(obl_shard_create(&s, NULL) == OBL_ERR_INVALID_ARG && s == NULL);
    q.shards = 0;
    CHECK(obl_shard_create(&s, &q) == OBL_ERR_INVALID_ARG);
    q = p;
    q.shards = 101; /* S > capacity */
    CHECK(obl_shard_create(&s, &q) == OBL_ERR_INVALID_ARG);
    q = p;
    q.key_size = OBL_SHARD_MAX_KEY_SIZE + 1;
    CHECK(obl_shard_create(&s, &q) == OBL_ERR_INVALID_ARG);
    q = p;
    q.capacity = UINT64_MAX;
    CHECK(obl_shard_create(&s, &q) == OBL_ERR_TOO_LARGE);
    q = p;
    q.engines = 7;
    CHECK(obl_shard_create(&s, &q) == OBL_ERR_INVALID_ARG);
    uint64_t k[2] = {5, 5};
    unsigned char v[2 * VS] = {0};
    CHECK(obl_shard_build(&s, &p, k, v, 2) == OBL_ERR_DUPLICATE_KEY && s == NULL);
    q = p;
    q.engines = OBL_SHARD_ENGINES_SCAN;
    CHECK(obl_shard_build(&s, &q, k, v, 2) == OBL_ERR_DUPLICATE_KEY && s == NULL);
    CHECK(obl_shard_build(&s, &p, k, v, 101) == OBL_ERR_FULL);
    CHECK(obl_shard_build(&s, &p, NULL, v, 1) == OBL_ERR_INVALID_ARG);
    CHECK(obl_shard_create(&s, &p) == OBL_OK);
    uint64_t f[2];
    CHECK(obl_shard_get(s, 0, k, v, f) == OBL_ERR_INVALID_ARG);
    CHECK(obl_shard_get(s, OBL_SHARD_MAX_BATCH + 1, k, v, f) == OBL_ERR_INVALID_ARG);
    CHECK(obl_shard_get(NULL, 1, k, v, f) == OBL_ERR_INVALID_ARG);
    CHECK(obl_shard_get(s, 1, NULL, v, f) == OBL_ERR_INVALID_ARG);
    CHECK(obl_shard_batch(s, 1, NULL, k, v, v, f) == OBL_ERR_INVALID_ARG);
    CHECK(obl_shard_put(s, 1, k, NULL, f) == OBL_ERR_INVALID_ARG);
    obl_shard_destroy(s);
    obl_shard_destroy(NULL);
}

/* Batches of 8 (kind as do_batch, keys offset + 1 .. offset + universe)
 * with the allocator failing after 0, 1, ... allocations until one goes
 * through: NOMEM until then, and the map as it was (the model checks). */
static void failing_batches(obl_shard *s, model *m, test_failing_alloc *fa, int kind,
                            uint64_t universe, uint64_t offset)
{
    for (long b2 = 0, ok = 0; !ok; b2++) {
        fa->budget = b2;
        bufs bb;
        bufs_init(&bb, 8);
        test_rng r;
        test_rng_seed(&r, (uint64_t)b2);
        fill_batch(&r, &bb, 8, kind, universe);
        for (size_t i = 0; i < 8; i++)
            bb.keys[i] += offset;
        obl_err e = do_batch(s, m, &bb, 8, kind);
        CHECK(e == OBL_OK || e == OBL_ERR_NOMEM);
        ok = e == OBL_OK;
        bufs_free(&bb);
        fa->budget = -1;
    }
}

/* Every allocation of create, build and a batch fails in turn: an error,
 * nothing leaked, and a failed batch leaves the map as it was. */
static void alloc_failure_st(unsigned engines, unsigned S, unsigned threads)
{
    uint64_t keys[20];
    unsigned char vals[20 * VS];
    for (int i = 0; i < 20; i++)
        keys[i] = 100 + (uint64_t)i;
    memset(vals, 7, sizeof vals);
    for (long budget = 0;; budget++) {
        test_failing_alloc fa = {budget, 0, 0};
        obl_allocator a = {test_fa_alloc, test_fa_free, &fa};
        obl_shard_params p = params(40, S, engines, threads);
        p.alloc = &a;
        obl_shard *s = NULL;
        obl_err e = obl_shard_build(&s, &p, keys, vals, 20);
        if (e != OBL_OK) {
            CHECK(e == OBL_ERR_NOMEM && s == NULL && fa.live == 0);
            continue;
        }
        model m = model_new(40, VS);
        m.n = 20;
        memcpy(m.k, keys, sizeof keys);
        memcpy(m.v, vals, sizeof vals);
        failing_batches(s, &m, &fa, 3, 30, 99);
        s->parts_force = engines == OBL_SHARD_ENGINES_SCAN ? 0 : 2; /* gets in parts */
        failing_batches(s, &m, &fa, 0, 140, 0);
        obl_shard_destroy(s);
        CHECK(fa.live == 0);
        model_free(&m);
        break;
    }
}

/* Two shards on one thread; and one shard on two threads, where its omap
 * and its scan store build at once (the omap's own sorts on two threads
 * more) and an allocation fails on either thread. */
static void alloc_failure(unsigned engines)
{
    alloc_failure_st(engines, 2, 1);
    if (engines != OBL_SHARD_ENGINES_PER_REQUEST && engines != OBL_SHARD_ENGINES_SCAN)
        alloc_failure_st(engines, 1, 2); /* both stores: AUTO without a hint, BOTH */
}

/* The engine choice corrected by measured times: with both estimates of
 * a get batch forced to zero the model picks the omaps; once a batch of
 * that size was measured through them, the scan (its estimate below the
 * measured time) is picked. The control: another size, not measured,
 * keeps the model's choice. */
/* The engine of the second get batch of size B after the first, with the
 * model's per-access and per-entry costs set (the scan's other terms 0). */
static unsigned second_engine(obl_shard *s, size_t B, double access_us, double entry_us,
                              const uint64_t *keys, unsigned char *vout, uint64_t *found)
{
    shard_costs c = {0};
    c.access_us = access_us;
    c.entry_us = entry_us;
    memset(s->seen, 0, sizeof s->seen);
    s->cost = c;
    obl_shard_stats st;
    CHECK(obl_shard_get(s, B, keys, vout, found) == OBL_OK);
    CHECK(obl_shard_get(s, B, keys, vout, found) == OBL_OK);
    obl_shard_get_stats(s, &st);
    return st.last_engine;
}

/* An engine the model puts beyond 2 times the other is never measured; the
 * control, an engine near the other, is measured at the second batch. */
static void explore_near_only(void)
{
    obl_shard_params p = params(200, 2, OBL_SHARD_ENGINES_BOTH, 1);
    obl_shard *s = NULL;
    CHECK(obl_shard_create(&s, &p) == OBL_OK);
    if (!s)
        return;
    uint64_t keys[8], found[8];
    unsigned char vout[8 * VS];
    for (uint64_t i = 0; i < 8; i++)
        keys[i] = i + 1;
    obl_shard_stats st;
    CHECK(obl_shard_get(s, 8, keys, vout, found) == OBL_OK); /* calibrates */
    obl_shard_get_stats(s, &st);
    /* b accesses a shard against a scan of its whole store: 10 and 1.5 times */
    double b = (double)st.last_b, cap = (double)s->cap_s;
    CHECK(second_engine(s, 8, 1.0, 10.0 * b / cap, keys, vout, found) ==
          OBL_SHARD_ENGINE_PER_REQUEST);
    CHECK(second_engine(s, 8, 1.0, 1.5 * b / cap, keys, vout, found) ==
          OBL_SHARD_ENGINE_SCAN);
    obl_shard_destroy(s);
}

static void measured_choice(void)
{
    obl_shard_params p = params(200, 2, OBL_SHARD_ENGINES_BOTH, 1);
    obl_shard *s = NULL;
    CHECK(obl_shard_create(&s, &p) == OBL_OK);
    if (!s)
        return;
    uint64_t keys[40], found[40];
    unsigned char vout[40 * VS];
    for (uint64_t i = 0; i < 40; i++)
        keys[i] = i + 1;
    obl_shard_stats st;
    CHECK(obl_shard_get(s, 40, keys, vout, found) == OBL_OK); /* calibrates */
    memset(s->seen, 0, sizeof s->seen);
    shard_costs zero = {0};
    s->cost = zero; /* both estimates 0: the omaps win the tie */
    size_t sizes[2] = {40, 30};
    for (int k = 0; k < 2; k++) {
        CHECK(obl_shard_get(s, sizes[k], keys, vout, found) == OBL_OK);
        obl_shard_get_stats(s, &st);
        CHECK(st.last_engine == OBL_SHARD_ENGINE_PER_REQUEST);
    }
    CHECK(obl_shard_get(s, 40, keys, vout, found) == OBL_OK);
    obl_shard_get_stats(s, &st);
    CHECK(st.last_engine == OBL_SHARD_ENGINE_SCAN && st.est_per_request_us > 0);
    CHECK(shard_observed(s, 40, OBL_SHARD_ENGINE_SCAN) >= 0);
    /* the control: a size never measured takes the model's choice */
    CHECK(shard_observed(s, 35, OBL_SHARD_ENGINE_PER_REQUEST) < 0);
    CHECK(obl_shard_get(s, 35, keys, vout, found) == OBL_OK);
    obl_shard_get_stats(s, &st);
    CHECK(st.last_engine == OBL_SHARD_ENGINE_PER_REQUEST);
    obl_shard_destroy(s);
}

/* The measured choice after an engine was measured badly once (the scan's
 * second batch under a burst of load: 1000 us against the omaps' 100),
 * then 2x faster than the omaps (50 us) for `batches` batches: the
 * engine of the last batch, and in *rechecks the batches the slower
 * engine took after the choice came back to the scan. */
static int recheck_scenario(obl_shard *s, int off, int batches, int *rechecks)
{
    const size_t B = 64;
    memset(s->seen, 0, sizeof s->seen);
    s->seen_next = 0;
    s->recheck_off = off;
    shard_observe(s, B, OBL_SHARD_ENGINE_PER_REQUEST, 100); /* the model's choice */
    CHECK(shard_pick_scan(s, B, 1, 1)); /* then the other engine, once */
    shard_observe(s, B, OBL_SHARD_ENGINE_SCAN, 1000);
    int scan = 0, back = 0;
    *rechecks = 0;
    for (int k = 0; k < batches; k++) {
        scan = shard_pick_scan(s, B, 1, 1);
        back |= scan;
        *rechecks += back && !scan;
        shard_observe(s, B, scan ? OBL_SHARD_ENGINE_SCAN : OBL_SHARD_ENGINE_PER_REQUEST,
                      scan ? 50 : 100);
    }
    s->recheck_off = 0;
    return scan;
}

/* An engine measured badly once is measured again: within 5 batches the
 * choice is back on the faster scan, and in 300 batches the slower
 * engine is measured again at most 8 times (the gap doubles). The
 * control, with no re-measurement, stays on the omaps. */
static void recheck_choice(void)
{
    obl_shard_params p = params(200, 2, OBL_SHARD_ENGINES_BOTH, 1);
    obl_shard *s = NULL;
    CHECK(obl_shard_create(&s, &p) == OBL_OK);
    if (!s)
        return;
    int rechecks = 0;
    CHECK(recheck_scenario(s, 0, 5, &rechecks) == 1);
    CHECK(recheck_scenario(s, 0, 300, &rechecks) == 1);
    CHECK(rechecks >= 3 && rechecks <= 8);
    printf("  re-measured: back on the scan within 5 batches, %d checks of the omaps in 300\n",
           rechecks);
    CHECK(recheck_scenario(s, 1, 300, &rechecks) == 0); /* the control */
    obl_shard_destroy(s);
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_shard");
    bad_input();
    const size_t small[] = {1, 2, 7, 16, 33};
    const size_t big[] = {1000, 4096, 1u << 16};
    unsigned Ss[] = {1, 2, 3, 15, 64};
    for (unsigned e = 0; e <= 2; e++) {
        for (size_t i = 0; i < 5; i++) {
            if (T.ct && Ss[i] > 3)
                continue;
            stream(T.ct ? 64 : 200, Ss[i], e, small, 5, T.ct ? 60 : 180, T.ct ? 4 : 12);
            if (!T.ct) /* a universe above the capacity: FULL events */
                stream(100, Ss[i], e, small, 5, 160, 12);
        }
        one_shard(e);
        extreme_keys(e);
        alloc_failure(e);
    }
    measured_choice();
    explore_near_only();
    recheck_choice();
    for (force_parts = 2; force_parts <= 3; force_parts++) /* gets in sub-batches */
        stream(T.ct ? 64 : 200, force_parts, OBL_SHARD_ENGINES_PER_REQUEST, small, 5,
               T.ct ? 60 : 180, T.ct ? 8 : 16);
    force_parts = 0;
    if (T.ct) { /* the pool's threads under memcheck too */
        ct_threads = 2;
        stream(64, 3, 0, small, 5, 60, 4);
        stream(64, 1, 2, small, 5, 60, 4);
        force_parts = 2; /* the sub-batches' balancers on two threads */
        stream(64, 2, OBL_SHARD_ENGINES_PER_REQUEST, small, 5, 60, 4);
        force_parts = 0;
    }
    if (!T.ct && !SHARD_SANITIZE) { /* large batches, both engines */
        stream(1u << 15, 15, 0, big, 3, 1u << 15, 3);
        stream(1u << 14, 1, OBL_SHARD_ENGINES_SCAN, big + 2, 1, 1u << 14, 2);
    }
    if (SHARD_SANITIZE) /* -O0 with sanitizers: up to 4K */
        stream(1u << 12, 3, 0, big, 2, 1u << 12, 2);
    return test_done("test_shard");
}
