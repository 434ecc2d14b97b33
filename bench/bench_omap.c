/* SPDX-License-Identifier: MIT */
/*
 * Benchmark type `umap` (REPORT type UnorderedMap, implementation obl): the
 * oblivious map of obl/omap.h, created with capacity N * 100 / fill and
 * filled with N entries (--fill-pct, default 80: the harness's fill:=0.8) (the automatic sizing: 16 entries per bucket on average, the
 * slots per bucket and the overflow stash from the 2^-40 bound; the
 * automatic layout, docs/omap.md: compact for keys <= 8 bytes and values
 * >= 24 bytes, e.g. 8/56, and for 32/32; inline for 8/8). One repetition:
 *   Initialization_time_us  obl_omap_build from N distinct random pairs
 *                           (hashing, placement and the ORAMs' bulk builds)
 *   Get_latency_us          2Q gets of present keys timed from the first
 *                           get after the build (Q shuffled keys, every
 *                           key equally often, twice over), values
 *                           checked after the loop; Get_throughput_qps
 *                           likewise; Warmup_get_latency_us the first Q,
 *                           Get_steady_latency_us the second Q
 *   Get_batched_latency_us  the Q hits again, in UMAP_PAIRS rounds of Q /
 *                           UMAP_PAIRS gets, each round's keys got one by
 *                           one and in batched accesses (which first
 *                           alternates)
 *                           (obl_omap_access_batch, UMAP_BATCH a call):
 *                           the median round's time per batched get;
 *                           Get_single_round_us the one-by-one rounds'
 *                           median, Get_batched_ratio the median of the
 *                           rounds' ratios (batched over one by one: the
 *                           pairs share the machine's load)
 *   Get_miss_latency_us     Q gets of absent keys; Get_miss_throughput_qps
 *   Write_latency_us        Q puts that replace the value of present keys
 *   Erase_latency_us        E = min(Q, N/4) erases of distinct present keys
 *   Put_latency_us          the E keys put back: inserts of new keys
 *   Memory_kb               resident set growth (the harness's meaning);
 *   Allocated_kb, Bytes_per_entry  through the counting allocator
 *   Stash_max_blocks        the largest stash occupancy of the index ORAM's
 *                           data level and the value ORAM (obl_omap_stats);
 *                           a stash overflow fails the case
 *   Overflow_max_entries    the largest occupancy of the map's overflow
 *                           stash, against Overflow_size_entries
 *   Baseline_get_latency_us after the map is destroyed: the plain hash map
 *                           (baselines/plain_hashmap.h) filled with the
 *                           same N pairs, timed on the same Q gets, the
 *                           baseline of this run; Get_slowdown_ratio is
 *                           Get_latency_us over it
 * Every operation performs the same ORAM accesses, so the phases differ
 * only by noise; they are measured separately so that each has its own
 * figure, as the public harness reports them. Results are checked (hit and miss counts, values of the hits).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <obl/omap.h>

#include "bench_hashmap.h"

/* Rough size of the map: N / 16 buckets of 8 + 32 (K + V) bytes in a tree
 * of twice as many slots, plus the build's temporary copy. */
static double umap_bytes(uint64_t n, uint64_t kb, uint64_t vb)
{
    double buckets = (double)n / 16.0 + 1;
    double bsz = 8.0 + 32.0 * (double)(kb + vb);
    return buckets * (bsz + 16) * 2.3 + buckets * bsz + (double)n * (kb + vb) * 2;
}

/* Capacity for N entries at the case's fill (percent, the harness's
 * fill:=0.8 by default): N * 100 / fill. */
static uint64_t umap_capacity(const bench_case *c)
{
    uint64_t fill = c->p.extra[0];
    return (c->p.n * 100 + fill - 1) / fill;
}

static int umap_check(const bench_params *p, char *msg, size_t len)
{
    if (bench_check_key_space(p, msg, len))
        return 1;
    if (p->key_bytes > OBL_OMAP_MAX_KEY_SIZE || p->value_bytes > OBL_OMAP_MAX_VALUE_SIZE) {
        snprintf(msg, len, "umap: key <= %u and value <= %u bytes", OBL_OMAP_MAX_KEY_SIZE,
                 OBL_OMAP_MAX_VALUE_SIZE);
        return 1;
    }
    return bench_check_memory(p, umap_bytes(p->n, p->key_bytes, p->value_bytes), 1.0, msg, len);
}

static void *umap_setup(const bench_case *c)
{
    return bench_map_workload_new(&c->p, 1);
}

/*
 * The end of a repetition, after the map is destroyed: the plain hash map
 * filled with the same pairs and timed on the same gets of present keys
 * (Baseline_get_latency_us), and the ratio to the map's (Get_slowdown_ratio).
 * `want` is the checksum of the expected values in the gets' order. Returns
 * non-zero if the baseline could not be built or answered wrongly.
 */
static int umap_baseline(bench_case *c, const bench_map_workload *s, double get_us, uint64_t want)
{
    size_t kb = (size_t)c->p.key_bytes, vb = (size_t)c->p.value_bytes;
    uint64_t n = c->p.n, q = c->p.queries;
    plain_hashmap_params hp = {.key_size = kb, .value_size = vb, .capacity = (size_t)n,
                               .seed = c->p.seed + c->rep, .alloc = NULL};
    unsigned char *buf = malloc(vb);
    plain_hashmap *h = NULL;
    if (!buf || plain_hashmap_create(&h, &hp) != OBL_OK) {
        fprintf(stderr, "obl-bench: umap: cannot create the baseline hash map\n");
        free(buf);
        return 1;
    }
    int failed = 0;
    for (uint64_t i = 0; i < n; i++)
        failed |= plain_hashmap_put(h, s->keys + i * kb, s->vals + i * vb, NULL) != OBL_OK;
    /* timed as the hashmap type times its gets (bench_hashmap.h); the
     * fold of whole values (a chain of multiplies) would be a large part
     * of a plain get, so the values are checked by a second, untimed pass */
    uint64_t t0, t1, sum = 0;
    uint64_t found = bench_plain_hashmap_gets(h, s->miss, s->hit, q, kb, vb, buf, &t0, &t1);
    for (uint64_t i = 0; i < q; i++) {
        (void)plain_hashmap_get(h, s->hit + i * kb, buf);
        sum = bench_fold(sum, buf, vb);
    }
    failed |= found != q || sum != want;
    double bl = bench_record_phase(c, "Baseline_get_latency_us", NULL, t0, t1, q);
    bench_record(c, "Get_slowdown_ratio", get_us / bl);
    plain_hashmap_destroy(h);
    free(buf);
    return failed;
}

/* A timed loop of operations: how many found the key, the clock before and
 * after it, and whether any failed. */
typedef struct umap_span {
    uint64_t found, t0, t1;
    int failed;
} umap_span;

/* k gets of the keys at keys (kb bytes each), the values dropped. */
static umap_span umap_gets(obl_omap *m, const unsigned char *keys, size_t kb, unsigned char *buf,
                           uint64_t k)
{
    umap_span sp = {0, bench_now_ns(), 0, 0};
    uint64_t f;
    for (uint64_t i = 0; i < k; i++) {
        sp.failed |= obl_omap_get(m, keys + i * kb, buf, &f) != OBL_OK;
        sp.found += f;
    }
    sp.t1 = bench_now_ns();
    return sp;
}

/* k puts of the keys at keys with the pool's values (vb bytes each). */
static umap_span umap_puts(obl_omap *m, const unsigned char *keys, size_t kb,
                           const unsigned char *pool, size_t vb, uint64_t k)
{
    umap_span sp = {0, bench_now_ns(), 0, 0};
    uint64_t f;
    for (uint64_t i = 0; i < k; i++) {
        sp.failed |= obl_omap_put(m, keys + i * kb, pool + (i % BENCH_POOL) * vb, &f) != OBL_OK;
        sp.found += f;
    }
    sp.t1 = bench_now_ns();
    return sp;
}

/* k erases of the keys at keys. */
static umap_span umap_erases(obl_omap *m, const unsigned char *keys, size_t kb, uint64_t k)
{
    umap_span sp = {0, bench_now_ns(), 0, 0};
    uint64_t f;
    for (uint64_t i = 0; i < k; i++) {
        sp.failed |= obl_omap_erase(m, keys + i * kb, &f) != OBL_OK;
        sp.found += f;
    }
    sp.t1 = bench_now_ns();
    return sp;
}

/* The Q hits twice over, timed from the first get after the build, as the
 * peers' drivers: the first pass is the warm-up phase (the first gets after
 * a build run slower, docs/bench.md "How a case is measured"). The values
 * are checked by a checksum folded in the timed loop (in registers) and
 * compared after it with the expected values' (read at random, so not in
 * the loop); storing every result instead would time a fresh Q * V-byte
 * buffer's page faults and stores as gets. Returns the get time (us) and
 * one pass's expected checksum, for the baseline; *failed on a wrong
 * result. */
static double umap_hits(bench_case *c, const bench_map_workload *s, obl_omap *m,
                        unsigned char *buf, uint64_t *want1, int *failed)
{
    size_t kb = (size_t)c->p.key_bytes, vb = (size_t)c->p.value_bytes;
    uint64_t q = c->p.queries, found = 0, f, sum = 0, want = 0, tw = 0;
    uint64_t t0 = bench_now_ns();
    for (int pass = 0; pass < 2; pass++) {
        for (uint64_t i = 0; i < q; i++) {
            *failed |= obl_omap_get(m, s->hit + i * kb, buf, &f) != OBL_OK;
            found += f;
            sum = bench_fold(sum, buf, vb);
        }
        tw = pass ? tw : bench_now_ns();
    }
    uint64_t t1 = bench_now_ns();
    for (int pass = 0; pass < 2; pass++) {
        for (uint64_t i = 0; i < q; i++)
            want = bench_fold(want, s->vals + s->hit_id[i] * vb, vb);
        *want1 = pass ? *want1 : want;
    }
    *failed |= found != 2 * q || sum != want;
    return bench_record_warm_phase(c, "Get", t0, tw, t1, q);
}

#define UMAP_PAIRS 16
#define UMAP_BATCH 64

static int umap_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double umap_median(double *v, size_t n)
{
    qsort(v, n, sizeof(double), umap_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* k gets of the keys at keys in batched accesses of UMAP_BATCH; out holds
 * UMAP_BATCH values. */
static umap_span umap_batched_gets(obl_omap *m, const unsigned char *keys, size_t kb,
                                   unsigned char *out, uint64_t k)
{
    uint64_t f[UMAP_BATCH];
    obl_err e[UMAP_BATCH];
    umap_span sp = {0, bench_now_ns(), 0, 0};
    for (uint64_t i = 0; i < k; i += UMAP_BATCH) {
        size_t n = k - i < UMAP_BATCH ? (size_t)(k - i) : UMAP_BATCH;
        sp.failed |= obl_omap_access_batch(m, n, NULL, keys + i * kb, NULL, out, f, e) != OBL_OK;
        for (size_t j = 0; j < n; j++)
            sp.found += f[j];
    }
    sp.t1 = bench_now_ns();
    return sp;
}

/* The batched access against single gets, in alternating rounds (see the
 * top); 1 if any failed or missed. */
static int umap_batched(bench_case *c, const bench_map_workload *s, obl_omap *m)
{
    size_t kb = (size_t)c->p.key_bytes, vb = (size_t)c->p.value_bytes;
    uint64_t q = c->p.queries, k = q / UMAP_PAIRS ? q / UMAP_PAIRS : 1;
    unsigned char *out = malloc(UMAP_BATCH * vb);
    if (!out)
        return 1;
    double one[UMAP_PAIRS], bat[UMAP_PAIRS], ratio[UMAP_PAIRS];
    int failed = 0;
    for (int r = 0; r < UMAP_PAIRS; r++) {
        const unsigned char *keys = s->hit + ((uint64_t)r * k % (q - k + 1)) * kb;
        umap_span a, b; /* which goes first alternates: neither always finds
                         * the other's index blocks in the caches */
        if (r % 2) {
            b = umap_batched_gets(m, keys, kb, out, k);
            a = umap_gets(m, keys, kb, out, k);
        } else {
            a = umap_gets(m, keys, kb, out, k);
            b = umap_batched_gets(m, keys, kb, out, k);
        }
        failed |= a.failed || b.failed || a.found != k || b.found != k;
        one[r] = (double)(a.t1 - a.t0) / 1e3 / (double)k;
        bat[r] = (double)(b.t1 - b.t0) / 1e3 / (double)k;
        ratio[r] = bat[r] / one[r];
    }
    free(out);
    bench_record(c, "Get_batched_latency_us", umap_median(bat, UMAP_PAIRS));
    bench_record(c, "Get_single_round_us", umap_median(one, UMAP_PAIRS));
    bench_record(c, "Get_batched_ratio", umap_median(ratio, UMAP_PAIRS));
    return failed;
}

/* The misses, updates, erases and fresh puts after the hits, each timed;
 * 1 if any failed or found a wrong number of keys. */
static int umap_phases(bench_case *c, const bench_map_workload *s, obl_omap *m, unsigned char *buf)
{
    size_t kb = (size_t)c->p.key_bytes, vb = (size_t)c->p.value_bytes;
    uint64_t q = c->p.queries, e = s->e;
    umap_span sp = umap_gets(m, s->miss, kb, buf, q);
    int failed = sp.failed || sp.found != 0;
    bench_record_phase(c, "Get_miss_latency_us", "Get_miss_throughput_qps", sp.t0, sp.t1, q);
    sp = umap_puts(m, s->upd, kb, s->pool, vb, q);
    failed |= sp.failed || sp.found != q;
    bench_record_phase(c, "Write_latency_us", NULL, sp.t0, sp.t1, q);
    sp = umap_erases(m, s->era, kb, e);
    failed |= sp.failed || sp.found != e;
    bench_record_phase(c, "Erase_latency_us", NULL, sp.t0, sp.t1, e);
    sp = umap_puts(m, s->era, kb, s->pool, vb, e);
    failed |= sp.failed || sp.found != 0;
    bench_record_phase(c, "Put_latency_us", NULL, sp.t0, sp.t1, e);
    return failed;
}

/* The map's statistics; 1 if its stash overflowed. */
static int umap_stats(bench_case *c, const obl_omap *m)
{
    obl_omap_stats st;
    obl_omap_get_stats(m, &st);
    bench_record(c, "Stash_max_blocks", (double)st.stash_max);
    bench_record(c, "Overflow_max_entries", (double)st.overflow_max);
    bench_record(c, "Overflow_size_entries", (double)st.overflow_size);
    return st.stash_overflows != 0;
}

/* One repetition of the map case: build, hits, misses, updates, erases and
 * puts, each timed, then the plain hash map baseline; 0, or 1 on a failure. */
static int umap_run(bench_case *c, void *state)
{
    const bench_map_workload *s = (const bench_map_workload *)state;
    size_t vb = (size_t)c->p.value_bytes;
    uint64_t n = c->p.n;
    bench_counter cnt = {0};
    obl_allocator al = bench_counting_allocator(&cnt);
    obl_omap_params mp;
    memset(&mp, 0, sizeof(mp));
    mp.capacity = umap_capacity(c);
    mp.key_size = (size_t)c->p.key_bytes;
    mp.value_size = vb;
    mp.use_seed = 1;
    mp.seed = c->p.seed * 31 + c->rep;
    mp.alloc = &al;
    unsigned char *buf = malloc(vb);
    if (!buf)
        return 1;
    bench_build b;
    bench_build_start(&b);
    obl_omap *m = NULL;
    obl_err err = obl_omap_build(&m, &mp, s->keys, s->vals, n);
    if (err != OBL_OK) {
        fprintf(stderr, "obl-bench: umap: build of N=%" PRIu64 " failed: %s\n", n,
                obl_err_name(err));
        free(buf);
        return 1;
    }
    bench_build_done(c, &b);
    size_t mem = obl_omap_memory_bytes(m);
    int failed = 0;
    uint64_t want1 = 0;
    double get_us = umap_hits(c, s, m, buf, &want1, &failed);
    failed |= umap_batched(c, s, m);
    failed |= umap_phases(c, s, m, buf);
    free(buf);
    bench_record_memory(c, mem, &b);
    failed |= umap_stats(c, m);
    obl_omap_destroy(m);
    failed |= umap_baseline(c, s, get_us, want1);
    return bench_rep_status(c, failed, &cnt);
}

static void umap_plan(bench_plan *pl, uint64_t n)
{
    extern const bench_type bench_umap;
    static const uint64_t kv[][2] = {{8, 8}, {8, 56}, {32, 32}};
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
        double reps = (double)(bench_umap.default_reps + 1);
        double ops = 5.0 * (double)bench_umap.default_queries + 2.0 * (double)(n / 4);
        double secs = reps * ((double)n * 1e-6 + ops * 8e-6);
        bench_plan_add(pl, &bench_umap, n, kv[i][0], kv[i][1], NULL,
                       umap_bytes(n, kv[i][0], kv[i][1]), secs);
    }
}

const bench_extra_flag bench_fill_flag[] = {
    {"--fill-pct", "fill", 80, 10, 100,
     "entries per 100 slots of capacity (capacity N * 100 / fill; 80 is the harness's fill:=0.8)"}};

const bench_type bench_umap = {
    .name = "umap",
    .report_type = "UnorderedMap",
    .impl = "obl",
    .summary = "oblivious bucket map with overflow stash, automatic layout (obl/omap.h): bulk build of N pairs, Q shuffled gets, misses, updates, erases, inserts",
    .default_key_bytes = 8,
    .default_value_bytes = 8,
    .default_queries = 10000,
    .default_reps = 5,
    .extra = bench_fill_flag,
    .nextra = 1,
    .check = umap_check,
    .setup = umap_setup,
    .run = umap_run,
    .teardown = bench_map_workload_delete,
    .plan = umap_plan,
};
