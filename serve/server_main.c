/*
 * obl-server: an oblivious key-value lookup server over TCP
 * (docs/server.md). Builds the map, then serves it with server.c's loop
 * until SIGTERM or SIGINT. With --backend mpi it runs under mpirun as every
 * rank of an obl_mpi deployment: rank 0 serves, the others hold the shards
 * (docs/mpi.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "backend.h"
#include "server.h"

/* --spin-us's default (docs/server.md, "The server"). */
#define SPIN_US 50

static void usage(FILE *f)
{
    fputs("usage: obl-server [--host ADDR] [--port P] [--n N] [--key-bytes K]\n"
          "                  [--value-bytes V] [--max-batch M] [--pad none|pow2]\n"
          "                  [--capacity C] [--seed S] [--map-seed S]\n"
          "                  [--backend omap|shard|mpi] [--shards S] [--threads T]\n"
          "                  [--ops all|get] [--max-conns C] [--batch-thread on|off]\n"
          "                  [--spin-us US] [--cpu-loop C] [--cpu-batch C]\n"
          "                  [--mpi-timeout SECONDS] [--secret HEX]\n"
          "       mpirun -np RANKS obl-server --backend mpi ... (scripts/mpirun.sh)\n\n"
          "Builds an oblivious map of N entries (key i and its value derived from\n"
          "i and --seed, see docs/server.md) and answers length-prefixed binary\n"
          "requests on TCP in dynamic batches: whatever has arrived when the\n"
          "previous batch finishes, at most M. Prints 'obl-server: listening on\n"
          "ADDR:PORT' once ready; SIGTERM or SIGINT answers what has arrived and exits.\n\n"
          "  --host ADDR      numeric IPv4/IPv6 address to listen on (127.0.0.1)\n"
          "  --port P         TCP port, 0 = any free one (7070)\n"
          "  --n N            entries, e.g. 2^20 (1048576)\n"
          "  --key-bytes K    key size (8)\n"
          "  --value-bytes V  value size (56)\n"
          "  --max-batch M    largest batch, 1..65536 (256; 1024 with --backend shard)\n"
          "  --pad POLICY     none, or pow2: batch sizes rounded up to a power of\n"
          "                   two (or M) with dummy requests (none)\n"
          "  --capacity C     most entries the map may hold (N + N/4)\n"
          "  --seed S         the key/value derivation seed (1)\n"
          "  --map-seed S     seed of the map's own randomness, for reproducible\n"
          "                   runs only; 0 = getrandom(2), which keeps it secret (0)\n"
          "  --backend NAME   omap: obl_omap, one request at a time; shard: the sharded\n"
          "                   map, a batch at a time; mpi: the sharded map over MPI\n"
          "                   ranks, rank 0 serving, epochs of M requests; the last\n"
          "                   two where built (omap)\n"
          "  --shards S       shards of the shard backend, 0 = the online cores (0);\n"
          "                   of the mpi backend (one per shard rank)\n"
          "  --threads T      its worker threads, 0 = the online cores (0); mpi: each\n"
          "                   shard rank's threads, 0 = 1\n"
          "  --ops KIND       all: GET, PUT, ERASE; get: GETs only, the others get\n"
          "                   BAD_OP (the shard backend then uses its get path) (all)\n"
          "  --max-conns C    simultaneous connections (1024)\n"
          "  --batch-thread B on: batches of more than 8 run on a second thread\n"
          "                   while the loop writes the previous batch's answers;\n"
          "                   off: every batch on the loop's thread (on; always on\n"
          "                   with mpi)\n"
          "  --spin-us US     the batch thread polls this long for requests after a\n"
          "                   batch before it sleeps (waking it costs more) (50)\n"
          "  --cpu-loop C     pin the loop's thread (reads, writes) to CPU C, or none\n"
          "  --cpu-batch C    pin the batch thread (the map) to CPU C, or none (none)\n"
          "  --mpi-timeout S  mpi: a rank's deadline for any message; rank 0 runs a\n"
          "                   keep-alive epoch after S/4 idle seconds (60)\n"
          "  --secret HEX     mpi: the ranks' shared secret, 16..32 bytes in hex (a\n"
          "                   fixed demonstration secret; a deployment passes its own)\n"
          "Under mpirun rank 0 prints 'obl-server: pid P' before listening: SIGTERM\n"
          "to P stops the deployment cleanly (SIGTERM to mpirun kills every rank).\n",
          f);
}

typedef struct opts {
    serve_config cfg;
    serve_map_params map;
    const char *backend;
    uint64_t shards, threads;
    int shards_set;
    serve_mpi_opts mpi;
    unsigned char secret[32];
} opts;

/* --secret HEX: 16 .. 32 bytes; 0 on success. */
static int parse_secret(const char *v, opts *o)
{
    size_t n = strlen(v);
    if (n % 2 || n < 32 || n > 64)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        char h[3] = {v[2 * i], v[2 * i + 1], 0}, *end;
        o->secret[i] = (unsigned char)strtoul(h, &end, 16);
        if (*end)
            return -1;
    }
    o->mpi.secret_len = n / 2;
    return 0;
}

/* The flags' numbers before they are checked and stored in opts. */
typedef struct raw_flags {
    uint64_t port, mb, conns, cap, spin;
} raw_flags;

/* The defaults of every flag. */
static void parse_defaults(opts *o, raw_flags *r)
{
    *r = (raw_flags){.port = 7070, .mb = 0, .conns = 1024, .cap = 0, .spin = 0};
    o->cfg.host = "127.0.0.1";
    o->cfg.batch_thread = 1;
    o->cfg.spin_us = SPIN_US;
    o->cfg.cpu_loop = o->cfg.cpu_batch = -1;
    o->map = (serve_map_params){.n = 1u << 20, .key_bytes = 8, .value_bytes = 56,
                                .key_seed = 1, .map_seed = 0};
    o->backend = "omap";
    o->shards = 0;
}

/* Flag a with value v: 1 ok, 0 a bad value, -1 an unknown flag. */
static int parse_flag(const char *a, const char *v, opts *o, raw_flags *r)
{
    uint64_t kb = o->map.key_bytes, vb = o->map.value_bytes;
    int ok = 1;
    if (!strcmp(a, "--host"))
        o->cfg.host = v;
    else if (!strcmp(a, "--port"))
        ok = bench_parse_u64(v, &r->port) && r->port <= 65535;
    else if (!strcmp(a, "--n"))
        ok = bench_parse_u64(v, &o->map.n) && o->map.n >= 1 && o->map.n <= (UINT64_C(1) << 32);
    else if (!strcmp(a, "--key-bytes"))
        ok = bench_parse_u64(v, &kb) && kb >= 1 && kb <= 1024;
    else if (!strcmp(a, "--value-bytes"))
        ok = bench_parse_u64(v, &vb) && vb >= 1 && vb <= 65536;
    else if (!strcmp(a, "--max-batch"))
        ok = bench_parse_u64(v, &r->mb) && r->mb >= 1 && r->mb <= SERVE_MAX_BATCH;
    else if (!strcmp(a, "--pad"))
        ok = !strcmp(v, "none") || !strcmp(v, "pow2"),
        o->cfg.pad = !strcmp(v, "pow2") ? SERVE_PAD_POW2 : SERVE_PAD_NONE;
    else if (!strcmp(a, "--capacity"))
        ok = bench_parse_u64(v, &r->cap);
    else if (!strcmp(a, "--seed"))
        ok = bench_parse_u64(v, &o->map.key_seed);
    else if (!strcmp(a, "--map-seed"))
        ok = bench_parse_u64(v, &o->map.map_seed);
    else if (!strcmp(a, "--backend"))
        ok = !strcmp(v, "omap") || !strcmp(v, "shard") || !strcmp(v, "mpi"), o->backend = v;
    else if (!strcmp(a, "--shards"))
        ok = bench_parse_u64(v, &o->shards) && o->shards <= 4096, o->shards_set = 1;
    else if (!strcmp(a, "--batch-thread"))
        ok = !strcmp(v, "on") || !strcmp(v, "off"), o->cfg.batch_thread = !strcmp(v, "on");
    else if (!strcmp(a, "--spin-us"))
        ok = bench_parse_u64(v, &r->spin) && r->spin <= 1000000,
        o->cfg.spin_us = (uint32_t)r->spin;
    else if (!strcmp(a, "--cpu-loop"))
        ok = serve_parse_cpu(v, &o->cfg.cpu_loop);
    else if (!strcmp(a, "--cpu-batch"))
        ok = serve_parse_cpu(v, &o->cfg.cpu_batch);
    else if (!strcmp(a, "--mpi-timeout"))
        ok = (o->mpi.timeout_s = strtod(v, NULL)) >= 0.1 && o->mpi.timeout_s <= 86400;
    else if (!strcmp(a, "--secret"))
        ok = parse_secret(v, o) == 0;
    else if (!strcmp(a, "--ops"))
        ok = !strcmp(v, "all") || !strcmp(v, "get"), o->cfg.gets_only = !strcmp(v, "get");
    else if (!strcmp(a, "--threads"))
        ok = bench_parse_u64(v, &o->threads) && o->threads <= 1024;
    else if (!strcmp(a, "--max-conns"))
        ok = bench_parse_u64(v, &r->conns) && r->conns >= 1 && r->conns <= 65536;
    else
        return -1;
    if (ok) {
        o->map.key_bytes = kb;
        o->map.value_bytes = vb;
    }
    return ok;
}

/* The derived settings and the checks across flags: 0 ok, 2 bad usage. */
static int parse_finish(opts *o, const raw_flags *r)
{
    o->map.capacity = r->cap ? r->cap : o->map.n + o->map.n / 4;
    if (o->map.capacity < o->map.n || o->map.n > serve_key_space(o->map.key_bytes)) {
        fprintf(stderr, "obl-server: need N <= capacity and N keys of K bytes\n");
        return 2;
    }
    uint64_t mb = r->mb;
    if (mb == 0) /* the shard backend's balancer pays for itself over larger batches */
        mb = strcmp(o->backend, "shard") ? 256 : 1024;
    if (o->shards == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        o->shards = c < 1 ? 1 : (uint64_t)c;
    }
    o->cfg.port = (unsigned)r->port;
    o->cfg.max_batch = (uint32_t)mb;
    o->cfg.max_conns = (uint32_t)r->conns;
    o->cfg.n = o->map.n;
    o->cfg.capacity = o->map.capacity;
    o->cfg.key_seed = o->map.key_seed;
    if (!o->mpi.secret_len) { /* a demonstration secret, as obl-mpi's */
        for (int k = 0; k < 32; k++)
            o->secret[k] = (unsigned char)(0x5a ^ k);
        o->mpi.secret_len = 32;
    }
    o->mpi.secret = o->secret;
    o->mpi.shards = o->shards_set ? (uint32_t)o->shards : 0;
    o->mpi.threads = (uint32_t)o->threads;
    if (!strcmp(o->backend, "mpi"))
        o->cfg.batch_thread = 1; /* the MPI backend's keep-alive runs there */
    return 0;
}

/* 0 ok, 1 --help, 2 bad usage (message printed). */
static int parse(int argc, char **argv, opts *o)
{
    raw_flags r;
    parse_defaults(o, &r);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return 1;
        if (!v) {
            fprintf(stderr, "obl-server: %s needs a value (see --help)\n", a);
            return 2;
        }
        i++;
        int ok = parse_flag(a, v, o, &r);
        if (ok < 0) {
            fprintf(stderr, "obl-server: unknown flag '%s' (see --help)\n", a);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "obl-server: bad value '%s' for %s (see --help)\n", v, a);
            return 2;
        }
    }
    return parse_finish(o, &r);
}

static void print_totals(const serve_totals *t)
{
    fprintf(stderr,
            "obl-server: %" PRIu64 " batches, %" PRIu64 " requests (%.2f per batch), %" PRIu64
            " dummies, %" PRIu64 " connections, %" PRIu64 " bad frames, %" PRIu64
            " bad ops, %" PRIu64 " map errors\nobl-server: batches by size:",
            t->batches, t->requests, t->batches ? (double)t->requests / (double)t->batches : 0.0,
            t->dummies, t->conns, t->bad_frames, t->bad_ops, t->map_errors);
    for (int i = 0; i < 18; i++)
        if (t->size_log2[i])
            fprintf(stderr, " [%u..%u]: %" PRIu64, 1u << i, (2u << i) - 1, t->size_log2[i]);
    fputc('\n', stderr);
}

int main(int argc, char **argv)
{
    opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    if (rc)
        return 2;
    serve_backend be;
    if (serve_block_signals() != 0) {
        fprintf(stderr, "obl-server: cannot block SIGTERM/SIGINT\n");
        return 1;
    }
    uint64_t t0 = serve_now_ns();
    obl_err e;
    if (!strcmp(o.backend, "mpi")) {
#ifdef OBL_SERVE_HAVE_MPI
        int shard_rank = 0;
        e = serve_backend_mpi(&be, &o.map, &o.mpi, o.cfg.max_batch, o.cfg.gets_only, &shard_rank);
        if (shard_rank)
            return 0; /* served until rank 0 stopped it (failures abort the job) */
        if (e == OBL_OK) /* the process to signal (mpirun kills every rank on SIGTERM) */
            printf("obl-server: pid %ld\n", (long)getpid());
#else
        e = OBL_ERR_UNSUPPORTED;
#endif
    } else {
        e = strcmp(o.backend, "shard")
                ? serve_backend_omap(&be, &o.map)
                : serve_backend_shard(&be, &o.map, (uint32_t)o.shards, (uint32_t)o.threads,
                                      o.cfg.gets_only);
    }
    if (e != OBL_OK) {
        fprintf(stderr, "obl-server: %s backend: map build failed: %s\n", o.backend,
                obl_strerror(e));
        return 1;
    }
    fprintf(stderr,
            "obl-server: %s map of N=%" PRIu64 " (capacity %" PRIu64 "), %zu/%zu bytes, built in "
            "%.2f s; max batch %u, pad %s",
            be.name, o.map.n, o.map.capacity, o.map.key_bytes, o.map.value_bytes,
            (double)(serve_now_ns() - t0) / 1e9, o.cfg.max_batch,
            o.cfg.pad == SERVE_PAD_POW2 ? "pow2" : "none");
    if (!strcmp(o.backend, "shard"))
        fprintf(stderr, ", %" PRIu64 " shards, threads %" PRIu64 " (0: the cores)", o.shards,
                o.threads);
    fputc('\n', stderr);
    serve_totals tot = {0};
    rc = serve_run(&o.cfg, &be, stdout, &tot);
    print_totals(&tot);
    serve_backend_destroy(&be);
    return rc ? 1 : 0;
}
