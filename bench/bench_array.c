/* SPDX-License-Identifier: MIT */
/*
 * Benchmark type `array` (REPORT type RORAM, implementation baseline_array):
 * the plain array of baselines/plain_array.h, the non-oblivious reference
 * for both ORAMs (nroram, roram); its default plan runs at every key/value
 * size theirs do, so each ORAM case has its baseline. One repetition: create the array and write all N
 * indices (Initialization_time_us), Q reads at shuffled indices
 * (Read_latency_us, Read_throughput_qps), Q writes at other shuffled indices
 * (Write_latency_us). Index sequences and values are generated before
 * timing; read results are folded into a value the compiler must keep.
 * Latency is the phase's wall time over its Q operations (operations are
 * independent, as in the public harness's RORAM benchmark).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bench_array.h"

static int array_check(const bench_params *p, char *msg, size_t len)
{
    /* the key is the address: N must be addressable with K bytes */
    if (p->key_bytes > 8 || (p->key_bytes < 8 && p->n > (UINT64_C(1) << (8 * p->key_bytes)))) {
        snprintf(msg, len, "an array of N=%" PRIu64 " needs addresses of at most 8 bytes that "
                 "can hold N-1 (--key-bytes %" PRIu64 ")", p->n, p->key_bytes);
        return 1;
    }
    double need = (double)p->n * (double)p->value_bytes + 16.0 * (double)p->queries;
    return bench_check_memory(p, need, 1.0, msg, len);
}

double bench_plain_array_reads(bench_case *c, const plain_array *a, const uint64_t *idx,
                               unsigned char *buf, const char *latency_name,
                               const char *qps_name)
{
    size_t vb = (size_t)c->p.value_bytes;
    uint64_t q = c->p.queries, acc = 0, t0 = bench_now_ns();
    for (uint64_t i = 0; i < q; i++) {
        (void)plain_array_read(a, idx[i], buf);
        acc += buf[0] ^ buf[vb - 1];
    }
    uint64_t t1 = bench_now_ns();
    bench_consume(acc);
    return bench_record_phase(c, latency_name, qps_name, t0, t1, q);
}

static void *array_setup(const bench_case *c)
{
    return bench_rw_workload_new(&c->p);
}

static int array_run(bench_case *c, void *state)
{
    const bench_rw_workload *s = (const bench_rw_workload *)state;
    uint64_t n = c->p.n, q = c->p.queries;
    size_t vb = (size_t)c->p.value_bytes;
    bench_counter cnt = {0};
    obl_allocator al = bench_counting_allocator(&cnt);
    unsigned char *buf = malloc(vb);
    if (!buf)
        return 1;

    bench_build b;
    bench_build_start(&b);
    plain_array *a = NULL;
    if (plain_array_create(&a, n, vb, &al) != OBL_OK) {
        fprintf(stderr, "obl-bench: array: cannot create N=%" PRIu64 "\n", n);
        free(buf);
        return 1;
    }
    for (uint64_t i = 0; i < n; i++)
        (void)plain_array_write(a, i, s->pool + (i % BENCH_POOL) * vb);
    bench_build_done(c, &b);

    /* untimed warm-up, as for the ORAMs: Q reads at the write indices */
    unsigned acc = 0;
    for (uint64_t i = 0; i < q; i++) {
        (void)plain_array_read(a, s->write_idx[i], buf);
        acc += buf[0];
    }
    bench_consume(acc);
    bench_plain_array_reads(c, a, s->read_idx, buf, "Read_latency_us", "Read_throughput_qps");

    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < q; i++)
        (void)plain_array_write(a, s->write_idx[i], s->pool + (i % BENCH_POOL) * vb);
    uint64_t t1 = bench_now_ns();
    bench_record_phase(c, "Write_latency_us", "Write_throughput_qps", t0, t1, q);

    /* the last write to an index is what a read must see: a cheap check
     * that the timed loops did what they claim */
    uint64_t last = q - 1, idx = s->write_idx[last];
    int ok = plain_array_read(a, idx, buf) == OBL_OK &&
             !memcmp(buf, s->pool + (last % BENCH_POOL) * vb, vb);
    free(buf);
    bench_record_memory(c, plain_array_memory_bytes(a), &b);
    plain_array_destroy(a);
    return bench_rep_status(c, !ok, &cnt);
}

/* Adds kv to the set kvs[0..*count), kept sorted by key then value bytes. */
static void array_plan_kv_add(bench_kv *kvs, size_t *count, bench_kv kv)
{
    size_t i = 0;
    while (i < *count && (kvs[i].key_bytes < kv.key_bytes ||
                          (kvs[i].key_bytes == kv.key_bytes && kvs[i].value_bytes < kv.value_bytes)))
        i++;
    if (i < *count && kvs[i].key_bytes == kv.key_bytes && kvs[i].value_bytes == kv.value_bytes)
        return;
    memmove(kvs + i + 1, kvs + i, (*count - i) * sizeof(*kvs));
    kvs[i] = kv;
    (*count)++;
}

/* The baseline of the ORAM types: at every key/value size their plans use. */
static void array_plan(bench_plan *pl, uint64_t n)
{
    extern const bench_type bench_array;
    bench_kv kvs[16];
    size_t count = 0;
    if (bench_nroram_plan_nkv + bench_roram_plan_nkv > sizeof(kvs) / sizeof(kvs[0])) {
        fprintf(stderr, "obl-bench: array: too many ORAM plan sizes for its plan\n");
        abort();
    }
    for (size_t i = 0; i < bench_nroram_plan_nkv; i++)
        array_plan_kv_add(kvs, &count, bench_nroram_plan_kv[i]);
    for (size_t i = 0; i < bench_roram_plan_nkv; i++)
        array_plan_kv_add(kvs, &count, bench_roram_plan_kv[i]);
    double q = (double)bench_array.default_queries;
    double reps = (double)(bench_array.default_reps + 1);
    for (size_t i = 0; i < count; i++) {
        double mem = (double)n * (double)kvs[i].value_bytes + 16.0 * q + 4096;
        double secs = reps * ((double)n * 3e-9 + q * 2 * 5e-9) + q * 2 * 1e-8;
        bench_plan_add(pl, &bench_array, n, kvs[i].key_bytes, kvs[i].value_bytes, NULL, mem, secs);
    }
}

const bench_type bench_array = {
    .name = "array",
    .report_type = "RORAM",
    .impl = "baseline_array",
    .summary = "non-oblivious plain array (baselines/plain_array.h): N writes, Q shuffled reads and writes",
    .default_key_bytes = 8,
    .default_value_bytes = 8,
    .default_queries = 1000000,
    .default_reps = 5,
    .check = array_check,
    .setup = array_setup,
    .run = array_run,
    .teardown = bench_rw_workload_delete,
    .plan = array_plan,
};
