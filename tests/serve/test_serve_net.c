/* SPDX-License-Identifier: MIT */
/*
 * obl-server and obl-load over loopback (ephemeral ports): three clients
 * whose every answer is checked against a model while other clients send
 * garbage, unknown ops, short frames, disconnect mid-batch or half-close
 * (batches on the loop's thread, then on the batch thread); a flood past
 * the queue's and the input buffer's bounds answered in order, both ways;
 * the batch-size sequence with padding is the same whatever the keys; an
 * obl-load run checks its answers; SIGTERM under load ends the server
 * cleanly with correct answers to what it had read.
 * With --mpirun SCRIPT instead: obl-server in front of an obl_mpi
 * deployment of three ranks (rank 0 serving, two shard ranks), the model
 * clients and obl-load against it, idle past the ranks' deadline (the
 * keep-alive epochs), SIGTERM to rank 0 ends the job with status 0.
 * Usage: test_serve_net -s SEED --server PATH --load PATH [--mpirun SCRIPT]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net_util.h"
#include "testutil.h"
#include "wire.h"

#define N 1024u
#define K 8u
#define V 56u
#define REQ (SERVE_REQ_HEAD + K + V)
#define RESP (SERVE_RESP_HEAD + V)
#define CLIENTS 3
#define IDS (N + 96u)
#define MAX_W 24

static const char *server_path, *load_path;
static uint64_t key_seed = 1; /* the server's default --seed */

typedef struct client {
    int fd;
    unsigned char present[IDS];
    unsigned char val[IDS][V];
} client;

static void frame(unsigned char *out, uint64_t id, uint32_t op, uint64_t key_id,
                  const unsigned char *value)
{
    unsigned char key[K];
    serve_key(key, K, key_id, key_seed);
    serve_req_encode(out, id, op, key, K, value, V);
}

static void client_init(client *c, unsigned port)
{
    serve_hello h;
    c->fd = net_connect(port, &h);
    CHECK(c->fd >= 0);
    CHECK_EQ_U64(h.n, N);
    for (uint64_t i = 0; i < IDS; i++) {
        c->present[i] = i < N;
        if (i < N)
            serve_value(c->val[i], V, i, key_seed);
    }
}

typedef struct window {
    size_t w;
    uint32_t op[MAX_W];
    uint64_t id[MAX_W], seq[MAX_W];
    unsigned char v[MAX_W][V];
} window;

/* Client ci sends a window of random requests on its own ids (ci mod 3);
 * distinct: no id twice in a window, so that a backend whose batches see
 * the map as before the batch (shard, mpi) gives the answers of the
 * sequential model however the server cuts the windows into batches. */
static void client_send(client *c, int ci, window *w, test_rng *rng, uint64_t *seq, int distinct)
{
    unsigned char buf[MAX_W * REQ];
    w->w = 1 + test_rng_below(rng, MAX_W);
    for (size_t i = 0; i < w->w; i++) {
        uint64_t r = test_rng_below(rng, 10);
        w->op[i] = r < 5 ? SERVE_OP_GET : r < 8 ? SERVE_OP_PUT : SERVE_OP_ERASE;
        int again = 1;
        while (again) {
            w->id[i] = test_rng_below(rng, IDS / CLIENTS) * CLIENTS + (uint64_t)ci;
            again = 0;
            for (size_t j = 0; distinct && j < i; j++)
                again |= w->id[j] == w->id[i];
        }
        w->seq[i] = (*seq)++;
        test_rng_fill(rng, w->v[i], V);
        frame(buf + i * REQ, w->seq[i], w->op[i], w->id[i], w->v[i]);
    }
    CHECK(net_send_all(c->fd, buf, w->w * REQ) == 0);
}

/* Reads the window's answers, in order, and checks them on the model. */
static void client_check(client *c, const window *w)
{
    for (size_t i = 0; i < w->w; i++) {
        unsigned char buf[RESP], want[V] = {0};
        serve_resp a;
        if (net_recv_all(c->fd, buf, RESP) != 1 || serve_resp_decode(&a, buf, V) != 0) {
            CHECK(!"an answer");
            return;
        }
        uint64_t id = w->id[i];
        if (c->present[id])
            memcpy(want, c->val[id], V);
        CHECK_EQ_U64(a.id, w->seq[i]);
        CHECK_EQ_U64(a.status, SERVE_OK);
        CHECK_EQ_U64(a.found, c->present[id]);
        CHECK(memcmp(a.value, want, V) == 0);
        CHECK(a.arrival_ns <= a.dispatch_ns && a.dispatch_ns <= a.complete_ns);
        CHECK(a.batch >= 1 && a.batch <= 256);
        if (w->op[i] == SERVE_OP_PUT) {
            c->present[id] = 1;
            memcpy(c->val[id], w->v[i], V);
        } else if (w->op[i] == SERVE_OP_ERASE) {
            c->present[id] = 0;
        }
    }
}

/* A client that sends a frame with a wrong length gets BAD_FRAME, then EOF. */
static void garbage_client(unsigned port, test_rng *rng, uint32_t len_field)
{
    serve_hello h;
    int fd = net_connect(port, &h);
    unsigned char junk[200], buf[RESP];
    test_rng_fill(rng, junk, sizeof(junk));
    serve_put32(junk, len_field);
    CHECK(fd >= 0 && net_send_all(fd, junk, sizeof(junk)) == 0);
    serve_resp a;
    CHECK(net_recv_all(fd, buf, RESP) == 1 && serve_resp_decode(&a, buf, V) == 0);
    CHECK_EQ_U64(a.status, SERVE_BAD_FRAME);
    CHECK_EQ_U64(net_recv_all(fd, buf, 1), 0); /* closed by the server */
    close(fd);
}

/* An unknown op gets BAD_OP; the connection stays usable. */
static void bad_op_client(unsigned port)
{
    serve_hello h;
    int fd = net_connect(port, &h);
    unsigned char req[2 * REQ], buf[RESP], zero[V] = {0};
    frame(req, 77, 9, 1, NULL);
    frame(req + REQ, 78, SERVE_OP_GET, N + 5000, NULL); /* a key never stored */
    CHECK(fd >= 0 && net_send_all(fd, req, sizeof(req)) == 0);
    serve_resp a;
    CHECK(net_recv_all(fd, buf, RESP) == 1 && serve_resp_decode(&a, buf, V) == 0);
    CHECK_EQ_U64(a.id, 77);
    CHECK_EQ_U64(a.status, SERVE_BAD_OP);
    CHECK(net_recv_all(fd, buf, RESP) == 1 && serve_resp_decode(&a, buf, V) == 0);
    CHECK_EQ_U64(a.id, 78);
    CHECK_EQ_U64(a.status, SERVE_OK);
    CHECK_EQ_U64(a.found, 0);
    CHECK(memcmp(a.value, zero, V) == 0);
    close(fd);
}

/* Clients that leave: mid-batch (200 requests, never read), after half a
 * frame, and one that half-closes and still reads its answers. */
static void leaving_clients(unsigned port)
{
    static unsigned char req[200 * REQ];
    serve_hello h;
    for (uint64_t i = 0; i < 200; i++)
        frame(req + i * REQ, i, SERVE_OP_GET, N + 7000 + i, NULL);
    int fd = net_connect(port, &h);
    CHECK(fd >= 0 && net_send_all(fd, req, sizeof(req)) == 0);
    close(fd);
    fd = net_connect(port, &h);
    CHECK(fd >= 0 && net_send_all(fd, req, REQ / 2) == 0);
    close(fd);
    fd = net_connect(port, &h);
    CHECK(fd >= 0 && net_send_all(fd, req, 10 * REQ) == 0);
    shutdown(fd, SHUT_WR);
    unsigned char buf[RESP];
    for (int i = 0; i < 10; i++) {
        serve_resp a;
        CHECK(net_recv_all(fd, buf, RESP) == 1 && serve_resp_decode(&a, buf, V) == 0);
        CHECK_EQ_U64(a.id, (uint64_t)i);
        CHECK_EQ_U64(a.found, 0);
    }
    CHECK_EQ_U64(net_recv_all(fd, buf, 1), 0);
    close(fd);
}

/* The model clients: `rounds` windows each (distinct: see client_send),
 * every answer checked; between a round's sends and its checks,
 * between(port, round, rng) does what else the test wants. */
static void model_rounds(unsigned port, int rounds, int distinct,
                         void (*between)(unsigned, int, test_rng *))
{
    static client cs[CLIENTS];
    window w[CLIENTS];
    test_rng rng;
    test_rng_seed(&rng, T.seed);
    uint64_t seq[CLIENTS] = {0};
    for (int i = 0; i < CLIENTS; i++)
        client_init(&cs[i], port);
    for (int round = 0; round < rounds && !T.failures; round++) {
        for (int i = 0; i < CLIENTS; i++)
            client_send(&cs[i], i, &w[i], &rng, &seq[i], distinct);
        between(port, round, &rng);
        for (int i = 0; i < CLIENTS; i++)
            client_check(&cs[i], &w[i]);
    }
    for (int i = 0; i < CLIENTS; i++)
        close(cs[i].fd);
}

/* Other clients meanwhile: garbage, a bad op, clients that leave. */
static void misbehave(unsigned port, int round, test_rng *rng)
{
    if (round == 10)
        garbage_client(port, rng, 0xffffffffu);
    if (round == 20)
        garbage_client(port, rng, 5); /* a length shorter than a frame */
    if (round == 30)
        bad_op_client(port);
    if (round == 40)
        leaving_clients(port);
}

/* batch_thread "on": batches run on the server's second thread while its
 * loop reads and writes (the path of the mpi backend); spin: that thread
 * polls for requests after each batch. */
static void test_model_clients(const char *batch_thread, const char *spin)
{
    test_server s;
    const char *args[] = {"--n", "1024", "--batch-thread", batch_thread, "--spin-us", spin, NULL};
    if (net_server_start(&s, server_path, args) != 0) {
        CHECK(!"obl-server started");
        return;
    }
    model_rounds(s.port, 60, 0, misbehave);
    CHECK_EQ_U64(net_server_stop(&s, SIGINT, 10), 0);
}

/* One client floods the server with FLOOD requests in one go, more than its
 * queue (4096) and input buffer (64 KiB) hold, in batches of at most 8:
 * GETs and PUTs on 64 keys, each answer checked against the sequential model
 * in order (the batch thread takes its next batch while the loop reads and
 * writes the previous ones' answers; no request is run twice or lost).
 * extra: more server flags (NULL-terminated, at most 6). */
#define FLOOD 20000u
static void test_flood(const char *batch_thread, const char *const *extra)
{
    test_server s;
    const char *args[16] = {"--n", "1024", "--max-batch", "8", "--batch-thread", batch_thread};
    for (size_t i = 0; extra && extra[i] && i < 6; i++)
        args[6 + i] = extra[i];
    if (net_server_start(&s, server_path, args) != 0) {
        CHECK(!"obl-server started");
        return;
    }
    static unsigned char req[FLOOD * REQ], vals[FLOOD][V];
    static uint32_t ops[FLOOD];
    unsigned char cur[64][V];
    test_rng rng;
    test_rng_seed(&rng, T.seed ^ 0xf100d);
    for (uint64_t i = 0; i < FLOOD; i++) {
        ops[i] = test_rng_below(&rng, 4) ? SERVE_OP_GET : SERVE_OP_PUT;
        test_rng_fill(&rng, vals[i], V);
        frame(req + i * REQ, i, ops[i], i % 64, vals[i]);
    }
    for (uint64_t k = 0; k < 64; k++)
        serve_value(cur[k], V, k, key_seed);
    serve_hello h;
    int fd = net_connect(s.port, &h);
    CHECK(fd >= 0 && net_send_all(fd, req, sizeof(req)) == 0);
    uint64_t got = 0;
    unsigned char buf[RESP];
    serve_resp a;
    while (got < FLOOD && net_recv_all(fd, buf, RESP) == 1 && serve_resp_decode(&a, buf, V) == 0) {
        CHECK_EQ_U64(a.id, got);
        CHECK(a.status == SERVE_OK && a.found == 1 && a.batch >= 1 && a.batch <= 8);
        CHECK(memcmp(a.value, cur[got % 64], V) == 0);
        if (ops[got] == SERVE_OP_PUT)
            memcpy(cur[got % 64], vals[got], V);
        got++;
    }
    CHECK_EQ_U64(got, FLOOD);
    close(fd);
    CHECK_EQ_U64(net_server_stop(&s, SIGTERM, 10), 0);
}

/* The first CPU this process may run on (the pinned server's). */
static int first_cpu(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                return c;
    return 0;
}

/* A CPU the server may not use: it says so and exits before listening; a
 * malformed one is bad usage. */
static void test_bad_cpu(void)
{
    test_server s;
    const char *none[] = {"--n", "1024", "--cpu-batch", "1000", NULL};
    const char *bad[] = {"--n", "1024", "--cpu-loop", "zero", NULL};
    CHECK(net_server_start(&s, server_path, none) != 0);
    CHECK(net_server_start(&s, server_path, bad) != 0);
}

/* Bursts sent whole, each after the previous one's answers: the executed
 * batch sizes, padded to powers of two, for a given key pattern. */
static void burst_sizes(unsigned port, int pattern, uint32_t *sizes, size_t nb,
                        const size_t *bursts)
{
    serve_hello h;
    int fd = net_connect(port, &h);
    CHECK(fd >= 0);
    test_rng rng;
    test_rng_seed(&rng, T.seed + (uint64_t)pattern);
    static unsigned char req[64 * REQ];
    for (size_t b = 0; b < nb && fd >= 0; b++) {
        for (size_t i = 0; i < bursts[b]; i++) {
            uint64_t id = pattern == 0 ? test_rng_below(&rng, N)          /* hits */
                          : pattern == 1 ? N + 9000 + test_rng_below(&rng, 1000) /* misses */
                                         : test_rng_below(&rng, 2 * N);   /* mixed, puts */
            frame(req + i * REQ, i, pattern == 2 ? (uint32_t)(i % 3) : SERVE_OP_GET, id, NULL);
        }
        CHECK(net_send_all(fd, req, bursts[b] * REQ) == 0);
        sizes[b] = 0;
        for (size_t i = 0; i < bursts[b]; i++) {
            unsigned char buf[RESP];
            serve_resp a;
            CHECK(net_recv_all(fd, buf, RESP) == 1 && serve_resp_decode(&a, buf, V) == 0);
            if (a.batch > sizes[b])
                sizes[b] = a.batch;
        }
    }
    if (fd >= 0)
        close(fd);
}

static void test_padding(void)
{
    test_server s;
    const char *args[] = {"--n", "1024", "--pad", "pow2", "--max-batch", "64", NULL};
    if (net_server_start(&s, server_path, args) != 0) {
        CHECK(!"obl-server started");
        return;
    }
    static const size_t bursts[] = {1, 3, 5, 17, 2, 40, 7, 33, 64, 9};
    static const uint32_t want[] = {1, 4, 8, 32, 2, 64, 8, 64, 64, 16};
    enum { NB = sizeof(bursts) / sizeof(bursts[0]) };
    uint32_t sizes[3][NB];
    for (int p = 0; p < 3; p++) {
        burst_sizes(s.port, p, sizes[p], NB, bursts);
        size_t bad = 0;
        for (size_t b = 0; b < NB; b++)
            bad += sizes[p][b] != want[b];
        CHECK_EQ_U64(bad, 0);
    }
    CHECK(memcmp(sizes[0], sizes[1], sizeof(sizes[0])) == 0);
    CHECK(memcmp(sizes[0], sizes[2], sizeof(sizes[0])) == 0);
    CHECK_EQ_U64(net_server_stop(&s, SIGTERM, 10), 0);
}

/* obl-load for a second: every answer checked by it, no loss; its summary
 * holds the step's record and the timeline's. */
static void run_load(unsigned port)
{
    char cmd[1024], line[4096], sum[] = "/tmp/test_serve_net.XXXXXX";
    int sfd = mkstemp(sum);
    CHECK(sfd >= 0);
    if (sfd < 0)
        return;
    close(sfd);
    snprintf(cmd, sizeof(cmd),
             "%s --port %u --rate 2000 --duration 1 --warmup 0.2 --connections 3 --seed %" PRIu64
             " --summary %s",
             load_path, port, T.seed, sum);
    FILE *p = popen(cmd, "r");
    int reports = 0;
    while (p && fgets(line, sizeof(line), p)) {
        if (!strstr(line, "REPORT_123Ramp-UMAP|obl|"))
            continue;
        reports++;
        CHECK(strstr(line, "| Lost := 0 |") != NULL);
        CHECK(strstr(line, "| Errors := 0 |") != NULL);
        CHECK(strstr(line, "| N:=1024 | Key_bytes := 8 | Value_bytes := 56") != NULL);
    }
    CHECK(p && pclose(p) == 0);
    CHECK_EQ_U64(reports, 1);
    FILE *f = fopen(sum, "r");
    int steps = 0, seconds = 0;
    while (f && fgets(line, sizeof(line), f)) {
        steps += strstr(line, "\"report_type\": \"Ramp-UMAP\"") && strstr(line, "\"Step\": 1}");
        seconds += strstr(line, "\"report_type\": \"Ramp-UMAP-timeline\"") != NULL;
    }
    if (f)
        fclose(f);
    unlink(sum);
    CHECK_EQ_U64(steps, 1);
    CHECK(seconds == 2); /* 1.2 s of schedule: seconds 0 and 1 */
}

/* On a server of GETs only, a PUT gets BAD_OP and the map is unchanged. */
static void put_refused(unsigned port)
{
    serve_hello h;
    int fd = net_connect(port, &h);
    unsigned char req[2 * REQ], buf[RESP], v[V] = {1}, want[V];
    frame(req, 5, SERVE_OP_PUT, 3, v);
    frame(req + REQ, 6, SERVE_OP_GET, 3, NULL);
    CHECK(fd >= 0 && net_send_all(fd, req, sizeof(req)) == 0);
    serve_resp a;
    CHECK(net_recv_all(fd, buf, RESP) == 1 && serve_resp_decode(&a, buf, V) == 0);
    CHECK_EQ_U64(a.id, 5);
    CHECK_EQ_U64(a.status, SERVE_BAD_OP);
    CHECK(net_recv_all(fd, buf, RESP) == 1 && serve_resp_decode(&a, buf, V) == 0);
    serve_value(want, V, 3, key_seed);
    CHECK_EQ_U64(a.id, 6);
    CHECK(a.status == SERVE_OK && a.found == 1 && memcmp(a.value, want, V) == 0);
    close(fd);
}

/* SIGTERM while 3000 requests are in flight: the server answers what it has
 * read (a prefix, every answer right) and exits 0. A server of GETs only. */
static void test_sigterm(void)
{
    test_server s;
    const char *args[] = {"--n", "1024", "--ops", "get", NULL};
    if (net_server_start(&s, server_path, args) != 0) {
        CHECK(!"obl-server started");
        return;
    }
    run_load(s.port);
    put_refused(s.port);
    serve_hello h;
    int fd = net_connect(s.port, &h);
    static unsigned char req[3000 * REQ];
    for (uint64_t i = 0; i < 3000; i++)
        frame(req + i * REQ, i, SERVE_OP_GET, i % (2 * N), NULL);
    CHECK(fd >= 0 && net_send_all(fd, req, sizeof(req)) == 0);
    kill(s.pid, SIGTERM);
    uint64_t got = 0;
    unsigned char buf[RESP], want[V];
    serve_resp a;
    while (net_recv_all(fd, buf, RESP) == 1 && serve_resp_decode(&a, buf, V) == 0) {
        uint64_t id = got % (2 * N);
        memset(want, 0, V);
        if (id < N)
            serve_value(want, V, id, key_seed);
        CHECK_EQ_U64(a.id, got);
        CHECK_EQ_U64(a.found, id < N);
        CHECK(memcmp(a.value, want, V) == 0);
        got++;
    }
    printf("  SIGTERM with 3000 requests sent: %" PRIu64 " answered before the close\n", got);
    close(fd);
    CHECK_EQ_U64(net_server_stop(&s, SIGTERM, 10), 0);
}

/* Idle past the MPI deployment's 3 s deadline once: keep-alive epochs. */
static void idle_once(unsigned port, int round, test_rng *rng)
{
    (void)port, (void)rng;
    if (round == 20)
        sleep(5);
}

/* obl-server --backend mpi under `mpirun -np 3`: obl-load, then the model
 * clients (mixed ops, every answer checked), idle past the deadline, and a
 * clean stop through rank 0. */
static void test_mpi(const char *mpirun)
{
    test_server s;
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, T.seed | 1);
    const char *argv[] = {"/bin/sh", mpirun, "-np", "3", server_path, "--backend", "mpi",
                          "--port", "0", "--n", "1024", "--max-batch", "32", "--shards", "3",
                          "--map-seed", seed, "--mpi-timeout", "3", NULL};
    if (net_server_start_argv(&s, argv) != 0) {
        CHECK(!"obl-server --backend mpi started under mpirun");
        return;
    }
    CHECK(s.signal_pid != s.pid); /* rank 0 printed its pid */
    run_load(s.port);
    model_rounds(s.port, 40, 1, idle_once);
    CHECK_EQ_U64(net_server_stop(&s, SIGTERM, 30), 0);
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_serve_net");
    const char *mpirun = NULL;
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--server"))
            server_path = argv[i + 1];
        else if (!strcmp(argv[i], "--load"))
            load_path = argv[i + 1];
        else if (!strcmp(argv[i], "--mpirun"))
            mpirun = argv[i + 1];
    }
    if (!server_path || !load_path) {
        fprintf(stderr, "usage: test_serve_net -s SEED --server PATH --load PATH\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (mpirun) {
        test_mpi(mpirun);
        return test_done("test_serve_net");
    }
    char cpu[16];
    snprintf(cpu, sizeof cpu, "%d", first_cpu());
    const char *const pinned[] = {"--spin-us", "100", "--cpu-loop", cpu, "--cpu-batch", cpu, NULL};
    test_model_clients("off", "0");
    test_model_clients("on", "0");
    test_model_clients("on", "50");
    test_flood("off", NULL);
    test_flood("on", NULL);
    test_flood("on", pinned); /* the spinning thread and the loop share a CPU */
    test_bad_cpu();
    test_padding();
    test_sigterm();
    return test_done("test_serve_net");
}
