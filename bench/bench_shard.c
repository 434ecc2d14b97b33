/* SPDX-License-Identifier: MIT */
/*
 * Benchmark types `sharded` (REPORT type UnorderedMap, implementation
 * obl_sharded) and `batched` (obl_batched: the same map with one shard):
 * the batched oblivious map of obl/shard.h in the public harness's sharded
 * workload. Capacity N * 5/4, N entries built from N distinct random pairs
 * (obl_shard_build), then batches of B gets, each with 80% keys present and
 * 20% absent (ids N .. N * 5/4), in shuffled order and fresh per batch.
 * One repetition:
 *   Initialization_time_us  obl_shard_build with the batch size B as the
 *                           hint (expected_batch): with --engines 0 (AUTO)
 *                           the cost model's timing and the choice of the
 *                           store, the partition, the shards' builds; with
 *                           3 (both stores) the calibration runs in the
 *                           untimed first batch, at the map's first get
 *   Get_latency_us          per batch (the harness's definition): the mean
 *                           over ceil(Q / B) batches after SH_WARMUP
 *                           untimed ones (the calibration at the first, the
 *                           engine choice settling: docs/shard.md);
 *                           Get_throughput_qps per query
 *   Get_burst_latency_us    the answers alone (balancer both ways and the
 *                           shards; obl_shard_stats) and their throughput;
 *   Get_writeback_latency_us the writes after the answers: none in a get
 *                           batch, so 0 (nothing is deferred)
 *   Memory_kb               resident memory growth from before the build
 *                           to after the timed batches (the harness's
 *                           meaning: the batches' kept working memory
 *                           counts); Allocated_kb and Bytes_per_entry what
 *                           the map holds through its allocator then
 *   Parts                   sub-batches of the last batch (obl_shard_stats)
 *   Engine                  the engine of the last batch (1 per-request,
 *                           2 scan); Est_*_us the two costs it was chosen
 *                           by (measured times of earlier batches, else
 *                           the cost model's estimates);
 *                           Balance_us, Shard_us: the batches' split;
 *                           Cpu_us: CPU time per batch, all threads
 *   Baseline_get_latency_us the plain hash map (baselines/plain_hashmap.h)
 *                           with the same pairs answering the same batches
 *                           one key after another, per batch; and its q/s
 * Results are checked: found flags and values of every answer.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <obl/shard.h>

#include "bench_hashmap.h"
#include "common/cores.h"

enum { X_SHARDS, X_BATCH, X_THREADS, X_ENGINE, X_FILL };

typedef struct sh_state {
    unsigned char *keys, *vals; /* N present pairs, then N/4 absent keys */
    uint64_t absent;
} sh_state;

static uint64_t sh_cap(uint64_t n) { return n + n / 4 + 1; }

/* Untimed batches before the timed ones: a two-store map's choice for a
 * batch size settles in its first 7 (the model's engine, the other, four
 * of the faster, the other again; docs/shard.md, "Cost model"). */
#define SH_WARMUP 7u

/* Rough bytes: both stores (about 300 B/entry at 8/56) and the workload. */
static double sh_bytes(const bench_params *p)
{
    double kv = (double)(p->key_bytes + p->value_bytes);
    return (double)sh_cap(p->n) * (3.0 * kv + 200.0) + 6.0 * (double)p->extra[X_BATCH] * kv;
}

static int sh_check(const bench_params *p, char *msg, size_t len)
{
    if (p->key_bytes > OBL_SHARD_MAX_KEY_SIZE || p->value_bytes > OBL_SHARD_MAX_VALUE_SIZE) {
        snprintf(msg, len, "key <= %u and value <= %u bytes", OBL_SHARD_MAX_KEY_SIZE,
                 OBL_SHARD_MAX_VALUE_SIZE);
        return 1;
    }
    if (p->key_bytes < 8 && (double)sh_cap(p->n) > (double)(UINT64_C(1) << (8 * p->key_bytes))) {
        snprintf(msg, len, "N * 5/4 keys do not fit in %" PRIu64 "-byte keys", p->key_bytes);
        return 1;
    }
    if (p->extra[X_SHARDS] > sh_cap(p->n)) {
        snprintf(msg, len, "more shards than capacity");
        return 1;
    }
    return bench_check_memory(p, sh_bytes(p), 1.0, msg, len);
}

static void sh_teardown(void *st)
{
    sh_state *s = (sh_state *)st;
    if (!s)
        return;
    free(s->keys);
    free(s->vals);
    free(s);
}

static void *sh_setup(const bench_case *c)
{
    size_t kb = (size_t)c->p.key_bytes, vb = (size_t)c->p.value_bytes;
    uint64_t n = c->p.n, tot = n + n / 4 + 1;
    sh_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->absent = tot - n;
    s->keys = malloc(tot * kb);
    s->vals = malloc(n * vb);
    if (!s->keys || !s->vals) {
        sh_teardown(s);
        return NULL;
    }
    for (uint64_t i = 0; i < tot; i++)
        bench_make_key(s->keys + i * kb, kb, i, c->p.seed);
    bench_rng r;
    bench_rng_seed(&r, c->p.seed * 7 + 3);
    for (size_t i = 0; i < n * vb; i++)
        s->vals[i] = (unsigned char)bench_rng_next(&r);
    return s;
}

/* The ids of one batch: 80% present (0 .. N-1), 20% absent, shuffled. */
static void sh_batch_ids(bench_rng *r, uint64_t *ids, size_t B, uint64_t n, uint64_t absent)
{
    size_t hits = B * 4 / 5;
    for (size_t i = 0; i < B; i++)
        ids[i] = i < hits ? bench_rng_below(r, n) : n + bench_rng_below(r, absent);
    for (size_t i = B; i > 1; i--) {
        size_t j = (size_t)bench_rng_below(r, i);
        uint64_t t = ids[i - 1];
        ids[i - 1] = ids[j];
        ids[j] = t;
    }
}

/* Answers of a batch against the pairs: 0 if all right. */
static int sh_verify(const sh_state *s, const bench_params *p, const uint64_t *ids, size_t B,
                     const unsigned char *out, const uint64_t *found)
{
    size_t vb = (size_t)p->value_bytes;
    int bad = 0;
    for (size_t i = 0; i < B; i++) {
        int present = ids[i] < p->n;
        bad |= found[i] != (uint64_t)present;
        if (present)
            bad |= memcmp(out + i * vb, s->vals + ids[i] * vb, vb) != 0;
    }
    return bad;
}

/* The plain hash map on the same batches, one get after another. */
static int sh_baseline(bench_case *c, const sh_state *s, const uint64_t *ids, size_t nbat,
                       size_t B, unsigned char *kbuf, unsigned char *out)
{
    size_t kb = (size_t)c->p.key_bytes, vb = (size_t)c->p.value_bytes;
    plain_hashmap_params hp = {.key_size = kb, .value_size = vb, .capacity = (size_t)c->p.n,
                               .seed = c->p.seed + c->rep, .alloc = NULL};
    plain_hashmap *h = NULL;
    if (plain_hashmap_create(&h, &hp) != OBL_OK)
        return 1;
    int failed = 0;
    for (uint64_t i = 0; i < c->p.n; i++)
        failed |= plain_hashmap_put(h, s->keys + i * kb, s->vals + i * vb, NULL) != OBL_OK;
    uint64_t hits = 0, want = 0, total = 0;
    for (size_t t = 0; t < nbat; t++) {
        for (size_t i = 0; i < B; i++)
            memcpy(kbuf + i * kb, s->keys + ids[t * B + i] * kb, kb);
        uint64_t t0 = bench_now_ns();
        for (size_t i = 0; i < B; i++)
            hits += (uint64_t)plain_hashmap_get(h, kbuf + i * kb, out + i * vb);
        total += bench_now_ns() - t0;
        for (size_t i = 0; i < B; i++)
            want += ids[t * B + i] < c->p.n;
    }
    failed |= hits != want;
    double us = (double)total / 1000.0 / (double)nbat;
    bench_record(c, "Baseline_get_latency_us", us);
    bench_record(c, "Baseline_get_throughput_qps", (double)B / us * 1e6);
    plain_hashmap_destroy(h);
    return failed;
}

/* CPU time of the process, all threads (us): beside the wall-clock times,
 * a figure that other processes on the machine disturb less. */
static double sh_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The batches: SH_WARMUP untimed, then nbat timed; records the metrics. */
static int sh_batches(bench_case *c, obl_shard *m, const sh_state *s, const uint64_t *ids,
                      size_t nbat, size_t B, unsigned char *kbuf, unsigned char *out,
                      uint64_t *found)
{
    size_t kb = (size_t)c->p.key_bytes;
    int failed = 0;
    double total = 0, burst = 0, wb = 0, bal = 0, sh = 0, cpu = 0;
    obl_shard_stats st = {0};
    for (size_t t = 0; t < SH_WARMUP + nbat; t++) {
        const uint64_t *bi = ids + t * B; /* fresh keys, the untimed ones too */
        for (size_t i = 0; i < B; i++)
            memcpy(kbuf + i * kb, s->keys + bi[i] * kb, kb);
        double c0 = sh_cpu_us();
        uint64_t t0 = bench_now_ns();
        failed |= obl_shard_get(m, B, kbuf, out, found) != OBL_OK;
        uint64_t t1 = bench_now_ns();
        double c1 = sh_cpu_us();
        failed |= sh_verify(s, &c->p, bi, B, out, found);
        if (t < SH_WARMUP)
            continue;
        obl_shard_get_stats(m, &st);
        total += (double)(t1 - t0) / 1000.0;
        cpu += c1 - c0;
        burst += st.last_balance_us + st.last_shard_us;
        wb += st.last_writeback_us;
        bal += st.last_balance_us;
        sh += st.last_shard_us;
    }
    double k = (double)nbat;
    bench_record(c, "Get_latency_us", total / k);
    bench_record(c, "Get_throughput_qps", (double)B * k / total * 1e6);
    bench_record(c, "Get_burst_latency_us", burst / k);
    bench_record(c, "Get_burst_throughput_qps", (double)B * k / burst * 1e6);
    bench_record(c, "Get_writeback_latency_us", wb / k);
    bench_record(c, "Engine", (double)st.last_engine);
    bench_record(c, "Parts", (double)st.last_parts);
    bench_record(c, "Shard_batch_b", (double)st.last_b);
    bench_record(c, "Balance_us", bal / k);
    bench_record(c, "Shard_us", sh / k);
    bench_record(c, "Est_per_request_us", st.est_per_request_us);
    bench_record(c, "Est_scan_us", st.est_scan_us);
    bench_record(c, "Cpu_us", cpu / k);
    return failed;
}

static int sh_run_with(bench_case *c, void *state, unsigned shards)
{
    const sh_state *s = (const sh_state *)state;
    size_t kb = (size_t)c->p.key_bytes, vb = (size_t)c->p.value_bytes;
    size_t B = (size_t)c->p.extra[X_BATCH];
    size_t nbat = (size_t)((c->p.queries + B - 1) / B);
    bench_counter cnt = {0};
    obl_allocator al = bench_counting_allocator(&cnt);
    obl_shard_params sp = {0};
    sp.capacity = sh_cap(c->p.n);
    sp.key_size = kb;
    sp.value_size = vb;
    sp.shards = shards;
    sp.threads = (uint32_t)c->p.extra[X_THREADS];
    sp.engines = (uint32_t)c->p.extra[X_ENGINE];
    sp.expected_batch = B; /* the hint: AUTO keeps the store for this B */
    sp.use_seed = 1;
    sp.seed = c->p.seed * 31 + c->rep;
    sp.alloc = &al;
    uint64_t *ids = malloc((SH_WARMUP + nbat) * B * 8), *found = malloc(B * 8);
    unsigned char *kbuf = malloc(B * kb), *out = malloc(B * vb);
    obl_shard *m = NULL;
    int failed = !ids || !found || !kbuf || !out;
    bench_rng r;
    bench_rng_seed(&r, c->p.seed * 131 + c->rep);
    for (size_t t = 0; !failed && t < SH_WARMUP + nbat; t++) /* the untimed ones first */
        sh_batch_ids(&r, ids + t * B, B, c->p.n, s->absent);
    bench_build b;
    bench_build_start(&b);
    obl_err e = failed ? OBL_ERR_NOMEM : obl_shard_build(&m, &sp, s->keys, s->vals, c->p.n);
    if (e != OBL_OK) {
        fprintf(stderr, "obl-bench: %s: build of N=%" PRIu64 " failed: %s\n", c->type->name,
                c->p.n, obl_err_name(e));
        failed = 1;
    } else {
        bench_build_done(c, &b);
        failed |= sh_batches(c, m, s, ids, nbat, B, kbuf, out, found);
        bench_record_memory(c, obl_shard_memory_bytes(m), &b);
        obl_shard_destroy(m);
        failed |= sh_baseline(c, s, ids + SH_WARMUP * B, nbat, B, kbuf, out); /* the timed */
    }
    free(ids);
    free(found);
    free(kbuf);
    free(out);
    return bench_rep_status(c, failed, &cnt);
}

static int sharded_run(bench_case *c, void *state)
{
    return sh_run_with(c, state, (unsigned)c->p.extra[X_SHARDS]);
}

static int batched_run(bench_case *c, void *state)
{
    return sh_run_with(c, state, 1);
}

/* The CPUs obl-bench may run on: the library's own count (the pool's T = 0). */
static unsigned sh_cores(void) { return obl_cores(); }

static void sh_add(bench_plan *pl, const bench_type *t, uint64_t n, uint64_t kb, uint64_t vb,
                   uint64_t S, uint64_t B, uint64_t engines)
{
    uint64_t extra[5] = {S, B, 0, engines, 80};
    bench_params p = {.n = n, .key_bytes = kb, .value_bytes = vb};
    p.extra[X_BATCH] = B;
    double q = (double)(t->default_queries > B ? t->default_queries : B) + SH_WARMUP * B;
    double secs = (double)(t->default_reps + 1) * ((double)n * 3e-6 + q * 4e-6);
    bench_plan_add(pl, t, n, kb, vb, extra, sh_bytes(&p), secs);
}

/* Default: 8/56 at N = 2^10, 2^12, 2^16, 2^20, B = 1K and 64K (not at
 * 2^10) with S = cores; the peers' S = 15, B = 1K at 2^14, 2^16, 2^18 (and
 * 8/48 at 2^14, 2^16); at 2^20 also S = 15, 8/8 and 32/32. These take the
 * default creation (engines 0, AUTO, the batch size as the hint: one
 * store). The crossover: both stores (3) and each engine alone (1, 2)
 * against B (1K, 4K, 8K, 64K at 2^20) and against N (B = 4K).
 * --large (N = 2^22): B = 1K .. 1M, both S, the three key/value sizes. */
static void sharded_plan(bench_plan *pl, uint64_t n)
{
    extern const bench_type bench_sharded;
    const bench_type *t = &bench_sharded;
    uint64_t S = sh_cores();
    static const uint64_t kv[3][2] = {{8, 56}, {8, 8}, {32, 32}};
    static const uint64_t Bs[5] = {1024, 4096, 8192, 65536, 1u << 20};
    if (n == (1u << 10) || n == (1u << 12) || n == (1u << 16) || n == (1u << 20)) {
        sh_add(pl, t, n, 8, 56, S, 1024, 0);
        if (n > (1u << 10))
            sh_add(pl, t, n, 8, 56, S, 65536, 0);
        for (uint64_t e = 1; e <= 3; e++) /* the crossover against N */
            sh_add(pl, t, n, 8, 56, S, 4096, e);
    }
    /* the peers' sharded maps' workload (15 shards, batches of 1K; olabs
     * stores 56-byte values, Signal 48), at the sizes they run */
    if (n == (1u << 14) || n == (1u << 16) || n == (1u << 18))
        sh_add(pl, t, n, 8, 56, 15, 1024, 0);
    if (n == (1u << 14) || n == (1u << 16))
        sh_add(pl, t, n, 8, 48, 15, 1024, 0);
    if (n == (1u << 20)) {
        sh_add(pl, t, n, 8, 56, 15, 65536, 0);
        sh_add(pl, t, n, 8, 8, S, 65536, 0);
        sh_add(pl, t, n, 32, 32, S, 65536, 0);
        for (uint64_t e = 1; e <= 3; e++) { /* the crossover against B */
            sh_add(pl, t, n, 8, 56, S, 8192, e);
            sh_add(pl, t, n, 8, 56, S, 1024, e);
            sh_add(pl, t, n, 8, 56, S, 65536, e);
        }
    }
    if (n == (1u << 22))
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < 5; i++) {
                sh_add(pl, t, n, kv[k][0], kv[k][1], S, Bs[i], 0);
                sh_add(pl, t, n, kv[k][0], kv[k][1], 15, Bs[i], 0);
            }
}

/* Default: 8/56 at N = 2^12, 2^16, 2^20, B = 1K and 64K; --large (2^22):
 * every B up to 1M and the three key/value sizes. */
static void batched_plan(bench_plan *pl, uint64_t n)
{
    extern const bench_type bench_batched;
    const bench_type *t = &bench_batched;
    static const uint64_t kv[3][2] = {{8, 56}, {8, 8}, {32, 32}};
    static const uint64_t Bs[5] = {1024, 4096, 8192, 65536, 1u << 20};
    if (n == (1u << 12) || n == (1u << 16) || n == (1u << 20)) {
        sh_add(pl, t, n, 8, 56, 1, 1024, 0);
        sh_add(pl, t, n, 8, 56, 1, 65536, 0);
    }
    if (n == (1u << 22))
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < 5; i++)
                sh_add(pl, t, n, kv[k][0], kv[k][1], 1, Bs[i], 0);
}

#define SH_FLAGS(S_DEF, S_MIN, S_MAX)                                                     \
    {{"--shards", "Shards", S_DEF, S_MIN, S_MAX, "shards S"},                             \
     {"--batch", "Batch_size", 4096, 1, OBL_SHARD_MAX_BATCH, "requests per batch B"},     \
     {"--threads", "Threads", 0, 0, 1024,                                                 \
      "worker threads T (0: the CPUs this process may run on)"},                          \
     {"--engines", "Engines", 0, 0, 3,                                                    \
      "0: the default creation (the store the cost model picks for B); 1: per-request "   \
      "only; 2: scan only; 3: both stores, the cost model chooses per batch"},            \
     {"--fill-pct", "fill", 80, 80, 80, "N entries at capacity N * 5/4 (the only fill)"}}

static const bench_extra_flag sharded_flags[5] = SH_FLAGS(15, 1, OBL_SHARD_MAX_SHARDS);
static const bench_extra_flag batched_flags[5] = SH_FLAGS(1, 1, 1);

const bench_type bench_sharded = {
    .name = "sharded",
    .report_type = "UnorderedMap",
    .impl = "obl_sharded",
    .summary = "sharded oblivious map answering batches of B gets on S shards (obl/shard.h): build of N pairs at capacity N*5/4, batches of 80% hits / 20% misses",
    .default_key_bytes = 8,
    .default_value_bytes = 56,
    .default_queries = 16384,
    .default_reps = 2,
    .extra = sharded_flags,
    .nextra = 5,
    .check = sh_check,
    .setup = sh_setup,
    .run = sharded_run,
    .teardown = sh_teardown,
    .plan = sharded_plan,
};

const bench_type bench_batched = {
    .name = "batched",
    .report_type = "UnorderedMap",
    .impl = "obl_batched",
    .summary = "batched oblivious map (obl/shard.h with one shard, every thread on it): batches of B gets, the sharded workload",
    .default_key_bytes = 8,
    .default_value_bytes = 56,
    .default_queries = 16384,
    .default_reps = 2,
    .extra = batched_flags,
    .nextra = 5,
    .check = sh_check,
    .setup = sh_setup,
    .run = batched_run,
    .teardown = sh_teardown,
    .plan = batched_plan,
};
