/*
 * Benchmark type `hashmap` (REPORT type UMAP, implementation
 * baseline_hashmap): the plain hash map of baselines/plain_hashmap.h, the
 * non-oblivious reference for the oblivious maps. One repetition, on a map
 * created with capacity N (as the oblivious maps are):
 *   Initialization_time_us  create + N puts of distinct random keys
 *   Read_latency_us         Q gets of present keys, shuffled (every key
 *                           equally often), Read_throughput_qps likewise
 *   Get_miss_latency_us     Q gets of absent keys
 *   Write_latency_us        Q puts that replace the value of present keys
 *   Erase_latency_us        E = min(Q, N/4) erases of distinct present keys
 *   Put_latency_us          the E keys put back: inserts of new keys
 * All keys and sequences are generated before timing and stored contiguously
 * in the order they are used, so that the timed loops touch only the map and
 * a sequential stream; get results are folded into a value the compiler
 * must keep. Latency is a phase's wall time over its operations.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "plain_hashmap.h"

typedef struct {
    size_t e;              /* erase/put-back count */
    unsigned char *keys;   /* N present keys, by id */
    unsigned char *hit;    /* Q present keys, shuffled */
    unsigned char *miss;   /* Q absent keys, shuffled */
    unsigned char *upd;    /* Q present keys, another shuffle */
    unsigned char *era;    /* E distinct present keys */
    unsigned char *pool;
} hashmap_state;

static uint64_t hashmap_erase_count(const bench_params *p)
{
    uint64_t e = p->n / 4;
    e = e < p->queries ? e : p->queries;
    return e ? e : 1;
}

/* Bytes of the table for n keys: power of two >= 4n/3 slots of 1+K+V. */
static double hashmap_table_bytes(uint64_t n, uint64_t kb, uint64_t vb)
{
    double cap = 8;
    while (cap / 4 * 3 < (double)n)
        cap *= 2;
    return cap * (double)(1 + kb + vb);
}

static double hashmap_workload_bytes(const bench_params *p)
{
    return (double)p->key_bytes * ((double)p->n + 3.0 * (double)p->queries +
                                   (double)hashmap_erase_count(p));
}

static int hashmap_check(const bench_params *p, char *msg, size_t len)
{
    /* N present and Q absent keys must be distinct K-byte strings */
    if (p->key_bytes < 8 &&
        (double)p->n + (double)p->queries > (double)(UINT64_C(1) << (8 * p->key_bytes))) {
        snprintf(msg, len, "N=%" PRIu64 " present and Q=%" PRIu64 " absent keys do not fit in %"
                 PRIu64 "-byte keys", p->n, p->queries, p->key_bytes);
        return 1;
    }
    double need = hashmap_table_bytes(p->n, p->key_bytes, p->value_bytes) + hashmap_workload_bytes(p);
    double have = (double)bench_get_env()->memory_kb * 1024.0;
    if (have > 0 && need > have) {
        snprintf(msg, len, "N=%" PRIu64 " needs %.0f MiB, the machine has %.0f MiB", p->n,
                 need / 1048576.0, have / 1048576.0);
        return 1;
    }
    return 0;
}

static void hashmap_teardown(void *state)
{
    hashmap_state *s = (hashmap_state *)state;
    if (!s)
        return;
    free(s->keys);
    free(s->hit);
    free(s->miss);
    free(s->upd);
    free(s->era);
    free(s->pool);
    free(s);
}

/* dst[i] = key(ids[i]) for i < count, with ids offset by `base`. */
static void hashmap_fill(unsigned char *dst, const uint64_t *ids, size_t count, size_t kb,
                         uint64_t base, uint64_t seed)
{
    for (size_t i = 0; i < count; i++)
        bench_make_key(dst + i * kb, kb, base + ids[i], seed);
}

static void *hashmap_setup(const bench_case *c)
{
    const bench_params *p = &c->p;
    size_t kb = (size_t)p->key_bytes, n = (size_t)p->n, q = (size_t)p->queries;
    hashmap_state *s = calloc(1, sizeof(*s));
    uint64_t *ids = malloc((n > q ? n : q) * sizeof(uint64_t));
    if (!s || !ids) {
        free(s);
        free(ids);
        return NULL;
    }
    s->e = (size_t)hashmap_erase_count(p);
    s->keys = malloc(n * kb);
    s->hit = malloc(q * kb);
    s->miss = malloc(q * kb);
    s->upd = malloc(q * kb);
    s->era = malloc(s->e * kb);
    s->pool = bench_value_pool(p->value_bytes, p->seed);
    if (!s->keys || !s->hit || !s->miss || !s->upd || !s->era || !s->pool) {
        free(ids);
        hashmap_teardown(s);
        return NULL;
    }
    uint64_t kseed = p->seed * 0x9e3779b97f4a7c15ULL + 17;
    for (size_t i = 0; i < n; i++)
        bench_make_key(s->keys + i * kb, kb, i, kseed);
    bench_shuffled_indices(ids, q, n, p->seed * 5 + 1);
    hashmap_fill(s->hit, ids, q, kb, 0, kseed);
    bench_shuffled_indices(ids, q, n, p->seed * 5 + 2);
    hashmap_fill(s->upd, ids, q, kb, 0, kseed);
    bench_shuffled_indices(ids, s->e, n, p->seed * 5 + 3); /* e <= n: distinct */
    hashmap_fill(s->era, ids, s->e, kb, 0, kseed);
    bench_shuffled_indices(ids, q, q, p->seed * 5 + 4); /* ids n .. n+q-1: absent */
    hashmap_fill(s->miss, ids, q, kb, n, kseed);
    free(ids);
    return s;
}

static int hashmap_run(bench_case *c, void *state)
{
    hashmap_state *s = (hashmap_state *)state;
    size_t kb = (size_t)c->p.key_bytes, vb = (size_t)c->p.value_bytes;
    uint64_t n = c->p.n, q = c->p.queries, e = s->e;
    bench_counter cnt = {0};
    obl_allocator al = bench_counting_allocator(&cnt);
    plain_hashmap_params hp = {.key_size = kb, .value_size = vb, .capacity = (size_t)n,
                               .seed = c->p.seed + c->rep, .alloc = &al};
    unsigned char *buf = malloc(vb);
    if (!buf)
        return 1;
    int failed = 0;

    size_t rss0 = bench_rss_bytes();
    uint64_t t0 = bench_now_ns();
    plain_hashmap *m = NULL;
    if (plain_hashmap_create(&m, &hp) != OBL_OK) {
        fprintf(stderr, "obl-bench: hashmap: cannot create N=%" PRIu64 "\n", n);
        free(buf);
        return 1;
    }
    for (uint64_t i = 0; i < n; i++)
        failed |= plain_hashmap_put(m, s->keys + i * kb, s->pool + (i % BENCH_POOL) * vb, NULL) != OBL_OK;
    uint64_t t1 = bench_now_ns();
    size_t rss1 = bench_rss_bytes();
    bench_record(c, "Initialization_time_us", (double)(t1 - t0) / 1000.0);
    size_t mem = plain_hashmap_memory_bytes(m);

    uint64_t found = 0, acc = 0;
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < q; i++) {
        found += (uint64_t)plain_hashmap_get(m, s->hit + i * kb, buf);
        acc += buf[0] ^ buf[vb - 1];
    }
    t1 = bench_now_ns();
    bench_consume(acc);
    failed |= found != q;
    bench_record(c, "Read_latency_us", bench_us_per_op(t0, t1, q));
    bench_record(c, "Read_throughput_qps", (double)q * 1e9 / (double)(t1 - t0));

    found = 0;
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < q; i++)
        found += (uint64_t)plain_hashmap_get(m, s->miss + i * kb, buf);
    t1 = bench_now_ns();
    failed |= found != 0;
    bench_record(c, "Get_miss_latency_us", bench_us_per_op(t0, t1, q));

    t0 = bench_now_ns();
    for (uint64_t i = 0; i < q; i++)
        failed |= plain_hashmap_put(m, s->upd + i * kb, s->pool + (i % BENCH_POOL) * vb, NULL) != OBL_OK;
    t1 = bench_now_ns();
    bench_record(c, "Write_latency_us", bench_us_per_op(t0, t1, q));
    bench_record(c, "Write_throughput_qps", (double)q * 1e9 / (double)(t1 - t0));

    found = 0;
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < e; i++)
        found += (uint64_t)plain_hashmap_erase(m, s->era + i * kb);
    t1 = bench_now_ns();
    failed |= found != e || plain_hashmap_size(m) != n - e;
    bench_record(c, "Erase_latency_us", bench_us_per_op(t0, t1, e));

    t0 = bench_now_ns();
    for (uint64_t i = 0; i < e; i++)
        failed |= plain_hashmap_put(m, s->era + i * kb, s->pool + (i % BENCH_POOL) * vb, NULL) != OBL_OK;
    t1 = bench_now_ns();
    failed |= plain_hashmap_size(m) != n;
    bench_record(c, "Put_latency_us", bench_us_per_op(t0, t1, e));

    bench_record_memory(c, mem, rss0, rss1);
    plain_hashmap_destroy(m);
    free(buf);
    if (failed || cnt.live != 0) {
        fprintf(stderr, "obl-bench: hashmap: self-check failed (wrong hit/miss count or error)\n");
        return 1;
    }
    return 0;
}

static void hashmap_plan(bench_plan *pl, uint64_t n)
{
    extern const bench_type bench_hashmap;
    static const uint64_t kv[][2] = {{8, 8}, {8, 56}, {32, 32}};
    bench_params p = {.n = n, .queries = bench_hashmap.default_queries};
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
        p.key_bytes = kv[i][0];
        p.value_bytes = kv[i][1];
        double mem = hashmap_table_bytes(n, p.key_bytes, p.value_bytes) + hashmap_workload_bytes(&p);
        double reps = (double)(bench_hashmap.default_reps + 1);
        double ops = (double)n * 2 + 3.0 * (double)p.queries;
        double secs = reps * ops * 6e-8 + (double)p.queries * 3 * 5e-8;
        bench_plan_add(pl, &bench_hashmap, n, p.key_bytes, p.value_bytes, NULL, mem, secs);
    }
}

const bench_type bench_hashmap = {
    .name = "hashmap",
    .report_type = "UMAP",
    .impl = "baseline_hashmap",
    .summary = "non-oblivious linear-probing hash map (baselines/plain_hashmap.h): N puts, Q shuffled gets, misses, updates, erases",
    .default_key_bytes = 8,
    .default_value_bytes = 8,
    .default_queries = 500000,
    .default_reps = 5,
    .check = hashmap_check,
    .setup = hashmap_setup,
    .run = hashmap_run,
    .teardown = hashmap_teardown,
    .plan = hashmap_plan,
};
