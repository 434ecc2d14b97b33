/* SPDX-License-Identifier: MIT */
/*
 * Benchmark types of the ORAM module (obl/oram.h):
 *
 * `nroram` (REPORT type NRORAM, impl obl): Circuit ORAM with caller-kept
 *   positions. K = 4 or 8 selects 4- or 8-byte positions and ids. One
 *   repetition: create, insert all N blocks (Initialization_time_us: the
 *   NRORAM has no bulk build, a caller fills it by inserts;
 *   Initialization_zeroed_time_us: the create alone), 2Q reads timed from
 *   the first one after the build (the first Q are the warm-up phase), at
 *   shuffled ids (each with its position and a
 *   fresh one), Q writes at other shuffled ids. The harness keeps the
 *   positions in a table and prefetches the next access's entry
 *   (nroram_reads); Read_latency_plain_caller_us times the same reads
 *   again without that prefetch.
 * `roram` (REPORT type RORAM, impl obl): the recursive ORAM over N values;
 *   Initialization_time_us is the complete oblivious build from the
 *   caller's array (every tree filled, no lazy initialisation), and
 *   Initialization_zeroed_time_us the build of an all-zero array; then 2Q
 *   reads timed from the first one after the build (the first Q are the
 *   warm-up phase) and Q writes at shuffled indices.
 *
 * Both also time the plain array (baselines/plain_array.h) on the same
 * index sequence in the same run (Baseline_read_latency_us) and report the
 * ratio (Read_slowdown_ratio). Indices are shuffled passes over [0, N),
 * never one fixed index; values come from a pre-generated pool; every read
 * is checked against the expected value after the timed phase.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <obl/oram.h>

#include "bench_array.h"

typedef struct {
    bench_rw_workload *w;
    unsigned char *init; /* the initial values, by index */
    uint64_t *pos;       /* nroram: positions, one per id */
    unsigned char *buf;  /* one value: what reads return */
} oram_state;

/* Bytes of one NRORAM bucket with kb-byte positions and vb-byte values, by
 * nr_create's rule (src/oram/nroram.c): 2 slots of (id, leaf) metadata and
 * value, rounded up to 8 bytes; a bucket of 33 to 63 bytes is padded to 64. */
static double nroram_bucket_bytes(uint64_t kb, uint64_t vb)
{
    uint64_t s = (2 * vb + 2 * 2 * kb + 7) & ~(uint64_t)7;
    return (double)(s > 32 && s < 64 ? 64 : s);
}

static int oram_check(const bench_params *p, char *msg, size_t len, int nr)
{
    if (nr && p->key_bytes != 4 && p->key_bytes != 8) {
        snprintf(msg, len, "nroram takes 4- or 8-byte positions (--key-bytes 4 or 8)");
        return 1;
    }
    if (nr && p->key_bytes == 4 && p->n >= UINT32_MAX) {
        snprintf(msg, len, "4-byte positions hold at most 2^32 - 2 blocks");
        return 1;
    }
    if (!nr && p->key_bytes > 8) {
        snprintf(msg, len, "roram indices are at most 8 bytes");
        return 1;
    }
    if (p->value_bytes == 0 || p->value_bytes > OBL_ORAM_MAX_VALUE_SIZE) {
        snprintf(msg, len, "value size must be 1 .. %zu", (size_t)OBL_ORAM_MAX_VALUE_SIZE);
        return 1;
    }
    /* tree: about N buckets of 2 slots (metadata + value); roram packs values */
    double per = nr ? nroram_bucket_bytes(p->key_bytes, p->value_bytes) + 8
                    : 2.0 * ((double)p->value_bytes + 8) + 2 * (double)p->value_bytes;
    double need = (double)p->n * per + 16.0 * (double)p->queries;
    return bench_check_memory(p, need, 0.8, msg, len);
}

static int nroram_check(const bench_params *p, char *msg, size_t len)
{
    return oram_check(p, msg, len, 1);
}

static int roram_check(const bench_params *p, char *msg, size_t len)
{
    return oram_check(p, msg, len, 0);
}

static void oram_teardown(void *state)
{
    oram_state *s = (oram_state *)state;
    if (!s)
        return;
    bench_rw_workload_delete(s->w);
    free(s->init);
    free(s->pos);
    free(s->buf);
    free(s);
}

static void *oram_setup(const bench_case *c)
{
    oram_state *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->pos = malloc(c->p.n * sizeof(uint64_t));
    s->init = malloc(c->p.n * c->p.value_bytes);
    s->buf = malloc(c->p.value_bytes);
    s->w = bench_rw_workload_new(&c->p);
    if (!s->pos || !s->init || !s->buf || !s->w) {
        oram_teardown(s);
        return NULL;
    }
    size_t vb = (size_t)c->p.value_bytes;
    for (uint64_t i = 0; i < c->p.n; i++)
        memcpy(s->init + i * vb, s->w->pool + (i % BENCH_POOL) * vb, vb);
    return s;
}

/*
 * The end of a repetition, after the ORAM is destroyed: the plain array on
 * the same reads, the baseline of this run (Baseline_read_latency_us), the
 * ratio to the ORAM's read latency (Read_slowdown_ratio), and the checks.
 * Returns the repetition's status.
 */
static int oram_finish(bench_case *c, const oram_state *s, double read_us, int ok,
                       const bench_counter *cnt)
{
    size_t vb = (size_t)c->p.value_bytes;
    plain_array *a = NULL;
    if (plain_array_create(&a, c->p.n, vb, NULL) != OBL_OK) {
        fprintf(stderr, "obl-bench: %s: cannot create the baseline array\n", c->type->name);
        return 1;
    }
    for (uint64_t i = 0; i < c->p.n; i++)
        (void)plain_array_write(a, i, s->init + i * vb);
    double bl =
        bench_plain_array_reads(c, a, s->w->read_idx, s->buf, "Baseline_read_latency_us", NULL);
    plain_array_destroy(a);
    bench_record(c, "Read_slowdown_ratio", read_us / bl);
    return bench_rep_status(c, !ok, cnt);
}

/* Starts the load of the caller's position for the access after the i-th
 * of q at ids idx (nroram_reads says why). */
static inline void pos_prefetch_next(const uint64_t *pos, const uint64_t *idx, uint64_t i,
                                     uint64_t q)
{
    if (i + 1 < q)
        __builtin_prefetch(&pos[idx[i + 1]]);
}

/*
 * Q reads at ids idx[0 .. q): each with the caller's position and a fresh
 * one, folded into *acc; returns 0 on an error. With pf, the loop first
 * starts the load of the next access's position. The position table is the
 * caller's (8 bytes per id, 8 MiB at 2^20) and one random line of it misses
 * the caches once the tree is large; unhidden, that miss comes before the
 * access and delays its first step (the read path's prefetch needs the
 * position), although it is no work of the ORAM. A caller like the RORAM
 * has the position in a register from the level above. The ids are public
 * here (the harness's own pre-drawn sequence), so the prefetch one access
 * ahead is what such a loop would do. Without pf the loop is what a plain
 * caller gets (Read_latency_plain_caller_us). docs/bench.md, "The
 * caller's positions".
 */
static int nroram_reads(obl_nroram *o, oram_state *s, size_t vb, const uint64_t *idx, uint64_t q,
                        int pf, uint64_t *acc)
{
    unsigned char *buf = s->buf;
    int ok = 1;
    for (uint64_t i = 0; i < q; i++) {
        uint64_t id = idx[i], np = obl_nroram_random_pos(o);
        if (pf) /* public: the harness's switch */
            pos_prefetch_next(s->pos, idx, i, q);
        ok &= obl_nroram_access(o, id, s->pos[id], np, OBL_ORAM_READ, NULL, buf, NULL) == OBL_OK;
        s->pos[id] = np;
        *acc += buf[0] ^ buf[vb - 1];
    }
    return ok;
}

/* Reads id (moving it to a fresh position): 1 if it holds want. */
static int nroram_read_is(obl_nroram *o, oram_state *s, uint64_t id, const unsigned char *want,
                          size_t vb)
{
    uint64_t np = obl_nroram_random_pos(o);
    int ok = obl_nroram_access(o, id, s->pos[id], np, OBL_ORAM_READ, NULL, s->buf, NULL) == OBL_OK;
    s->pos[id] = np;
    return ok & !memcmp(s->buf, want, vb);
}

/* The timed writes: q blocks of the value pool at the write indices,
 * the caller's position lookup prefetched. 1 if all succeeded. */
static int nroram_writes(obl_nroram *o, oram_state *s, size_t vb, uint64_t q)
{
    const bench_rw_workload *w = s->w;
    int ok = 1;
    for (uint64_t i = 0; i < q; i++) {
        uint64_t id = w->write_idx[i], np = obl_nroram_random_pos(o);
        pos_prefetch_next(s->pos, w->write_idx, i, q);
        ok &= obl_nroram_access(o, id, s->pos[id], np, OBL_ORAM_WRITE,
                                w->pool + (i % BENCH_POOL) * vb, NULL, NULL) == OBL_OK;
        s->pos[id] = np;
    }
    return ok;
}

static int nroram_run(bench_case *c, void *state)
{
    oram_state *s = (oram_state *)state;
    const bench_rw_workload *w = s->w;
    uint64_t n = c->p.n, q = c->p.queries;
    size_t vb = (size_t)c->p.value_bytes;
    bench_counter cnt = {0};
    obl_allocator al = bench_counting_allocator(&cnt);
    obl_nroram_params p;
    memset(&p, 0, sizeof(p));
    p.capacity = n;
    p.value_size = vb;
    p.pos_bytes = (uint32_t)c->p.key_bytes;
    p.alloc = &al;
    int ok = 1;

    bench_build b;
    bench_build_start(&b);
    obl_nroram *o = NULL;
    if (obl_nroram_create(&o, &p) != OBL_OK) {
        fprintf(stderr, "obl-bench: nroram: cannot create N=%" PRIu64 "\n", n);
        return 1;
    }
    bench_record(c, "Initialization_zeroed_time_us", (double)(bench_now_ns() - b.t0) / 1000.0);
    for (uint64_t i = 0; i < n && ok; i++)
        ok = obl_nroram_insert(o, i, s->init + i * vb, &s->pos[i]) == OBL_OK;
    bench_build_done(c, &b);

    /* timed from the first read after the build, as the peers' drivers:
     * Q reads at the write phase's indices (the warm-up phase, also
     * recorded on its own), then Q at the read indices (docs/bench.md) */
    uint64_t acc = 0;
    uint64_t t0 = bench_now_ns();
    ok &= nroram_reads(o, s, vb, w->write_idx, q, 1, &acc);
    uint64_t tw = bench_now_ns();
    ok &= nroram_reads(o, s, vb, w->read_idx, q, 1, &acc);
    uint64_t t1 = bench_now_ns();
    double rl = bench_record_warm_phase(c, "Read", t0, tw, t1, q);
    /* the same reads again, the caller's position lookup not prefetched */
    t0 = bench_now_ns();
    ok &= nroram_reads(o, s, vb, w->read_idx, q, 0, &acc);
    t1 = bench_now_ns();
    bench_consume(acc);
    bench_record(c, "Read_latency_plain_caller_us", (double)(t1 - t0) / 1000.0 / (double)q);
    /* the reads above must have returned the initial values */
    for (uint64_t i = 0; i < 64 && i < q; i++) {
        uint64_t id = w->read_idx[q - 1 - i];
        ok &= nroram_read_is(o, s, id, s->init + id * vb, vb);
    }

    t0 = bench_now_ns();
    ok &= nroram_writes(o, s, vb, q);
    t1 = bench_now_ns();
    bench_record_phase(c, "Write_latency_us", "Write_throughput_qps", t0, t1, q);
    ok &= nroram_read_is(o, s, w->write_idx[q - 1], w->pool + ((q - 1) % BENCH_POOL) * vb, vb);
    obl_oram_stats st;
    obl_nroram_stats(o, &st);
    bench_record(c, "Stash_max_blocks", (double)st.stash_max);
    bench_record_memory(c, obl_nroram_memory_bytes(o), &b);
    obl_nroram_destroy(o);
    return oram_finish(c, s, rl, ok, &cnt);
}

static int roram_run(bench_case *c, void *state)
{
    oram_state *s = (oram_state *)state;
    const bench_rw_workload *w = s->w;
    uint64_t n = c->p.n, q = c->p.queries;
    size_t vb = (size_t)c->p.value_bytes;
    bench_counter cnt = {0};
    obl_allocator al = bench_counting_allocator(&cnt);
    unsigned char *buf = s->buf;
    obl_roram_params p;
    memset(&p, 0, sizeof(p));
    p.n = n;
    p.value_size = vb;
    p.alloc = &al;

    /* the all-zero build, timed on its own */
    uint64_t t0 = bench_now_ns();
    obl_roram *r = NULL;
    int ok = obl_roram_create(&r, &p) == OBL_OK;
    uint64_t t1 = bench_now_ns();
    bench_record(c, "Initialization_zeroed_time_us", (double)(t1 - t0) / 1000.0);
    obl_roram_destroy(r);
    r = NULL;

    bench_build b;
    bench_build_start(&b);
    if (!ok || obl_roram_create_from(&r, &p, s->init) != OBL_OK) {
        fprintf(stderr, "obl-bench: roram: cannot create N=%" PRIu64 "\n", n);
        return 1;
    }
    bench_build_done(c, &b);

    /* timed from the first read after the build (warm-up phase: the Q
     * reads at the write phase's indices, docs/bench.md) */
    uint64_t acc = 0;
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < q; i++) {
        ok &= obl_roram_read(r, w->write_idx[i], buf) == OBL_OK;
        acc += buf[0];
    }
    uint64_t tw = bench_now_ns();
    for (uint64_t i = 0; i < q; i++) {
        ok &= obl_roram_read(r, w->read_idx[i], buf) == OBL_OK;
        acc += buf[0] ^ buf[vb - 1];
    }
    t1 = bench_now_ns();
    bench_consume(acc);
    double rl = bench_record_warm_phase(c, "Read", t0, tw, t1, q);
    for (uint64_t i = 0; i < 64 && i < q; i++) {
        uint64_t idx = w->read_idx[q - 1 - i];
        ok &= obl_roram_read(r, idx, buf) == OBL_OK && !memcmp(buf, s->init + idx * vb, vb);
    }

    t0 = bench_now_ns();
    for (uint64_t i = 0; i < q; i++)
        ok &= obl_roram_write(r, w->write_idx[i], w->pool + (i % BENCH_POOL) * vb) == OBL_OK;
    t1 = bench_now_ns();
    bench_record_phase(c, "Write_latency_us", "Write_throughput_qps", t0, t1, q);
    {
        uint64_t last = q - 1;
        ok &= obl_roram_read(r, w->write_idx[last], buf) == OBL_OK &&
              !memcmp(buf, w->pool + (last % BENCH_POOL) * vb, vb);
    }
    obl_oram_stats st;
    obl_roram_stats(r, &st);
    bench_record(c, "Stash_max_blocks", (double)st.stash_max);
    bench_record_memory(c, obl_roram_memory_bytes(r), &b);
    obl_roram_destroy(r);
    return oram_finish(c, s, rl, ok, &cnt);
}

const bench_kv bench_nroram_plan_kv[] = {{4, 8}, {8, 8}};
const size_t bench_nroram_plan_nkv = sizeof(bench_nroram_plan_kv) / sizeof(bench_nroram_plan_kv[0]);
const bench_kv bench_roram_plan_kv[] = {{8, 8}, {8, 32}, {8, 56}};
const size_t bench_roram_plan_nkv = sizeof(bench_roram_plan_kv) / sizeof(bench_roram_plan_kv[0]);

static void nroram_plan(bench_plan *pl, uint64_t n)
{
    extern const bench_type bench_nroram;
    double q = (double)bench_nroram.default_queries, reps = (double)bench_nroram.default_reps + 1;
    for (size_t i = 0; i < bench_nroram_plan_nkv; i++) {
        bench_kv kv = bench_nroram_plan_kv[i];
        double per = nroram_bucket_bytes(kv.key_bytes, kv.value_bytes) + 24;
        double mem = (double)n * per + 16 * q + 65536;
        double secs = reps * ((double)n * 3e-6 + 2 * q * 3e-6);
        bench_plan_add(pl, &bench_nroram, n, kv.key_bytes, kv.value_bytes, NULL, mem, secs);
    }
}

static void roram_plan(bench_plan *pl, uint64_t n)
{
    extern const bench_type bench_roram;
    double q = (double)bench_roram.default_queries, reps = (double)bench_roram.default_reps + 1;
    for (size_t i = 0; i < bench_roram_plan_nkv; i++) {
        bench_kv kv = bench_roram_plan_kv[i];
        double mem = (double)n * (3.0 * (double)kv.value_bytes + 16) + 16 * q + 65536;
        double secs = reps * ((double)n * 1e-6 + 2 * q * 1e-5);
        bench_plan_add(pl, &bench_roram, n, kv.key_bytes, kv.value_bytes, NULL, mem, secs);
    }
}

const bench_type bench_nroram = {
    .name = "nroram",
    .report_type = "NRORAM",
    .impl = "obl",
    .summary = "Circuit ORAM, caller-kept positions (obl/oram.h): N inserts, Q shuffled reads and writes",
    .default_key_bytes = 8,
    .default_value_bytes = 8,
    .default_queries = 100000,
    .default_reps = 5,
    .check = nroram_check,
    .setup = oram_setup,
    .run = nroram_run,
    .teardown = oram_teardown,
    .plan = nroram_plan,
};

const bench_type bench_roram = {
    .name = "roram",
    .report_type = "RORAM",
    .impl = "obl",
    .summary = "recursive ORAM array (obl/oram.h): oblivious build, Q shuffled reads and writes",
    .default_key_bytes = 8,
    .default_value_bytes = 8,
    .default_queries = 100000,
    .default_reps = 5,
    .check = roram_check,
    .setup = oram_setup,
    .run = roram_run,
    .teardown = oram_teardown,
    .plan = roram_plan,
};
