/* SPDX-License-Identifier: MIT */
/*
 * obl-mpi: runs a deployment of obl/mpi.h under one mpirun (docs/mpi.md).
 *
 *   mpirun -np 4 obl-mpi --balancers 1 --n 65536 --shards 3 --batch 4096
 *
 * Benchmark mode (default): balancer 0 builds N pairs (capacity N*5/4),
 * then every balancer answers --batches epochs of B gets (80% present, 20%
 * absent keys, fresh per epoch), checks every answer, and rank 0 prints a
 * REPORT line (type UnorderedMap, implementation obl_mpi).
 * Model mode (--model E): E mixed epochs of gets, puts and erases over a
 * small key universe, every balancer checking its answers against a plain
 * model of all balancers' requests (the epoch semantics of obl/mpi.h).
 * Any failure (a rejected message, a timeout) prints the rank's error and
 * aborts the job with MPI_Abort; bad parameters exit with status 2.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <obl/mpi.h>

#include "mpi/inject.h"

typedef struct opts {
    obl_mpi_params p;
    int fault, fault_rank;
    uint64_t fault_epoch;
    uint64_t n, batches, model, seed;
    int help, pipeline;
} opts;

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Key of id i: an odd multiplier makes it injective; zero-padded past 8. */
static void make_key(unsigned char *k, size_t ks, uint64_t i, uint64_t seed)
{
    uint64_t w = (i + 1) * 0x9e3779b97f4a7c15ull ^ mix(seed);
    memset(k, 0, ks);
    memcpy(k, &w, ks < 8 ? ks : 8);
}

static void make_value(unsigned char *v, size_t vs, uint64_t i, uint64_t salt)
{
    for (size_t o = 0; o < vs; o += 8) {
        uint64_t w = mix(i * 131 + o + salt);
        memcpy(v + o, &w, vs - o < 8 ? vs - o : 8);
    }
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int parse_fault(const char *s, opts *p)
{
    static const char *const kinds[] = {"", "tamper", "replay", "truncate", "kill", "silent"};
    char name[16];
    unsigned long long ep = 0;
    int rank = 0;
    if (sscanf(s, "%15[a-z]:%d:%llu", name, &rank, &ep) != 3)
        return -1;
    for (int k = 1; k <= 5; k++)
        if (!strcmp(name, kinds[k])) {
            p->fault = k;
            p->fault_rank = rank;
            p->fault_epoch = ep;
            return 0;
        }
    return -1;
}

/* The command line into o (one branch per option); -1 on a bad one. */
static int parse(int argc, char **argv, opts *o)
{
    static unsigned char secret[32];
    memset(o, 0, sizeof *o);
    o->p.balancers = 1;
    o->p.shards = 0;
    o->p.key_size = 8;
    o->p.value_size = 56;
    o->n = 1 << 14;
    o->p.batch = 1024;
    o->batches = 20;
    o->p.timeout_s = 60;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            o->help = 1, used = 0;
        else if (!v)
            return -1;
        else if (!strcmp(a, "--balancers"))
            o->p.balancers = (uint32_t)strtoul(v, NULL, 0);
        else if (!strcmp(a, "--n"))
            o->n = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--shards"))
            o->p.shards = (uint32_t)strtoul(v, NULL, 0);
        else if (!strcmp(a, "--batch"))
            o->p.batch = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--shard-batch"))
            o->p.shard_batch = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--batches"))
            o->batches = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--key-bytes"))
            o->p.key_size = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--value-bytes"))
            o->p.value_size = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--threads"))
            o->p.threads = (uint32_t)strtoul(v, NULL, 0);
        else if (!strcmp(a, "--engines"))
            o->p.engines = (uint32_t)strtoul(v, NULL, 0);
        else if (!strcmp(a, "--timeout"))
            o->p.timeout_s = strtod(v, NULL);
        else if (!strcmp(a, "--seed"))
            o->seed = strtoull(v, NULL, 0), o->p.use_seed = 1;
        else if (!strcmp(a, "--model"))
            o->model = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--pipeline"))
            o->pipeline = strtoul(v, NULL, 0) != 0;
        else if (!strcmp(a, "--secret")) {
            size_t n = strlen(v) / 2;
            for (size_t k = 0; k < n && k < 32; k++)
                secret[k] = (unsigned char)strtoul((char[3]){v[2 * k], v[2 * k + 1], 0}, NULL, 16);
            o->p.secret_len = n < 32 ? n : 32;
        } else if (!strcmp(a, "--fault")) {
            if (parse_fault(v, o))
                return -1;
        } else
            return -1;
        i += used;
    }
    if (!o->p.secret_len) { /* a demonstration secret; a deployment passes its own */
        for (int k = 0; k < 32; k++)
            secret[k] = (unsigned char)(0x5a ^ k);
        o->p.secret_len = 32;
    }
    o->p.secret = secret;
    o->p.seed = o->seed;
    o->p.capacity = o->n + o->n / 4 + 1;
    return 0;
}

static void usage(void)
{
    printf("usage: mpirun -np RANKS obl-mpi --balancers L --n N --shards S --batch B\n"
           "  [--batches Q] [--key-bytes K] [--value-bytes V] [--threads T] [--engines E]\n"
           "  [--shard-batch b] [--timeout SECONDS] [--seed X] [--secret HEX]\n"
           "  [--model EPOCHS] [--fault tamper|replay|truncate|kill|silent:RANK:EPOCH]\n"
           "  [--pipeline 0|1]\n"
           "Ranks 0..L-1 balance, the others hold the S shards. Prints a REPORT line\n"
           "(UnorderedMap, obl_mpi); --model checks mixed epochs against a model.\n"
           "--pipeline 1: two epochs in flight per balancer (obl_mpi_batch_begin/end).\n");
}

/* Ends the job on a failure: the rank's error, then MPI_Abort. */
static void die(obl_mpi *m, obl_err e, const char *what)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "obl-mpi: rank %d: %s failed (%s): %s\n", rank, what, obl_err_name(e),
            obl_mpi_error(m));
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* Batch i of balancer l in epoch q: its ids, ops (model mode) and values. */
static uint64_t draw(uint64_t seed, uint64_t q, int l, size_t i)
{
    return mix(mix(seed ^ q << 24) ^ (uint64_t)l << 48 ^ i);
}

typedef struct timing {
    double lat, split, join, seal, open, wait, shard, shard_crypto;
} timing;

static void add_stats(timing *t, const obl_mpi_stats *st, double lat)
{
    t->lat += lat;
    t->split += st->last_split_us;
    t->join += st->last_join_us;
    t->seal += st->last_seal_us;
    t->open += st->last_open_us;
    t->wait += st->last_wait_us;
    t->shard += st->last_shard_us;
    t->shard_crypto += st->last_shard_crypto_us;
}

static void print_report(const opts *o, int size, const timing *t, double q, double init,
                         double bytes, size_t b, double qps)
{
    double L = o->p.balancers, R = size - L, B = (double)o->p.batch, lat = t->lat / q;
    double crypto = (L * (t->seal + t->open) / q + R * t->shard_crypto / q) / (L * B);
    printf("REPORT_123UnorderedMap|obl_mpi|%s| N:=%" PRIu64 " | Key_bytes := %zu"
           " | Value_bytes := %zu | Shards := %u | Batch_size := %zu | fill:=0.8"
           " | Initialization_time_us := %.2f | Get_latency_us := %.2f"
           " | Get_throughput_qps := %.2f | Balancers := %u | Ranks := %d"
           " | Shard_batch := %zu | Bytes_per_query := %.2f | Encrypt_us_per_query := %.4f"
           " | Split_us := %.2f | Join_us := %.2f | Shard_us := %.2f | Wait_us := %.2f"
           " | Pipeline := %d REPORT_123\n",
           obl_version(), o->n, o->p.key_size, o->p.value_size, o->p.shards, o->p.batch, init, lat,
           qps, o->p.balancers, size, b, bytes / (q * B), crypto, t->split / q, t->join / q,
           t->shard / q, t->wait / q, o->pipeline);
    fflush(stdout);
}

/* The benchmark: build, one warm-up epoch, then the timed get epochs. */
/* Balancer 0 builds ids 0 .. N-1; returns the build's time in us. */
static double bench_build(obl_mpi *m, const opts *o, int rank)
{
    size_t ks = o->p.key_size, vs = o->p.value_size;
    uint64_t n = o->n;
    unsigned char *keys = malloc(rank == 0 ? n * ks + 1 : 1);
    unsigned char *vals = malloc(rank == 0 ? n * vs + 1 : 1);
    for (uint64_t i = 0; rank == 0 && i < n; i++) {
        make_key(keys + i * ks, ks, i, o->seed);
        make_value(vals + i * vs, vs, i, o->seed);
    }
    double t0 = now_us();
    obl_err e = obl_mpi_build(m, keys, vals, rank == 0 ? n : 0);
    double init = now_us() - t0;
    free(keys);
    free(vals);
    if (e != OBL_OK)
        die(m, e, "build");
    return init;
}

/* One epoch's requests and answers in the benchmark. */
typedef struct bench_epoch {
    unsigned char *qk, *out;
    uint64_t *found, *ids;
    double t0;
} bench_epoch;

/* Epoch q's B gets of balancer `rank`: 80% present ids, 20% absent. */
static void bench_draw(const opts *o, int rank, uint64_t q, bench_epoch *x)
{
    uint64_t n = o->n, absent = n / 4 + 1;
    for (size_t i = 0; i < o->p.batch; i++) {
        uint64_t r = draw(o->seed, q, rank, i);
        x->ids[i] = r % 5 < 4 ? (r >> 8) % n : n + (r >> 8) % absent;
        make_key(x->qk + i * o->p.key_size, o->p.key_size, x->ids[i], o->seed);
    }
}

/* Wrong answers of an epoch. */
static long bench_check(const opts *o, const bench_epoch *x, unsigned char *want)
{
    long bad = 0;
    size_t vs = o->p.value_size;
    for (size_t i = 0; i < o->p.batch; i++) {
        int hit = x->ids[i] < o->n;
        make_value(want, vs, x->ids[i], o->seed);
        bad += x->found[i] != (uint64_t)hit || (hit && memcmp(x->out + i * vs, want, vs));
    }
    return bad;
}

/* Ends epoch q (obl_mpi_batch_end, or the whole obl_mpi_batch without
 * --pipeline), checks it and adds its times from q = 1 on. */
static long bench_finish(obl_mpi *m, const opts *o, uint64_t q, bench_epoch *x, timing *t,
                         unsigned char *want)
{
    obl_err e = o->pipeline ? obl_mpi_batch_end(m, x->qk, x->out, x->found)
                            : obl_mpi_batch(m, NULL, x->qk, NULL, x->out, x->found);
    double d = now_us() - x->t0;
    if (e != OBL_OK)
        die(m, e, "get epoch");
    obl_mpi_stats st;
    obl_mpi_get_stats(m, &st);
    if (q > 0)
        add_stats(t, &st, d);
    return bench_check(o, x, want);
}

/* The benchmark: epoch 0 untimed, then the timed get epochs; with
 * --pipeline epoch q+1 begins before epoch q ends. Bytes count the
 * requests of epochs 1.. and their answers. */
static int run_bench(obl_mpi *m, const opts *o, int rank, int size)
{
    size_t B = o->p.batch;
    double init = bench_build(m, o, rank), t1 = 0;
    bench_epoch x[2];
    for (int k = 0; k < 2; k++)
        x[k] = (bench_epoch){malloc(B * o->p.key_size), malloc(B * o->p.value_size),
                             malloc(B * 8), malloc(B * 8), 0};
    unsigned char *want = malloc(o->p.value_size);
    uint64_t sent0 = 0, recv0 = 0;
    long bad = 0;
    timing t = {0};
    obl_mpi_stats st;
    for (uint64_t q = 0; q <= o->batches; q++) {
        bench_epoch *c = &x[q & 1];
        bench_draw(o, rank, q, c);
        obl_mpi_get_stats(m, &st);
        if (q == 1)
            sent0 = st.bytes_sent, recv0 = st.bytes_recv, t1 = now_us();
        c->t0 = now_us();
        if (o->pipeline && obl_mpi_batch_begin(m, NULL, c->qk, NULL) != OBL_OK)
            die(m, OBL_ERR_IO, "begin of a get epoch");
        if (!o->pipeline || q > 0)
            bad += bench_finish(m, o, o->pipeline ? q - 1 : q, &x[(q - o->pipeline) & 1], &t, want);
        if (o->pipeline && q == 1) { /* epoch 0's answer arrived after t1 */
            obl_mpi_get_stats(m, &st);
            recv0 = st.bytes_recv;
        }
    }
    if (o->pipeline)
        bad += bench_finish(m, o, o->batches, &x[o->batches & 1], &t, want);
    double elapsed = now_us() - t1;
    obl_mpi_get_stats(m, &st);
    obl_err e = obl_mpi_stop(m);
    if (e != OBL_OK)
        die(m, e, "stop");
    if (bad)
        fprintf(stderr, "obl-mpi: rank %d: %ld wrong answers\n", rank, bad);
    if (rank == 0 && o->batches)
        print_report(o, size, &t, (double)o->batches, init,
                     (double)(st.bytes_sent - sent0 + st.bytes_recv - recv0), st.b,
                     (double)o->p.balancers * (double)B * (double)o->batches / elapsed * 1e6);
    for (int k = 0; k < 2; k++)
        free(x[k].qk), free(x[k].out), free(x[k].found), free(x[k].ids);
    free(want);
    return bad ? 1 : 0;
}

/* A plain model: present flags and values of ids 0 .. n-1. */
typedef struct model {
    uint64_t n;
    unsigned char *present, *val;
} model;

/* Balancer l's requests of epoch q: ops (NULL in a get epoch), ids, values. */
static void model_reqs(const opts *o, uint64_t q, int l, uint64_t *ops, uint64_t *ids,
                       unsigned char *vin)
{
    size_t vs = o->p.value_size;
    for (size_t i = 0; i < o->p.batch; i++) {
        uint64_t r = draw(o->seed, q, l, i);
        ids[i] = (r >> 16) % o->n;
        ops[i] = q % 4 == 3 ? 0 : r % 5 < 2 ? 0 : r % 5 < 4 ? 1 : 2; /* get, put, erase */
        make_value(vin + i * vs, vs, r, o->seed + 1);
    }
}

/* Checks this balancer's answers against the state before the epoch. */
static long model_check(const model *md, const opts *o, const uint64_t *ids,
                        const unsigned char *out, const uint64_t *found)
{
    size_t vs = o->p.value_size;
    long bad = 0;
    for (size_t i = 0; i < o->p.batch; i++) {
        uint64_t id = ids[i], p = md->present[id];
        bad += found[i] != p;
        for (size_t k = 0; k < vs; k++)
            bad += out[i * vs + k] != (p ? md->val[id * vs + k] : 0);
    }
    return bad;
}

static void model_apply(model *md, const opts *o, const uint64_t *ops, const uint64_t *ids,
                        const unsigned char *vin)
{
    size_t vs = o->p.value_size;
    for (size_t i = 0; i < o->p.batch; i++) {
        if (ops[i] == 1)
            memcpy(md->val + ids[i] * vs, vin + i * vs, vs);
        if (ops[i])
            md->present[ids[i]] = ops[i] == 1;
    }
}

/* One epoch's requests and answers in model mode. */
typedef struct model_epoch {
    uint64_t *ops, *ids, *found;
    unsigned char *qk, *vin, *out;
} model_epoch;

static void model_epoch_alloc(model_epoch *x, const opts *o)
{
    size_t B = o->p.batch;
    *x = (model_epoch){malloc(B * 8), malloc(B * 8), malloc(B * 8), malloc(B * o->p.key_size),
                       malloc(B * o->p.value_size), malloc(B * o->p.value_size)};
}

static void model_epoch_free(model_epoch *x)
{
    free(x->ops), free(x->ids), free(x->found), free(x->qk), free(x->vin), free(x->out);
}

/* Ends epoch q (obl_mpi_batch_end, or all of obl_mpi_batch without
 * --pipeline), checks its answers against the state before it, then
 * applies every balancer's requests of q (drawn again into scratch). */
static long model_finish(obl_mpi *m, model *md, const opts *o, uint64_t q, model_epoch *x,
                         model_epoch *scratch)
{
    int gets = q % 4 == 3;
    obl_err e = o->pipeline ? obl_mpi_batch_end(m, x->qk, x->out, x->found)
                            : obl_mpi_batch(m, gets ? NULL : x->ops, x->qk, gets ? NULL : x->vin,
                                            x->out, x->found);
    if (e != OBL_OK)
        die(m, e, gets ? "get epoch" : "mixed epoch");
    long bad = model_check(md, o, x->ids, x->out, x->found);
    for (int l = 0; !gets && l < (int)o->p.balancers; l++) {
        model_reqs(o, q, l, scratch->ops, scratch->ids, scratch->vin);
        model_apply(md, o, scratch->ops, scratch->ids, scratch->vin);
    }
    return bad;
}

/* Model mode: build half the ids, then mixed (every fourth: get) epochs;
 * with --pipeline epoch q+1 begins before epoch q ends. */
static int run_model(obl_mpi *m, const opts *o, int rank, int size)
{
    size_t ks = o->p.key_size, vs = o->p.value_size, B = o->p.batch, h = o->n / 2;
    model md = {o->n, calloc(o->n, 1), calloc(o->n, vs)};
    unsigned char *keys = malloc(h * ks + 1), *vals = malloc(h * vs + 1);
    for (size_t i = 0; i < h; i++) {
        make_key(keys + i * ks, ks, 2 * i, o->seed);
        make_value(vals + i * vs, vs, 2 * i, o->seed);
        md.present[2 * i] = 1;
        memcpy(md.val + 2 * i * vs, vals + i * vs, vs);
    }
    obl_err e = obl_mpi_build(m, keys, vals, rank == 0 ? h : 0);
    if (e != OBL_OK)
        die(m, e, "build");
    model_epoch x[3];
    for (int k = 0; k < 3; k++)
        model_epoch_alloc(&x[k], o);
    long bad = 0;
    for (uint64_t q = 0; q < o->model; q++) {
        model_epoch *c = &x[q & 1];
        model_reqs(o, q, rank, c->ops, c->ids, c->vin);
        for (size_t i = 0; i < B; i++)
            make_key(c->qk + i * ks, ks, c->ids[i], o->seed);
        int gets = q % 4 == 3;
        if (o->pipeline &&
            obl_mpi_batch_begin(m, gets ? NULL : c->ops, c->qk, gets ? NULL : c->vin) != OBL_OK)
            die(m, OBL_ERR_IO, "begin of an epoch");
        if (!o->pipeline || q > 0)
            bad += model_finish(m, &md, o, q - (uint64_t)o->pipeline,
                                &x[(q - (uint64_t)o->pipeline) & 1], &x[2]);
    }
    if (o->pipeline && o->model)
        bad += model_finish(m, &md, o, o->model - 1, &x[(o->model - 1) & 1], &x[2]);
    e = obl_mpi_stop(m);
    if (e != OBL_OK)
        die(m, e, "stop");
    printf("obl-mpi model: rank %d of %d: %" PRIu64 " epochs%s, %ld answers checked, %ld wrong "
           "(seed %" PRIu64 ")\n",
           rank, size, o->model, o->pipeline ? " (pipelined)" : "", (long)(o->model * B), bad,
           o->seed);
    fflush(stdout);
    for (int k = 0; k < 3; k++)
        model_epoch_free(&x[k]);
    free(keys), free(vals), free(md.present), free(md.val);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    opts o;
    if (parse(argc, argv, &o) || o.help) {
        if (rank == 0)
            o.help ? usage() : (void)fprintf(stderr, "obl-mpi: bad arguments (--help)\n");
        MPI_Finalize();
        return o.help ? 0 : 2;
    }
    if (!o.p.shards)
        o.p.shards = (uint32_t)(size > (int)o.p.balancers ? size - (int)o.p.balancers : 1);
    obl_mpi *m = NULL;
    obl_err e = obl_mpi_create(&m, MPI_COMM_WORLD, &o.p);
    if (e != OBL_OK) {
        if (rank == 0)
            fprintf(stderr, "obl-mpi: refused: %s\n", obl_mpi_error(m));
        obl_mpi_destroy(m);
        MPI_Finalize();
        return 2;
    }
    int rc = 0;
    obl_mpi_inject(m, o.fault, o.fault_rank, o.fault_epoch);
    if (obl_mpi_role(m) == OBL_MPI_SHARD) {
        e = obl_mpi_serve(m);
        if (e != OBL_OK)
            die(m, e, "serve");
    } else {
        rc = o.model ? run_model(m, &o, rank, size) : run_bench(m, &o, rank, size);
    }
    obl_mpi_destroy(m);
    MPI_Finalize();
    return rc;
}
