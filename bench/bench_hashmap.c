/* SPDX-License-Identifier: MIT */
/*
 * Benchmark type `hashmap` (REPORT type UnorderedMap, implementation
 * baseline_hashmap): the plain hash map of baselines/plain_hashmap.h, the
 * non-oblivious reference for the oblivious maps. One repetition, on a map
 * created with capacity N (as the oblivious maps are):
 *   Initialization_time_us  create + N puts of distinct random keys
 *   Get_latency_us          Q gets of present keys, shuffled (every key
 *                           equally often), Get_throughput_qps likewise;
 *                           the same phase again as Read_latency_us and
 *                           Read_throughput_qps, the public harness's names
 *   Get_miss_latency_us     Q gets of absent keys; Get_miss_throughput_qps
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

#include "bench_hashmap.h"

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
                                   (double)bench_erase_count(p));
}

static int hashmap_check(const bench_params *p, char *msg, size_t len)
{
    if (bench_check_key_space(p, msg, len))
        return 1;
    double need = hashmap_table_bytes(p->n, p->key_bytes, p->value_bytes) + hashmap_workload_bytes(p);
    return bench_check_memory(p, need, 1.0, msg, len);
}

static void *hashmap_setup(const bench_case *c)
{
    return bench_map_workload_new(&c->p, 0);
}

/* see bench_hashmap.h */
uint64_t bench_plain_hashmap_gets(const plain_hashmap *m, const unsigned char *miss,
                                  const unsigned char *hit, uint64_t q, size_t kb, size_t vb,
                                  unsigned char *buf, uint64_t *t0, uint64_t *t1)
{
    uint64_t found = 0, acc = 0;
    for (uint64_t i = 0; i < q; i++)
        acc += (uint64_t)plain_hashmap_get(m, miss + i * kb, buf);
    *t0 = bench_now_ns();
    for (uint64_t i = 0; i < q; i++) {
        found += (uint64_t)plain_hashmap_get(m, hit + i * kb, buf);
        acc += buf[0] ^ buf[vb - 1];
    }
    *t1 = bench_now_ns();
    bench_consume(acc);
    return found;
}

static int hashmap_run(bench_case *c, void *state)
{
    const bench_map_workload *s = (const bench_map_workload *)state;
    size_t kb = (size_t)c->p.key_bytes, vb = (size_t)c->p.value_bytes;
    uint64_t n = c->p.n, q = c->p.queries, e = s->e;
    bench_counter cnt = {0};
    obl_allocator al = bench_counting_allocator(&cnt);
    /* capacity at the case's fill, as the oblivious map's (bench_fill_flag) */
    size_t cap = (size_t)((n * 100 + c->p.extra[0] - 1) / c->p.extra[0]);
    plain_hashmap_params hp = {.key_size = kb, .value_size = vb, .capacity = cap,
                               .seed = c->p.seed + c->rep, .alloc = &al};
    unsigned char *buf = malloc(vb);
    if (!buf)
        return 1;
    int failed = 0;

    bench_build b;
    bench_build_start(&b);
    plain_hashmap *m = NULL;
    if (plain_hashmap_create(&m, &hp) != OBL_OK) {
        fprintf(stderr, "obl-bench: hashmap: cannot create N=%" PRIu64 "\n", n);
        free(buf);
        return 1;
    }
    for (uint64_t i = 0; i < n; i++)
        failed |= plain_hashmap_put(m, s->keys + i * kb, s->pool + (i % BENCH_POOL) * vb, NULL) != OBL_OK;
    bench_build_done(c, &b);
    size_t mem = plain_hashmap_memory_bytes(m);

    /* after an untimed warm-up of Q gets of absent keys, as for the
     * oblivious map */
    uint64_t t0, t1;
    uint64_t found = bench_plain_hashmap_gets(m, s->miss, s->hit, q, kb, vb, buf, &t0, &t1);
    failed |= found != q;
    bench_record_phase(c, "Get_latency_us", "Get_throughput_qps", t0, t1, q);

    found = 0;
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < q; i++)
        found += (uint64_t)plain_hashmap_get(m, s->miss + i * kb, buf);
    t1 = bench_now_ns();
    failed |= found != 0;
    bench_record_phase(c, "Get_miss_latency_us", "Get_miss_throughput_qps", t0, t1, q);

    t0 = bench_now_ns();
    for (uint64_t i = 0; i < q; i++)
        failed |= plain_hashmap_put(m, s->upd + i * kb, s->pool + (i % BENCH_POOL) * vb, NULL) != OBL_OK;
    t1 = bench_now_ns();
    bench_record_phase(c, "Write_latency_us", "Write_throughput_qps", t0, t1, q);

    found = 0;
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < e; i++)
        found += (uint64_t)plain_hashmap_erase(m, s->era + i * kb);
    t1 = bench_now_ns();
    failed |= found != e || plain_hashmap_size(m) != n - e;
    bench_record_phase(c, "Erase_latency_us", NULL, t0, t1, e);

    t0 = bench_now_ns();
    for (uint64_t i = 0; i < e; i++)
        failed |= plain_hashmap_put(m, s->era + i * kb, s->pool + (i % BENCH_POOL) * vb, NULL) != OBL_OK;
    t1 = bench_now_ns();
    failed |= plain_hashmap_size(m) != n;
    bench_record_phase(c, "Put_latency_us", NULL, t0, t1, e);

    free(buf);
    bench_record_memory(c, mem, &b);
    plain_hashmap_destroy(m);
    return bench_rep_status(c, failed, &cnt);
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
    .report_type = "UnorderedMap",
    .impl = "baseline_hashmap",
    .summary = "non-oblivious linear-probing hash map (baselines/plain_hashmap.h): N puts, Q shuffled gets, misses, updates, erases",
    .default_key_bytes = 8,
    .default_value_bytes = 8,
    .default_queries = 500000,
    .default_reps = 5,
    .extra = bench_fill_flag,
    .nextra = 1,
    .check = hashmap_check,
    .setup = hashmap_setup,
    .run = hashmap_run,
    .teardown = bench_map_workload_delete,
    .plan = hashmap_plan,
};
