/* SPDX-License-Identifier: MIT */
/*
 * The sharded map (obl/shard.h) with keys over 8 bytes, against the plain
 * model (shard_model.h, on key ids), each a sub-test:
 *   streams    keys of 12, 16, 32 and 64 bytes, S = 1, 2, 3, 15, each
 *              engine set: get, put, erase and mixed batches with
 *              duplicates and misses, keys that share all words but the
 *              last, all keys in one shard; the map equals the model after;
 *   collide    the balancer's fingerprints zeroed (shard_route.test_fp =
 *              1), so that every two keys of a shard collide: the split's
 *              exact check must find it and sort by all key words (the
 *              answers right); the negative control (test_fp = 2, the
 *              collisions ignored) must give wrong answers or errors;
 *   map_trace  with the scan store alone and T = 1, the whole batch path
 *              with 32-byte keys has equal traces for batches of the same
 *              B with other keys, many duplicates, or all keys in one
 *              shard (control: B + 1 differs).
 * With --ct the keys, values and ops are secret for memcheck and sizes
 * stay small.
 */
#include <obl/shard.h>

#include "common/secret.h"
#include "common/trace.h"
#include "shard/shard_map.h"
#include "shard/shard_model.h"
#include "shard/shard_trace.h"
#include "testutil.h"

#define VS 32
#define MAXKS 64

/* The sanitizers' build (-O0): no large batches. */
#if defined(__SANITIZE_ADDRESS__)
#define KEYS_SANITIZE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KEYS_SANITIZE 1
#endif
#endif
#ifndef KEYS_SANITIZE
#define KEYS_SANITIZE 0
#endif

static test_rng R;

/* Key id's bytes (ks of them): every word but the last shared by the ids
 * of one group of four, the last (whole or in part) the id itself, so
 * that keys differ in their last word only (ids below 2^32). */
static void key_of(uint64_t id, size_t ks, unsigned char *out)
{
    size_t kw = (ks + 7) / 8, last = 8 * (kw - 1);
    for (size_t j = 0; j + 1 < kw; j++) {
        uint64_t w = (id >> 2) * 0x9E3779B97F4A7C15ull + j;
        memcpy(out + 8 * j, &w, 8);
    }
    memcpy(out + last, &id, ks - last);
}

/* One batch of B requests on key ids, and their key bytes. */
typedef struct {
    size_t B, ks;
    uint64_t *ops, *ids, *found;
    unsigned char *keys, *vin, *vout;
} req_set;

static req_set req_new(size_t B, size_t ks)
{
    req_set q = {B, ks, calloc(B, 8), calloc(B, 8), calloc(B, 8), calloc(B, ks),
                 calloc(B, VS), calloc(B, VS)};
    if (!q.ops || !q.ids || !q.found || !q.keys || !q.vin || !q.vout)
        abort();
    return q;
}

static void req_free(req_set *q)
{
    free(q->ops);
    free(q->ids);
    free(q->found);
    free(q->keys);
    free(q->vin);
    free(q->vout);
}

/* Ops by kind (0 get, 1 put, 2 erase, 3 any), ids from 1 .. universe (or
 * from pool, n ids, if given), fresh values. */
static void req_fill(req_set *q, int kind, uint64_t universe, const uint64_t *pool, size_t n)
{
    for (size_t i = 0; i < q->B; i++) {
        q->ids[i] = pool ? pool[test_rng_below(&R, n)] : 1 + test_rng_below(&R, universe);
        q->ops[i] = kind == 3 ? test_rng_below(&R, 3) : (uint64_t)kind;
        test_rng_fill(&R, q->vin + i * VS, VS);
        key_of(q->ids[i], q->ks, q->keys + i * q->ks);
    }
}

/* Runs q on s (a get batch when !writes), its inputs secret under --ct;
 * on success counts the answers that differ from the model's (*bad) and
 * applies the writes to the model. Returns the map's error. */
static obl_err run_req(obl_shard *s, model *m, req_set *q, int writes, size_t *bad)
{
    size_t B = q->B;
    if (T.ct) {
        OBL_SECRET(q->ops, B * 8);
        OBL_SECRET(q->keys, B * q->ks);
        OBL_SECRET(q->vin, B * VS);
    }
    obl_err e = writes ? obl_shard_batch(s, B, q->ops, q->keys, q->vin, q->vout, q->found)
                       : obl_shard_get(s, B, q->keys, q->vout, q->found);
    OBL_DECLASSIFY(q->ops, B * 8);
    OBL_DECLASSIFY(q->keys, B * q->ks);
    OBL_DECLASSIFY(q->vin, B * VS);
    OBL_DECLASSIFY(q->vout, B * VS);
    OBL_DECLASSIFY(q->found, B * 8);
    *bad = 0;
    if (e != OBL_OK)
        return e;
    static const unsigned char zero[VS];
    for (size_t i = 0; i < B; i++) {
        long p = model_find(m, q->ids[i]);
        *bad += q->found[i] != (uint64_t)(p >= 0);
        *bad += memcmp(q->vout + i * VS, p >= 0 ? m->v + (size_t)p * VS : zero, VS) != 0;
    }
    for (size_t i = 0; writes && i < B; i++)
        model_write(m, q->ops[i], q->ids[i], q->vin + i * VS);
    return e;
}

/* A get batch of ids 1 .. universe and every model id: the number of
 * answers that differ. */
static size_t diff_all(obl_shard *s, model *m, size_t ks, uint64_t universe)
{
    req_set q = req_new(universe + m->n, ks);
    for (size_t i = 0; i < q.B; i++) {
        q.ids[i] = i < universe ? 1 + i : m->k[i - universe];
        key_of(q.ids[i], ks, q.keys + i * ks);
    }
    size_t bad = 0;
    obl_err e = run_req(s, m, &q, 0, &bad);
    req_free(&q);
    return e == OBL_OK ? bad : q.B;
}

static obl_shard_params params(uint64_t cap, size_t ks, unsigned S, unsigned engines)
{
    obl_shard_params p = {0};
    p.capacity = cap;
    p.key_size = ks;
    p.value_size = VS;
    p.shards = S;
    p.threads = T.ct ? 1 : 2;
    p.engines = engines;
    p.use_seed = 1;
    p.seed = T.seed;
    if (T.ct) /* the map's randomness (its PRF key) is secret */
        OBL_SECRET(&p.seed, sizeof p.seed);
    return p;
}

/* A map built from n of ids 1, 3, 5, ... with random values, and its
 * model (room for ids up to cap). */
static obl_shard *built(const obl_shard_params *p, size_t n, model *m)
{
    *m = model_new((size_t)p->capacity + 8, VS);
    unsigned char *keys = calloc(n + 1, p->key_size);
    if (!keys)
        abort();
    for (size_t i = 0; i < n; i++) {
        m->k[i] = 1 + 2 * i;
        test_rng_fill(&R, m->v + i * VS, VS);
        key_of(m->k[i], p->key_size, keys + i * p->key_size);
    }
    m->n = n;
    if (T.ct) {
        OBL_SECRET(keys, n * p->key_size);
        OBL_SECRET(m->v, n * VS);
    }
    obl_shard *s = NULL;
    CHECK(obl_shard_build(&s, p, keys, m->v, n) == OBL_OK);
    OBL_DECLASSIFY(m->v, n * VS);
    free(keys);
    return s;
}

/* n ids of shard 0 of s (its balancer's PRF), from 1 on. */
static size_t ids_of_shard0(const obl_shard *s, size_t ks, uint64_t *out, size_t n)
{
    unsigned char key[MAXKS];
    size_t got = 0;
    for (uint64_t id = 1; got < n && id < 100000; id++) {
        key_of(id, ks, key);
        uint64_t sh = shard_route_shard_of(&s->rt, key);
        OBL_DECLASSIFY(&sh, sizeof sh); /* the test picks its keys */
        if (sh == 0)
            out[got++] = id;
    }
    return got;
}

/* A stream of batches on one map: each size of Bs, each kind, keys from a
 * universe of about twice the batch (duplicates, misses); then batches of
 * ids of shard 0 alone (fewer than b distinct ones: no capacity event). */
static void one_map(size_t ks, unsigned S, unsigned engines, const size_t *Bs, size_t nB)
{
    uint64_t cap = 600;
    obl_shard_params p = params(cap, ks, S, engines);
    model m;
    obl_shard *s = built(&p, 150, &m);
    if (!s) {
        model_free(&m);
        return;
    }
    size_t bad_total = 0;
    for (size_t bi = 0; bi < nB; bi++)
        for (int kind = 0; kind < 4; kind++) {
            req_set q = req_new(Bs[bi], ks);
            req_fill(&q, kind, 2 * Bs[bi] + 20 < 500 ? 2 * Bs[bi] + 20 : 500, NULL, 0);
            size_t bad;
            CHECK(run_req(s, &m, &q, kind != 0, &bad) == OBL_OK);
            bad_total += bad;
            req_free(&q);
        }
    uint64_t pool[8] = {0};
    size_t np = ids_of_shard0(s, ks, pool, 8);
    for (int kind = 3; kind >= 0; kind -= 3) {
        req_set q = req_new(T.ct ? 10 : 40, ks);
        req_fill(&q, kind, 0, pool, np);
        size_t bad;
        CHECK(run_req(s, &m, &q, kind != 0, &bad) == OBL_OK);
        bad_total += bad;
        req_free(&q);
    }
    bad_total += diff_all(s, &m, ks, 500);
    CHECK_EQ_U64(bad_total, 0);
    if (bad_total)
        fprintf(stderr, "  ks %zu S %u engines %u: %zu wrong answers\n", ks, S, engines,
                bad_total);
    obl_shard_destroy(s);
    model_free(&m);
}

static void streams(void)
{
    static const size_t ks_all[] = {12, 16, 32, 64}, S_all[] = {1, 2, 3, 15};
    static const size_t Bs[] = {1, 7, 33, 300}, Bs_ct[] = {1, 7, 20};
    for (size_t k = 0; k < 4; k++)
        for (size_t si = 0; si < 4; si++)
            for (unsigned e = 0; e <= 2; e++) {
                int small = T.ct || KEYS_SANITIZE; /* 16 at S = 2, 32 at S < 15 */
                if (small && (ks_all[k] == 12 || ks_all[k] == 64 || S_all[si] == 15 ||
                              (ks_all[k] == 16 && S_all[si] != 2)))
                    continue;
                one_map(ks_all[k], (unsigned)S_all[si], e, T.ct ? Bs_ct : Bs, T.ct ? 3 : 4);
            }
    if (!T.ct && !KEYS_SANITIZE) { /* one large batch: obl_sort's sizes, the scan's blocks */
        static const size_t big[] = {4096};
        one_map(32, 2, OBL_SHARD_ENGINES_SCAN, big, 1);
        one_map(16, 3, OBL_SHARD_ENGINES_BOTH, big, 1);
    }
}

/* Batches with many duplicates on a map whose balancer's fingerprints are
 * zeroed (test_fp 1 or 2): the wrong answers and errors in all. */
static size_t collide_run(size_t ks, unsigned S, unsigned engines, int test_fp)
{
    obl_shard_params p = params(400, ks, S, engines);
    model m;
    obl_shard *s = built(&p, 60, &m);
    if (!s) {
        model_free(&m);
        return 0;
    }
    s->rt.test_fp = test_fp;
    size_t wrong = 0;
    for (int it = 0; it < 8; it++) {
        req_set q = req_new(60, ks); /* the control needs some size to go wrong */
        req_fill(&q, it % 4, 40, NULL, 0); /* ids 1 .. 40: stored and absent */
        size_t bad;
        obl_err e = run_req(s, &m, &q, it % 4 != 0, &bad);
        wrong += bad + (e != OBL_OK);
        req_free(&q);
    }
    wrong += diff_all(s, &m, ks, 40);
    obl_shard_destroy(s);
    model_free(&m);
    return wrong;
}

static void collide(void)
{
    for (unsigned e = 1; e <= 2; e++)
        for (unsigned S = 1; S <= 3; S += 2) {
            CHECK_EQ_U64(collide_run(32, S, e, 1), 0);
            CHECK_EQ_U64(collide_run(16, S, e, 1), 0);
            /* the control: the same without the exact check goes wrong */
            CHECK(collide_run(32, S, e, 2) > 0);
        }
}

/* The trace of one batch (kind 0 get, 3 mixed) of B with 32-byte keys on
 * a fresh map with the scan store alone, T = 1, built from the same
 * pairs; requests from seed 11 + set (shard_trace.h) over the ids of
 * TRACE_UNIVERSE[set], or (0) ids of shard 0 alone. */
static const uint64_t TRACE_UNIVERSE[4] = {
    200, 200, /* set 1: other keys, ops, values */
    3,        /* set 2: duplicates, 3 ids */
    0,        /* set 3: all keys in shard 0 */
};

static void trace_batch(obl_trace *t, unsigned S, size_t B, int kind, int set)
{
    uint64_t universe = TRACE_UNIVERSE[set];
    obl_shard_params p = params(128, 32, S, OBL_SHARD_ENGINES_SCAN);
    p.threads = 1; /* the trace sink is the calling thread's */
    test_rng keep = R;
    test_rng_seed(&R, 5); /* the same stored pairs in every map */
    model m;
    obl_shard *s = built(&p, 70, &m);
    test_rng_seed(&R, 11 + (uint64_t)set);
    req_set q = req_new(B, 32);
    uint64_t pool[6] = {0};
    size_t np = s && !universe ? ids_of_shard0(s, 32, pool, 6) : 0;
    req_fill(&q, kind, universe, universe ? NULL : pool, np);
    R = keep;
    if (s) {
        size_t bad;
        obl_trace_begin(t);
        CHECK(run_req(s, &m, &q, kind != 0, &bad) == OBL_OK);
        obl_trace_end();
        CHECK_EQ_U64(bad, 0);
    }
    req_free(&q);
    model_free(&m);
    obl_shard_destroy(s);
}

static void map_trace(void) { shard_trace_check(trace_batch, 4, T.ct ? 9 : 40); }

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_shard_keys");
    static const test_case cases[] = {
        TEST_CASE(streams),
        TEST_CASE(collide),
        TEST_CASE(map_trace),
    };
    return test_run("test_shard_keys", cases, sizeof(cases) / sizeof(cases[0]), &R);
}
