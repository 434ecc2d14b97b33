/*
 * Benchmark type `umap` (REPORT type UMAP, implementation obl): the
 * oblivious map of obl/omap.h, created with capacity N at the default load
 * (80% of the slots at capacity, "fill 0.8"). One repetition:
 *   Initialization_time_us  obl_omap_build from N distinct random pairs
 *                           (hashing, placement and the ORAM's bulk build)
 *   Get_latency_us          Q gets of present keys, shuffled (every key
 *                           equally often); Get_throughput_qps likewise
 *   Get_miss_latency_us     Q gets of absent keys; Get_miss_throughput_qps
 *   Write_latency_us        Q puts that replace the value of present keys
 *   Erase_latency_us        E = min(Q, N/4) erases of distinct present keys
 *   Put_latency_us          the E keys put back: inserts of new keys
 *   Memory_kb, Bytes_per_entry  measured through the counting allocator
 * Every operation performs the same ORAM accesses, so the phases differ
 * only by noise; they are measured separately because the issue asks for
 * each. Results are checked (hit and miss counts, values of the hits).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <obl/omap.h>

#include "harness.h"

typedef struct {
    size_t e;
    unsigned char *keys, *vals; /* N pairs, by id */
    unsigned char *hit;         /* Q present keys, shuffled */
    uint64_t *hit_id;
    unsigned char *miss;        /* Q absent keys */
    unsigned char *upd;         /* Q present keys, another shuffle */
    unsigned char *era;         /* E distinct present keys */
    unsigned char *pool;
} umap_state;

static uint64_t umap_erase_count(const bench_params *p)
{
    uint64_t e = p->n / 4;
    e = e < p->queries ? e : p->queries;
    return e ? e : 1;
}

/* Rough size of the map: 2 * 1.25 N / 4 buckets of 8 + 4 (K + V) bytes in
 * a tree of twice as many slots, plus the build's temporary copy. */
static double umap_bytes(uint64_t n, uint64_t kb, uint64_t vb)
{
    double buckets = (double)n * 1.25 / 4.0 + 1;
    double bsz = 8.0 + 4.0 * (double)(kb + vb);
    return buckets * (bsz + 16) * 2.3 + buckets * bsz + (double)n * (kb + vb) * 2;
}

static int umap_check(const bench_params *p, char *msg, size_t len)
{
    if (p->key_bytes < 8 &&
        (double)p->n + (double)p->queries > (double)(UINT64_C(1) << (8 * p->key_bytes))) {
        snprintf(msg, len, "N=%" PRIu64 " present and Q=%" PRIu64 " absent keys do not fit in %"
                 PRIu64 "-byte keys", p->n, p->queries, p->key_bytes);
        return 1;
    }
    if (p->key_bytes > OBL_OMAP_MAX_KEY_SIZE || p->value_bytes > OBL_OMAP_MAX_VALUE_SIZE) {
        snprintf(msg, len, "umap: key <= %u and value <= %u bytes", OBL_OMAP_MAX_KEY_SIZE,
                 OBL_OMAP_MAX_VALUE_SIZE);
        return 1;
    }
    double need = umap_bytes(p->n, p->key_bytes, p->value_bytes);
    double have = (double)bench_get_env()->memory_kb * 1024.0;
    if (have > 0 && need > have) {
        snprintf(msg, len, "N=%" PRIu64 " needs %.0f MiB, the machine has %.0f MiB", p->n,
                 need / 1048576.0, have / 1048576.0);
        return 1;
    }
    return 0;
}

static void umap_teardown(void *state)
{
    umap_state *s = (umap_state *)state;
    if (!s)
        return;
    free(s->keys);
    free(s->vals);
    free(s->hit);
    free(s->hit_id);
    free(s->miss);
    free(s->upd);
    free(s->era);
    free(s->pool);
    free(s);
}

static void *umap_setup(const bench_case *c)
{
    const bench_params *p = &c->p;
    size_t kb = (size_t)p->key_bytes, vb = (size_t)p->value_bytes;
    size_t n = (size_t)p->n, q = (size_t)p->queries;
    umap_state *s = calloc(1, sizeof(*s));
    uint64_t *ids = malloc((n > q ? n : q) * sizeof(uint64_t));
    if (!s || !ids) {
        free(s);
        free(ids);
        return NULL;
    }
    s->e = (size_t)umap_erase_count(p);
    s->keys = malloc(n * kb);
    s->vals = malloc(n * vb);
    s->hit = malloc(q * kb);
    s->hit_id = malloc(q * sizeof(uint64_t));
    s->miss = malloc(q * kb);
    s->upd = malloc(q * kb);
    s->era = malloc(s->e * kb);
    s->pool = bench_value_pool(p->value_bytes, p->seed);
    if (!s->keys || !s->vals || !s->hit || !s->hit_id || !s->miss || !s->upd || !s->era ||
        !s->pool) {
        free(ids);
        umap_teardown(s);
        return NULL;
    }
    uint64_t kseed = p->seed * 0x9e3779b97f4a7c15ULL + 17;
    for (size_t i = 0; i < n; i++) {
        bench_make_key(s->keys + i * kb, kb, i, kseed);
        memcpy(s->vals + i * vb, s->pool + (i % BENCH_POOL) * vb, vb);
    }
    bench_shuffled_indices(s->hit_id, q, n, p->seed * 5 + 1);
    for (size_t i = 0; i < q; i++)
        memcpy(s->hit + i * kb, s->keys + s->hit_id[i] * kb, kb);
    bench_shuffled_indices(ids, q, n, p->seed * 5 + 2);
    for (size_t i = 0; i < q; i++)
        memcpy(s->upd + i * kb, s->keys + ids[i] * kb, kb);
    bench_shuffled_indices(ids, s->e, n, p->seed * 5 + 3);
    for (size_t i = 0; i < s->e; i++)
        memcpy(s->era + i * kb, s->keys + ids[i] * kb, kb);
    bench_shuffled_indices(ids, q, q, p->seed * 5 + 4);
    for (size_t i = 0; i < q; i++)
        bench_make_key(s->miss + i * kb, kb, n + ids[i], kseed);
    free(ids);
    return s;
}

static int umap_run(bench_case *c, void *state)
{
    umap_state *s = (umap_state *)state;
    size_t kb = (size_t)c->p.key_bytes, vb = (size_t)c->p.value_bytes;
    uint64_t n = c->p.n, q = c->p.queries, e = s->e;
    bench_counter cnt = {0};
    obl_allocator al = bench_counting_allocator(&cnt);
    obl_omap_params mp;
    memset(&mp, 0, sizeof(mp));
    mp.capacity = n;
    mp.key_size = kb;
    mp.value_size = vb;
    mp.use_seed = 1;
    mp.seed = c->p.seed * 31 + c->rep;
    mp.alloc = &al;
    unsigned char *buf = malloc(vb);
    if (!buf)
        return 1;
    int failed = 0;

    size_t rss0 = bench_rss_bytes();
    uint64_t t0 = bench_now_ns();
    obl_omap *m = NULL;
    obl_err err = obl_omap_build(&m, &mp, s->keys, s->vals, n);
    uint64_t t1 = bench_now_ns();
    size_t rss1 = bench_rss_bytes();
    if (err != OBL_OK) {
        fprintf(stderr, "obl-bench: umap: build of N=%" PRIu64 " failed: %s\n", n,
                obl_err_name(err));
        free(buf);
        return 1;
    }
    bench_record(c, "Initialization_time_us", (double)(t1 - t0) / 1000.0);
    size_t mem = obl_omap_memory_bytes(m);

    uint64_t found = 0, f, bad = 0;
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < q; i++) {
        failed |= obl_omap_get(m, s->hit + i * kb, buf, &f) != OBL_OK;
        found += f;
        bad |= (uint64_t)memcmp(buf, s->vals + s->hit_id[i] * vb, vb);
    }
    t1 = bench_now_ns();
    failed |= found != q || bad != 0;
    bench_record(c, "Get_latency_us", bench_us_per_op(t0, t1, q));
    bench_record(c, "Get_throughput_qps", (double)q * 1e9 / (double)(t1 - t0));

    found = 0;
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < q; i++) {
        failed |= obl_omap_get(m, s->miss + i * kb, buf, &f) != OBL_OK;
        found += f;
    }
    t1 = bench_now_ns();
    failed |= found != 0;
    bench_record(c, "Get_miss_latency_us", bench_us_per_op(t0, t1, q));
    bench_record(c, "Get_miss_throughput_qps", (double)q * 1e9 / (double)(t1 - t0));

    found = 0;
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < q; i++) {
        failed |= obl_omap_put(m, s->upd + i * kb, s->pool + (i % BENCH_POOL) * vb, &f) != OBL_OK;
        found += f;
    }
    t1 = bench_now_ns();
    failed |= found != q;
    bench_record(c, "Write_latency_us", bench_us_per_op(t0, t1, q));

    found = 0;
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < e; i++) {
        failed |= obl_omap_erase(m, s->era + i * kb, &f) != OBL_OK;
        found += f;
    }
    t1 = bench_now_ns();
    failed |= found != e;
    bench_record(c, "Erase_latency_us", bench_us_per_op(t0, t1, e));

    found = 0;
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < e; i++) {
        failed |= obl_omap_put(m, s->era + i * kb, s->pool + (i % BENCH_POOL) * vb, &f) != OBL_OK;
        found += f;
    }
    t1 = bench_now_ns();
    failed |= found != 0;
    bench_record(c, "Put_latency_us", bench_us_per_op(t0, t1, e));

    bench_record_memory(c, mem, rss0, rss1);
    obl_omap_destroy(m);
    free(buf);
    if (failed || cnt.live != 0) {
        fprintf(stderr, "obl-bench: umap: self-check failed (wrong hit/miss count, value or error)\n");
        return 1;
    }
    return 0;
}

static void umap_plan(bench_plan *pl, uint64_t n)
{
    extern const bench_type bench_umap;
    static const uint64_t kv[][2] = {{8, 8}, {8, 56}, {32, 32}};
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
        double reps = (double)(bench_umap.default_reps + 1);
        double ops = 3.0 * (double)bench_umap.default_queries + 2.0 * (double)(n / 4);
        double secs = reps * ((double)n * 1e-6 + ops * 8e-6);
        bench_plan_add(pl, &bench_umap, n, kv[i][0], kv[i][1], NULL,
                       umap_bytes(n, kv[i][0], kv[i][1]), secs);
    }
}

const bench_type bench_umap = {
    .name = "umap",
    .report_type = "UMAP",
    .impl = "obl",
    .summary = "oblivious cuckoo map over a recursive ORAM (obl/omap.h): bulk build of N pairs, Q shuffled gets, misses, updates, erases, inserts",
    .default_key_bytes = 8,
    .default_value_bytes = 8,
    .default_queries = 10000,
    .default_reps = 5,
    .check = umap_check,
    .setup = umap_setup,
    .run = umap_run,
    .teardown = umap_teardown,
    .plan = umap_plan,
};
