/* SPDX-License-Identifier: MIT */
/*
 * Benchmark types `lb` (REPORT type LOADBALANCE, implementation obl: the
 * oblivious load balancer of obl/lb.h) and `lb-baseline` (implementation
 * baseline_lb: a plain balancer that hashes, buckets by shard, dedupes with
 * a hash table and routes back through the slot each request got).
 *
 * N is the batch size B (reported as B, settable as --batch). Workload:
 * batches of B requests with uniformly random 64-bit keys (distinct but for
 * chance) and half gets, half puts, generated before timing; a repetition
 * routes max(1, Q / B) batches. Between the two directions a model shard
 * engine answers every entry in place, untimed: value = key ^ a constant,
 * found = the key's low bit, so every answer routed back is checked.
 *
 * Metrics: Latency_us per batch, both directions (the public harness's
 * meaning), Throughput_qps = B / Latency_us, each direction as its own
 * latency, the per-core throughput, the shard batch b, memory. The obl type
 * also times, in the same repetition and untimed for the main metrics, the
 * primitives the balancer runs at its sizes (the column sorts, the
 * compactions and expansions): Split_*_us are that DERIVED decomposition,
 * Split_routing_us the rest (PRP, scans, copies).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <obl/lb.h>
#include <obl/sort.h>

#include "harness.h"

#define LB_ANSWER_MASK 0x5a5a5a5a5a5a5a5aULL
#define LB_MAX_BATCHES 8 /* distinct batches generated, cycled */

static const bench_extra_flag lb_flags[] = {
    {"--shards", "Shards", 15, 1, 1024, "shards S"},
    {"--threads", "Threads", 1, 1, 64, "threads the balancer uses"},
};

typedef struct lb_work {
    size_t nb;           /* batches per repetition */
    size_t ngen;         /* distinct batches generated */
    obl_lb_req *batches; /* ngen * B */
} lb_work;

static int lb_check(const bench_params *p, char *msg, size_t len)
{
    if (p->key_bytes != 8 || p->value_bytes != 8) {
        snprintf(msg, len, "the load balancer moves 8-byte keys and values (--key-bytes 8 "
                 "--value-bytes 8)");
        return 1;
    }
    if (p->n > (UINT64_C(1) << 24)) {
        snprintf(msg, len, "B must be at most 2^24, not %" PRIu64, p->n);
        return 1;
    }
    double b = (double)p->n / (double)p->extra[0] * 1.2 + 64;
    double need = (double)p->n * 200.0 + b * (double)p->extra[0] * 120.0;
    return bench_check_memory(p, need, 0.5, msg, len);
}

static void *lb_setup(const bench_case *c)
{
    const size_t B = (size_t)c->p.n;
    lb_work *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->nb = c->p.queries / B ? (size_t)(c->p.queries / B) : 1;
    w->ngen = w->nb < LB_MAX_BATCHES ? w->nb : LB_MAX_BATCHES;
    w->batches = malloc(w->ngen * B * sizeof *w->batches);
    if (!w->batches) {
        free(w);
        return NULL;
    }
    bench_rng r;
    bench_rng_seed(&r, c->p.seed * 3 + 7);
    for (size_t i = 0; i < w->ngen * B; i++) {
        uint64_t k = bench_rng_next(&r);
        w->batches[i] = (obl_lb_req){k, bench_rng_next(&r), (uint32_t)(k >> 63), 0};
    }
    return w;
}

static void lb_teardown(void *state)
{
    lb_work *w = state;
    if (w)
        free(w->batches);
    free(w);
}

/* The model shard engine (untimed): answers every entry in place. */
static void lb_engine(obl_lb_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        e[i].value = e[i].key ^ LB_ANSWER_MASK;
        e[i].flags |= (uint32_t)(e[i].key & 1) * OBL_LB_FOUND;
    }
}

/* 0 if every request got the engine's answer for its key. */
static int lb_answers_wrong(const obl_lb_req *q, size_t B)
{
    int bad = 0;
    for (size_t i = 0; i < B; i++)
        bad |= q[i].value != (q[i].key ^ LB_ANSWER_MASK) || q[i].found != (q[i].key & 1);
    return bad;
}

/* Times the batches with route(ctx, q, e) and answer(ctx, e, q); records
 * the latencies and throughputs. Returns non-zero on an error or a wrong
 * answer. */
typedef int (*lb_route_fn)(void *ctx, const obl_lb_req *q, obl_lb_entry *e);
typedef int (*lb_answer_fn)(void *ctx, const obl_lb_entry *e, obl_lb_req *q);

static int lb_time(bench_case *c, const lb_work *w, void *ctx, lb_route_fn route,
                   lb_answer_fn answer, size_t nent, double *lat_us)
{
    const size_t B = (size_t)c->p.n;
    obl_lb_req *q = malloc(B * sizeof *q);
    obl_lb_entry *e = malloc(nent * sizeof *e);
    int failed = !q || !e;
    uint64_t tr = 0, ta = 0;
    for (size_t k = 0; k < w->nb && !failed; k++) {
        memcpy(q, w->batches + (k % w->ngen) * B, B * sizeof *q);
        uint64_t t0 = bench_now_ns();
        failed |= route(ctx, q, e);
        uint64_t t1 = bench_now_ns();
        lb_engine(e, nent);
        uint64_t t2 = bench_now_ns();
        failed |= answer(ctx, e, q);
        uint64_t t3 = bench_now_ns();
        tr += t1 - t0;
        ta += t3 - t2;
        failed |= lb_answers_wrong(q, B);
    }
    free(q);
    free(e);
    double nb = (double)w->nb, lat = (double)(tr + ta) / 1000.0 / nb;
    bench_record(c, "Latency_us", lat);
    bench_record(c, "Throughput_qps", (double)B / lat * 1e6);
    bench_record(c, "Throughput_per_core_qps",
                 (double)B / lat * 1e6 / (double)c->p.extra[1]);
    bench_record(c, "Route_latency_us", (double)tr / 1000.0 / nb);
    bench_record(c, "Answer_latency_us", (double)ta / 1000.0 / nb);
    *lat_us = lat;
    return failed;
}

static int lb_obl_route(void *ctx, const obl_lb_req *q, obl_lb_entry *e)
{
    return obl_lb_route(ctx, q, e) != OBL_OK;
}

static int lb_obl_answer(void *ctx, const obl_lb_entry *e, obl_lb_req *q)
{
    return obl_lb_answer(ctx, e, q) != OBL_OK;
}

/* The derived split: the primitives the balancer runs, at its sizes, on
 * throw-away data (docs/lb.md, "Where the time goes"). */
static void lb_split(bench_case *c, size_t b, double lat_us)
{
    const size_t B = (size_t)c->p.n, S = (size_t)c->p.extra[0], Sb = S * b;
    const unsigned T = (unsigned)c->p.extra[1];
    size_t N = 1, nmax = Sb > B ? Sb : B;
    while (N < B)
        N *= 2;
    const size_t words = 4 * (N > nmax ? N : nmax);
    uint64_t *buf = calloc(words + 8, 8);
    uint8_t *fl = malloc(nmax);
    if (!buf || !fl) {
        free(buf);
        free(fl);
        return;
    }
    for (size_t i = 0; i < nmax; i++)
        fl[i] = (uint8_t)(i % 3 != 0);
    for (size_t i = 0; i < words; i++)
        buf[i] = i * 0x9e3779b97f4a7c15ULL;
    uint64_t *cols[4] = {buf, buf + N, buf + 2 * N, buf + 3 * N};
    obl_sort_params p32 = {32, 8, T, NULL, NULL, NULL}, p16 = {16, 8, T, NULL, NULL, NULL};
    int err = 0;
    uint64_t t0 = bench_now_ns();
    err |= obl_sort_columns(cols, 4, N > B ? 2 : 1, N, T) != OBL_OK;
    err |= obl_sort_columns(cols, 2, 1, N, T) != OBL_OK;
    uint64_t t1 = bench_now_ns();
    err |= obl_compact(buf, B, fl, NULL, &p32) != OBL_OK;
    err |= obl_expand(buf, Sb, fl, &p32) != OBL_OK;
    err |= obl_compact(buf, Sb, fl, NULL, &p16) != OBL_OK;
    err |= obl_expand(buf, B, fl, &p16) != OBL_OK;
    uint64_t t2 = bench_now_ns();
    free(buf);
    free(fl);
    if (err)
        return;
    double sort = (double)(t1 - t0) / 1000.0, comp = (double)(t2 - t1) / 1000.0;
    bench_record(c, "Split_sort_us", sort);
    bench_record(c, "Split_compaction_us", comp);
    bench_record(c, "Split_routing_us", lat_us - sort - comp);
}

static int lb_run(bench_case *c, void *state)
{
    const lb_work *w = state;
    bench_counter cnt = {0};
    obl_allocator al = bench_counting_allocator(&cnt);
    obl_lb_params p = {(size_t)c->p.n, (unsigned)c->p.extra[0], 0, (unsigned)c->p.extra[1],
                       NULL, NULL, NULL, &al};
    bench_build bb;
    bench_build_start(&bb);
    obl_lb *lb = NULL;
    obl_err e = obl_lb_create(&lb, &p);
    if (e != OBL_OK) {
        fprintf(stderr, "obl-bench: lb: create: %s\n", obl_strerror(e));
        return 1;
    }
    bench_build_done(c, &bb);
    const size_t b = obl_lb_shard_batch(lb);
    double lat = 0;
    int failed = lb_time(c, w, lb, lb_obl_route, lb_obl_answer, b * p.shards, &lat);
    bench_record(c, "Shard_batch_entries", (double)b);
    bench_record_memory(c, obl_lb_memory_bytes(lb), &bb);
    obl_lb_destroy(lb);
    if (!failed)
        lb_split(c, b, lat);
    return bench_rep_status(c, failed, &cnt);
}

/* ------------------------------------------------ the plain balancer -- */

typedef struct plain_lb {
    size_t B, S, b, cap;     /* cap: table slots, a power of two >= 2B */
    uint64_t seed;
    uint64_t *tkey;          /* table: key, slot + 1 (0: empty) */
    uint32_t *tslot;
    uint32_t *slot_of;       /* per request: its entry's index */
    uint32_t *count;         /* per shard */
    uint32_t *used;          /* table slots in use, to clear them */
    size_t nused;
    size_t bytes;
} plain_lb;

static uint64_t plain_hash(uint64_t k, uint64_t seed)
{
    uint64_t z = k ^ seed; /* splitmix64's finaliser */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int plain_route(void *ctx, const obl_lb_req *q, obl_lb_entry *e)
{
    plain_lb *L = ctx;
    __extension__ typedef unsigned __int128 u128;
    memset(L->count, 0, L->S * sizeof *L->count);
    for (size_t j = 0; j < L->S * L->b; j++)
        e[j] = (obl_lb_entry){0, 0, OBL_LB_GET, 0};
    for (size_t i = 0; i < L->B; i++) {
        uint64_t h = plain_hash(q[i].key, L->seed), pos = h & (L->cap - 1);
        while (L->tslot[pos] && L->tkey[pos] != q[i].key)
            pos = (pos + 1) & (L->cap - 1);
        if (!L->tslot[pos]) { /* first request of this key */
            size_t s = (size_t)(((u128)h * L->S) >> 64);
            if (L->count[s] == L->b)
                return 1;
            size_t at = s * L->b + L->count[s]++;
            L->tkey[pos] = q[i].key;
            L->tslot[pos] = (uint32_t)at + 1;
            L->used[L->nused++] = (uint32_t)pos;
            e[at] = (obl_lb_entry){q[i].key, 0, OBL_LB_GET, OBL_LB_REAL};
        }
        size_t at = L->tslot[pos] - 1;
        L->slot_of[i] = (uint32_t)at;
        if (q[i].op == OBL_LB_PUT || q[i].op == OBL_LB_ERASE) { /* last write wins */
            e[at].op = q[i].op;
            e[at].value = q[i].op == OBL_LB_PUT ? q[i].value : 0;
        }
    }
    for (size_t u = 0; u < L->nused; u++)
        L->tslot[L->used[u]] = 0;
    L->nused = 0;
    return 0;
}

static int plain_answer(void *ctx, const obl_lb_entry *e, obl_lb_req *q)
{
    plain_lb *L = ctx;
    for (size_t i = 0; i < L->B; i++) {
        const obl_lb_entry *x = &e[L->slot_of[i]];
        q[i].value = x->value;
        q[i].found = (x->flags & OBL_LB_FOUND) != 0;
    }
    return 0;
}

static int plain_run(bench_case *c, void *state)
{
    const lb_work *w = state;
    bench_build bb;
    bench_build_start(&bb);
    plain_lb L = {0};
    L.B = (size_t)c->p.n;
    L.S = (size_t)c->p.extra[0];
    L.b = obl_lb_shard_batch_size(L.B, (unsigned)L.S, 40);
    L.cap = 1;
    while (L.cap < 2 * L.B)
        L.cap *= 2;
    L.seed = c->p.seed * 0x9e3779b97f4a7c15ULL + 1;
    L.tkey = malloc(L.cap * sizeof *L.tkey);
    L.tslot = calloc(L.cap, sizeof *L.tslot);
    L.slot_of = malloc(L.B * sizeof *L.slot_of);
    L.count = malloc(L.S * sizeof *L.count);
    L.used = malloc(L.B * sizeof *L.used);
    L.bytes = L.cap * 12 + L.B * 8 + L.S * 4;
    int failed = !L.tkey || !L.tslot || !L.slot_of || !L.count || !L.used;
    bench_build_done(c, &bb);
    double lat = 0;
    if (!failed)
        failed = lb_time(c, w, &L, plain_route, plain_answer, L.S * L.b, &lat);
    bench_record(c, "Shard_batch_entries", (double)L.b);
    bench_record_memory(c, L.bytes, &bb);
    free(L.tkey);
    free(L.tslot);
    free(L.slot_of);
    free(L.count);
    free(L.used);
    return failed;
}

/* ------------------------------------------------------------- plans -- */

/* B = 2^10 .. 2^18 by default, up to 2^20 with --large; S = 15 (the
 * public harness's setting) and S = the number of cores; threads = cores. */
static void lb_plan_type(bench_plan *pl, uint64_t n, const bench_type *t, double ns_per_req)
{
    const uint64_t big = UINT64_C(1) << 18, top = UINT64_C(1) << 20;
    if (n > top || (n > big && bench_plan_max_n(pl) <= top))
        return;
    long cores = bench_get_env()->cores;
    uint64_t T = cores > 0 ? (uint64_t)cores : 1;
    if (T > 64)
        T = 64;
    uint64_t shards[2] = {15, T < 2 ? 2 : T};
    for (int i = 0; i < (shards[1] == 15 ? 1 : 2); i++) {
        uint64_t extra[2] = {shards[i], T};
        double q = (double)(t->default_queries > n ? t->default_queries : n);
        double secs = (double)(t->default_reps + 1) * q * ns_per_req * 1e-9 * 2.5;
        double mem = (double)n * 200.0 + (double)n * 1.3 * 120.0 + 65536;
        bench_plan_add(pl, t, n, 8, 8, extra, mem, secs);
    }
}

static void lb_plan(bench_plan *pl, uint64_t n)
{
    extern const bench_type bench_lb;
    lb_plan_type(pl, n, &bench_lb, 400.0);
}

static void plain_plan(bench_plan *pl, uint64_t n)
{
    extern const bench_type bench_lb_baseline;
    lb_plan_type(pl, n, &bench_lb_baseline, 40.0);
}

/* The two types differ only in name, implementation and run. */
#define LB_TYPE(name_, impl_, summary_, run_, plan_)                                               \
    {                                                                                              \
        .name = name_, .report_type = "LOADBALANCE", .impl = impl_, .summary = summary_,           \
        .default_key_bytes = 8, .default_value_bytes = 8, .default_queries = 1 << 20,              \
        .default_reps = 5, .extra = lb_flags, .nextra = 2, .check = lb_check, .setup = lb_setup,   \
        .run = run_, .teardown = lb_teardown, .plan = plan_, .n_name = "B", .n_flag = "--batch",   \
    }

const bench_type bench_lb =
    LB_TYPE("lb", "obl",
            "oblivious load balancer (obl/lb.h): batches of B requests routed to S shard "
            "batches of b entries and answered back",
            lb_run, lb_plan);

const bench_type bench_lb_baseline =
    LB_TYPE("lb-baseline", "baseline_lb",
            "non-oblivious load balancer: hash to a shard, dedupe with a hash table, route "
            "back by slot",
            plain_run, plain_plan);
