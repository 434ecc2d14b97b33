/* SPDX-License-Identifier: MIT */
/*
 * Edge cases of the sharded map (obl/shard.h) beside test_shard.c, each a
 * sub-test against the plain model (shard_model.h):
 *   batch_sizes  B at every power of two and its neighbours (1 .. 4097),
 *                S = 1, 2, 3, 15, 64, each engine set, mixed and get batches;
 *   empty        a map created empty (gets, erases, puts into it) and
 *                shards left empty (every stored key in shard 0);
 *   full_shard   shard 0 filled to its capacity one new key at a time: the
 *                next new key is FULL with the map unchanged; updates of a
 *                full shard and an erase with a new key in one batch fit;
 *   full_swap    the same with the new key before the erased one in key
 *                order (the write-back applies erases before puts);
 *   bad_batches  invalid batches (B = 0, B too large, NULL arrays) and
 *                parameters (each bound, overflowing capacity): an error,
 *                and the map equals the model after each; ops other than
 *                PUT and ERASE answered as gets, changing nothing;
 *   alloc_puts   obl_shard_put / obl_shard_erase with every allocation
 *                failing in turn, batches that grow the arenas: NOMEM and
 *                the map unchanged, or the batch applied;
 *   map_trace    with the scan store alone and T = 1, the whole batch path
 *                (balancer both ways, the scan, the write-back) of two maps
 *                in the same state has equal traces for batches of the same
 *                B and different requests (control: B + 1 differs);
 *   threads      a few batches of each kind on T = 2 and 3 threads (the
 *                ct build runs this one under helgrind, tests.cmake).
 * With --ct the keys, values and ops of every batch are secret for memcheck
 * and sizes stay small.
 */
#include <obl/shard.h>

#include "common/secret.h"
#include "common/trace.h"
#include "shard/shard_map.h"
#include "shard/shard_model.h"
#include "shard/shard_trace.h"
#include "testutil.h"

#define KS 8
#define VS 24

static test_rng R;

/* The arrays of one batch of B requests, in one block. */
typedef struct {
    size_t B;
    uint64_t *ops, *keys, *found;
    unsigned char *vin, *vout;
} req_set;

static req_set req_new(size_t B)
{
    req_set q = {B, NULL, NULL, NULL, NULL, NULL};
    unsigned char *a = calloc(B, 3 * 8 + 2 * VS);
    if (!a)
        abort();
    q.ops = (uint64_t *)a;
    q.keys = q.ops + B;
    q.found = q.keys + B;
    q.vin = a + 24 * B;
    q.vout = q.vin + B * VS;
    return q;
}

static void req_free(req_set *q) { free(q->ops); }

/* Random requests over keys 1 .. universe: op GET (kind 0), PUT (1),
 * ERASE (2) or any of them (3); fresh values. */
static void req_fill(req_set *q, int kind, uint64_t universe)
{
    for (size_t i = 0; i < q->B; i++) {
        q->keys[i] = 1 + test_rng_below(&R, universe);
        q->ops[i] = kind == 3 ? test_rng_below(&R, 3) : (uint64_t)kind;
        test_rng_fill(&R, q->vin + i * VS, VS);
    }
}

/* Runs q on s (a get batch when !writes) with its inputs secret under
 * --ct; on success checks the answers against the model's state before
 * the batch and applies the writes to it. Returns the map's error. */
static obl_err run_req(obl_shard *s, model *m, req_set *q, int writes)
{
    size_t B = q->B;
    if (T.ct) {
        OBL_SECRET(q->ops, B * 8);
        OBL_SECRET(q->keys, B * 8);
        OBL_SECRET(q->vin, B * VS);
    }
    obl_err e = writes ? obl_shard_batch(s, B, q->ops, q->keys, q->vin, q->vout, q->found)
                       : obl_shard_get(s, B, q->keys, q->vout, q->found);
    OBL_DECLASSIFY(q->ops, B * 8);
    OBL_DECLASSIFY(q->keys, B * 8);
    OBL_DECLASSIFY(q->vin, B * VS);
    OBL_DECLASSIFY(q->vout, B * VS);
    OBL_DECLASSIFY(q->found, B * 8);
    if (e != OBL_OK)
        return e;
    static const unsigned char zero[VS];
    size_t bad = 0;
    for (size_t i = 0; i < B; i++) {
        long p = model_find(m, q->keys[i]);
        bad += q->found[i] != (uint64_t)(p >= 0);
        bad += memcmp(q->vout + i * VS, p >= 0 ? m->v + (size_t)p * VS : zero, VS) != 0;
    }
    CHECK_EQ_U64(bad, 0);
    for (size_t i = 0; writes && i < B; i++)
        model_write(m, q->ops[i], q->keys[i], q->vin + i * VS);
    return e;
}

/* A get batch of keys 1 .. universe and every model key: s equals m. */
static void check_same(obl_shard *s, model *m, uint64_t universe)
{
    req_set q = req_new(universe + m->n);
    for (size_t i = 0; i < universe; i++)
        q.keys[i] = 1 + i;
    memcpy(q.keys + universe, m->k, m->n * 8);
    CHECK(run_req(s, m, &q, 0) == OBL_OK);
    req_free(&q);
}

/* Each model key and keys 1 .. 4 in batches of one: s equals m (for a
 * map whose keys lie in one shard, more than b of which in one batch
 * would be the balancer's capacity event). */
static void check_each(obl_shard *s, model *m)
{
    req_set q = req_new(1);
    for (size_t i = 0; i < m->n + 4; i++) {
        q.keys[0] = i < m->n ? m->k[i] : 1 + i - m->n;
        CHECK(run_req(s, m, &q, 0) == OBL_OK);
    }
    req_free(&q);
}

static obl_shard_params params(uint64_t cap, unsigned S, unsigned engines, unsigned threads)
{
    return (obl_shard_params){.capacity = cap, .key_size = KS, .value_size = VS, .shards = S,
                              .threads = T.ct ? 1 : threads, .engines = engines,
                              .use_seed = 1, .seed = T.seed};
}

/* A map built from n of keys 1, 3, 5, ... with random values, and its model. */
static obl_shard *built(const obl_shard_params *p, size_t n, model *m)
{
    *m = model_new((size_t)p->capacity, VS);
    for (size_t i = 0; i < n; i++) {
        m->k[i] = 1 + 2 * i;
        test_rng_fill(&R, m->v + i * VS, VS);
    }
    m->n = n;
    obl_shard *s = NULL;
    CHECK(obl_shard_build(&s, p, m->k, m->v, n) == OBL_OK);
    return s;
}

/* Keys of shard `want` of s (by its PRF), from `from` on. */
static size_t keys_of_shard(const obl_shard *s, unsigned want, uint64_t from, uint64_t *out,
                            size_t n)
{
    size_t got = 0;
    for (uint64_t k = from; got < n && k < from + 1000000; k++) {
        uint64_t sh = shard_route_shard_of(&s->rt, (const unsigned char *)&k);
        OBL_DECLASSIFY(&sh, sizeof sh);
        if (sh == want)
            out[got++] = k;
    }
    return got;
}

static const unsigned SHARDS[5] = {1, 2, 3, 15, 64};

static void batch_sizes(void)
{
    /* every 2^k - 1, 2^k, 2^k + 1 up to 2^kmax + 1 */
    unsigned kmax = T.ct ? 5 : 12;
    size_t Bs[3 * 13], nB = 0;
    for (unsigned k = 0; k <= kmax; k++)
        for (int d = -1; d <= 1; d++)
            if ((1u << k) + d > 0 && (nB == 0 || Bs[nB - 1] != (1u << k) + (size_t)d))
                Bs[nB++] = (1u << k) + (size_t)d;
    uint64_t cap = T.ct ? 64 : 600, universe = cap * 5 / 6;
    for (unsigned e = 0; e <= 2; e++)
        for (unsigned si = 0; si < 5; si++) {
            if (T.ct && SHARDS[si] > 3)
                continue;
            obl_shard_params p = params(cap, SHARDS[si], e, 3);
            model m;
            obl_shard *s = built(&p, (size_t)cap / 3, &m);
            /* every B on three of the fifteen maps, each map on every fifth B */
            for (size_t i = (e + si) % 5; s && i < nB; i += T.ct ? 1 : 5) {
                req_set q = req_new(Bs[i]);
                int kind = (int)(i / 5 + e) % 2 ? 3 : 0;
                req_fill(&q, kind, universe);
                obl_err err = run_req(s, &m, &q, kind != 0);
                CHECK(err == OBL_OK);
                if (err != OBL_OK)
                    fprintf(stderr, "  S %u engines %u B %zu: %s\n", SHARDS[si], e, Bs[i],
                            obl_err_name(err));
                req_free(&q);
            }
            if (s)
                check_same(s, &m, universe);
            obl_shard_destroy(s);
            model_free(&m);
        }
}

static void empty(void)
{
    for (unsigned e = 0; e <= 2; e++)
        for (unsigned S = 1; S <= 3; S += 2) {
            obl_shard_params p = params(90, S, e, 2);
            obl_shard *s = NULL;
            CHECK(obl_shard_create(&s, &p) == OBL_OK);
            if (!s)
                continue;
            model m = model_new(90, VS);
            req_set q = req_new(20);
            for (int kind = 0; kind <= 2; kind++) { /* gets, erases, gets */
                req_fill(&q, kind == 1 ? 2 : 0, 60);
                CHECK(run_req(s, &m, &q, kind == 1) == OBL_OK);
                CHECK(m.n == 0);
            }
            /* every stored key in shard 0: shards 1 and 2 stay empty */
            uint64_t k0[30];
            CHECK(keys_of_shard(s, 0, 1, k0, 30) == 30);
            for (size_t i = 0; i < 20; i++) {
                q.keys[i] = k0[i];
                q.ops[i] = OBL_OMAP_PUT;
            }
            CHECK(run_req(s, &m, &q, 1) == OBL_OK);
            for (int it = 0; it < 3; it++) { /* gets, mixed, gets over all shards */
                req_fill(&q, it == 1 ? 3 : 0, 60);
                for (size_t i = 0; i < 20; i += 3)
                    q.keys[i] = k0[test_rng_below(&R, 30)];
                CHECK(run_req(s, &m, &q, it == 1) == OBL_OK);
            }
            req_free(&q);
            q = req_new(m.n + 1); /* erase everything (and one absent key) */
            for (size_t i = 0; i <= m.n; i++) {
                q.keys[i] = i < m.n ? m.k[i] : 61;
                q.ops[i] = OBL_OMAP_ERASE;
            }
            CHECK(run_req(s, &m, &q, 1) == OBL_OK);
            CHECK(m.n == 0);
            check_same(s, &m, 60);
            req_free(&q);
            model_free(&m);
            obl_shard_destroy(s);
        }
}

/* One batch of B = n of (op, key) on s, against m: its error. */
static obl_err one_batch(obl_shard *s, model *m, size_t n, const uint64_t *ops,
                         const uint64_t *keys)
{
    req_set q = req_new(n);
    for (size_t i = 0; i < n; i++) {
        q.ops[i] = ops[i];
        q.keys[i] = keys[i];
        test_rng_fill(&R, q.vin + i * VS, VS);
    }
    obl_err e = run_req(s, m, &q, 1);
    req_free(&q);
    return e;
}

/* A map of 3 shards (engines e) whose shard 0 is filled to its capacity
 * cs one new key at a time, from keys of shard 0 from 10^6 on (k0: cs + 2
 * of them); lo: two keys of shard 0 below them. Checks that exactly cs
 * fit and the next is FULL with the map unchanged. */
static obl_shard *full_map(unsigned e, model *m, uint64_t **k0, uint64_t lo[2], size_t *cs)
{
    obl_shard_params p = params(T.ct ? 12 : 40, 3, e, 2);
    obl_shard *s = NULL;
    CHECK(obl_shard_create(&s, &p) == OBL_OK);
    if (!s)
        return NULL;
    obl_shard_stats st;
    obl_shard_get_stats(s, &st);
    *cs = (size_t)st.shard_capacity;
    *m = model_new(*cs + 8, VS);
    *k0 = calloc(*cs + 2, 8);
    CHECK(keys_of_shard(s, 0, 1000000, *k0, *cs + 2) == *cs + 2);
    CHECK(keys_of_shard(s, 0, 1, lo, 2) == 2 && lo[1] < (*k0)[0]);
    uint64_t put = OBL_OMAP_PUT;
    size_t i = 0;
    obl_err err = OBL_OK;
    for (; i < *cs + 2 && (err = one_batch(s, m, 1, &put, *k0 + i)) == OBL_OK; i++)
        ;
    CHECK_EQ_U64(i, *cs);
    CHECK(err == OBL_ERR_FULL);
    check_each(s, m);
    return s;
}

/* An erase and a new key in one batch of a full shard: the count stays at
 * cs, so it must fit and be applied. 1 if it was. */
static int erase_and_put(obl_shard *s, model *m, unsigned e, uint64_t erased, uint64_t added)
{
    uint64_t ops[2] = {OBL_OMAP_ERASE, OBL_OMAP_PUT}, keys[2] = {erased, added};
    obl_err err = one_batch(s, m, 2, ops, keys);
    CHECK(err == OBL_OK);
    if (err != OBL_OK)
        fprintf(stderr, "  engines %u: erase %" PRIu64 " + put %" PRIu64 " in a full shard: %s\n",
                e, erased, added, obl_err_name(err));
    long before = T.failures;
    check_each(s, m);
    return err == OBL_OK && T.failures == before;
}

static void full_shard(void)
{
    for (unsigned e = 0; e <= 2; e++) {
        model m;
        uint64_t *k0 = NULL, lo[2], put = OBL_OMAP_PUT;
        size_t cs = 0;
        obl_shard *s = full_map(e, &m, &k0, lo, &cs);
        if (s) {
            uint64_t ops2[2] = {put, put}; /* updates of stored keys fit */
            CHECK(one_batch(s, &m, 2, ops2, k0) == OBL_OK);
            /* the erased key before the new one in the shard's key order */
            erase_and_put(s, &m, e, k0[0], k0[cs]);
            CHECK(one_batch(s, &m, 1, &put, &lo[1]) == OBL_ERR_FULL); /* full again */
            check_each(s, &m);
        }
        free(k0);
        model_free(&m);
        obl_shard_destroy(s);
    }
}

/* The new key before the erased one in the shard's key order. A known gap
 * (tests.cmake: WILL_FAIL): with the omaps kept, each shard's write-back
 * applies its writes in key order, so the omap, at its capacity, refuses
 * the put before the erase frees its entry: FULL, with the erase applied. */
static void full_swap(void)
{
    for (unsigned e = 0; e <= 2; e++) {
        model m;
        uint64_t *k0 = NULL, lo[2];
        size_t cs = 0;
        obl_shard *s = full_map(e, &m, &k0, lo, &cs);
        if (s && !erase_and_put(s, &m, e, k0[cs - 1], lo[0]))
            fprintf(stderr, "  engines %u: the map changed on error\n", e);
        free(k0);
        model_free(&m);
        obl_shard_destroy(s);
    }
}

/* Invalid batches: each an INVALID_ARG error, the map unchanged. */
static void bad_batch_calls(void)
{
    obl_shard_params p = params(60, 3, OBL_SHARD_ENGINES_BOTH, 2);
    model m;
    obl_shard *s = built(&p, 20, &m);
    if (!s)
        return;
    uint64_t k[2] = {1, 2}, ops[2] = {OBL_OMAP_PUT, OBL_OMAP_ERASE}, f[2];
    unsigned char v[2 * VS] = {0}, out[2 * VS];
    size_t big = OBL_SHARD_MAX_BATCH + 1;
    obl_err got[] = {
        obl_shard_get(s, 0, k, out, f),
        obl_shard_get(s, big, k, out, f),
        obl_shard_get(s, 1, k, NULL, f),
        obl_shard_get(s, 1, k, out, NULL),
        obl_shard_batch(s, 0, ops, k, v, out, f),
        obl_shard_batch(s, big, ops, k, v, out, f),
        obl_shard_batch(s, 2, NULL, k, v, out, f),
        obl_shard_batch(s, 2, ops, NULL, v, out, f),
        obl_shard_batch(NULL, 2, ops, k, v, out, f),
        obl_shard_put(s, 0, k, v, f),
        obl_shard_put(s, big, k, v, f),
        obl_shard_put(s, 1, NULL, v, f),
        obl_shard_erase(s, 0, k, f),
        obl_shard_erase(s, big, k, f),
        obl_shard_erase(s, 1, NULL, f),
        obl_shard_erase(NULL, 1, k, f),
    };
    for (size_t i = 0; i < sizeof got / sizeof got[0]; i++) {
        CHECK(got[i] == OBL_ERR_INVALID_ARG);
        if (got[i] != OBL_ERR_INVALID_ARG)
            fprintf(stderr, "  bad batch %zu: %s\n", i, obl_err_name(got[i]));
    }
    check_same(s, &m, 50); /* nothing changed */
    obl_shard_stats st;
    obl_shard_get_stats(s, &st);
    CHECK(st.batches == 1); /* check_same's alone */
    obl_shard_destroy(s);
    model_free(&m);
}

/* Ops other than PUT and ERASE behave as GET (obl/omap.h), in every engine. */
static void odd_ops(void)
{
    for (unsigned e = 0; e <= 2; e++) {
        model m;
        obl_shard_params p = params(60, 2, e, 2);
        obl_shard *s = built(&p, 20, &m);
        req_set q = req_new(6);
        req_fill(&q, 1, 50);
        const uint64_t odd[3] = {3, 7, UINT64_MAX};
        for (size_t i = 0; i < 6; i++)
            q.ops[i] = odd[i % 3];
        CHECK(s && run_req(s, &m, &q, 1) == OBL_OK);
        if (s)
            check_same(s, &m, 50);
        req_free(&q);
        model_free(&m);
        obl_shard_destroy(s);
    }
}

/* Parameters: each bound and one past it, in create and build; the out
 * pointer NULL after each error. */
static void bad_params(void)
{
    uint64_t k[1] = {1};
    unsigned char v[VS] = {0};
    obl_shard_params q;
    obl_shard *t = NULL;
#define BAD_PARAM(field, value, err)                                                  \
    do {                                                                              \
        q = params(60, 3, 0, 2);                                                      \
        q.field = value;                                                              \
        t = (obl_shard *)&q;                                                          \
        CHECK(obl_shard_create(&t, &q) == (err) && t == NULL);                        \
        t = (obl_shard *)&q;                                                          \
        CHECK(obl_shard_build(&t, &q, k, v, 1) == (err) && t == NULL);                \
    } while (0)
    BAD_PARAM(key_size, 0, OBL_ERR_INVALID_ARG);
    BAD_PARAM(value_size, 0, OBL_ERR_INVALID_ARG);
    BAD_PARAM(value_size, OBL_SHARD_MAX_VALUE_SIZE + 1, OBL_ERR_INVALID_ARG);
    BAD_PARAM(shards, OBL_SHARD_MAX_SHARDS + 1, OBL_ERR_INVALID_ARG);
    BAD_PARAM(threads, 1u << 20, OBL_ERR_INVALID_ARG);
    BAD_PARAM(lambda, 1000, OBL_ERR_INVALID_ARG);
    BAD_PARAM(capacity, 2, OBL_ERR_INVALID_ARG);               /* < S */
    BAD_PARAM(capacity, (uint64_t)1 << 62, OBL_ERR_TOO_LARGE); /* sizes overflow */
#undef BAD_PARAM
    q = params(60, 3, 0, 2);
    CHECK(obl_shard_build(&t, &q, k, NULL, 1) == OBL_ERR_INVALID_ARG && t == NULL);
    CHECK(obl_shard_build(&t, &q, NULL, NULL, 0) == OBL_OK && t != NULL); /* empty */
    obl_shard_destroy(t);
}

static void bad_batches(void)
{
    bad_batch_calls();
    odd_ops();
    bad_params();
}

/* B puts (kind 1) or erases (2) through obl_shard_put / _erase with the
 * allocator failing after 0, 1, ... allocations: NOMEM and the map as it
 * was, until one goes through and is applied. */
static void failing_writes(obl_shard *s, model *m, test_failing_alloc *fa, size_t B, int kind)
{
    obl_err e = OBL_ERR_NOMEM;
    long budget = 0;
    for (; e == OBL_ERR_NOMEM; budget++) {
        req_set q = req_new(B);
        req_fill(&q, kind, 50);
        if (T.ct) {
            OBL_SECRET(q.keys, B * 8);
            OBL_SECRET(q.vin, B * VS);
        }
        fa->budget = budget;
        e = kind == 1 ? obl_shard_put(s, B, q.keys, q.vin, q.found)
                      : obl_shard_erase(s, B, q.keys, q.found);
        fa->budget = -1;
        OBL_DECLASSIFY(q.keys, B * 8);
        OBL_DECLASSIFY(q.vin, B * VS);
        OBL_DECLASSIFY(q.found, B * 8);
        CHECK(e == OBL_OK || e == OBL_ERR_NOMEM);
        if (e == OBL_OK) { /* found flags against the state before */
            size_t bad = 0;
            for (size_t i = 0; i < B; i++)
                bad += q.found[i] != (uint64_t)(model_find(m, q.keys[i]) >= 0);
            CHECK_EQ_U64(bad, 0);
            for (size_t i = 0; i < B; i++)
                model_write(m, q.ops[i], q.keys[i], q.vin + i * VS);
        }
        check_same(s, m, 50);
        req_free(&q);
    }
    CHECK(budget > 1); /* at least the first allocation failed */
}

static void alloc_puts(void)
{
    for (unsigned e = 0; e <= 2; e++)
        for (unsigned S = 1; S <= 2; S++) {
            test_failing_alloc fa = {-1, 0, 0};
            obl_allocator a = {test_fa_alloc, test_fa_free, &fa};
            obl_shard_params p = params(60, S, e, 1);
            p.alloc = &a;
            model m;
            obl_shard *s = built(&p, 10, &m);
            if (!s)
                continue;
            const size_t Bs[] = {4, 8, 30}; /* growing: the arenas grow too */
            for (size_t i = 0; i < 3; i++) {
                failing_writes(s, &m, &fa, Bs[i], 1);
                failing_writes(s, &m, &fa, Bs[i], 2);
            }
            obl_shard_destroy(s);
            CHECK(fa.live == 0);
            model_free(&m);
        }
}

/* The trace of one batch (kind 0 get, 3 mixed) of B on a fresh map with
 * the scan store alone, T = 1, built from the same pairs; requests from
 * seed 11 + set (shard_trace.h). */
static void trace_batch(obl_trace *t, unsigned S, size_t B, int kind, int set)
{
    obl_shard_params p = params(128, S, OBL_SHARD_ENGINES_SCAN, 1);
    p.threads = 1; /* the trace sink is the calling thread's */
    test_rng keep = R;
    test_rng_seed(&R, 5); /* the same stored pairs in every map */
    model m;
    obl_shard *s = built(&p, 70, &m);
    test_rng_seed(&R, 11 + (uint64_t)set);
    req_set q = req_new(B);
    req_fill(&q, kind, 200);
    R = keep;
    if (s) {
        obl_trace_begin(t);
        CHECK(run_req(s, &m, &q, kind != 0) == OBL_OK);
        obl_trace_end();
    }
    req_free(&q);
    model_free(&m);
    obl_shard_destroy(s);
}

/* Set 1: other keys, ops and values than set 0. */
static void map_trace(void) { shard_trace_check(trace_batch, 2, T.ct ? 9 : 40); }

static void threads(void)
{
    for (unsigned e = 0; e <= 2; e++)
        for (unsigned S = 1; S <= 3; S++) {
            obl_shard_params p = params(80, S, e, 2 + S % 2);
            if (T.ct)
                p.threads = 2; /* memcheck serialises them */
            model m;
            obl_shard *s = built(&p, 30, &m);
            for (int kind = 0; s && kind <= 3; kind++) {
                req_set q = req_new(T.ct ? 12 : 48);
                req_fill(&q, kind, 70);
                CHECK(run_req(s, &m, &q, kind != 0) == OBL_OK);
                req_free(&q);
            }
            if (s)
                check_same(s, &m, 70);
            obl_shard_destroy(s);
            model_free(&m);
        }
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_shard_edges");
    static const test_case cases[] = {
        TEST_CASE(batch_sizes),
        TEST_CASE(empty),
        TEST_CASE(full_shard),
        TEST_CASE(full_swap),
        TEST_CASE(bad_batches),
        TEST_CASE(alloc_puts),
        TEST_CASE(map_trace),
        TEST_CASE(threads),
    };
    return test_run("test_shard_edges", cases, sizeof(cases) / sizeof(cases[0]), &R);
}
