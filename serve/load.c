/*
 * obl-load: an open-loop load generator for obl-server (docs/server.md).
 * The intended send times are drawn before the run (loadgen.h); one
 * thread sends every request when its time comes, whether or not earlier
 * ones were answered, and reads the answers in the same epoll loop. The
 * requests due at one wake-up go out in one write on one connection, the
 * connections taking turns. epoll_pwait2's nanosecond timeout wakes it at
 * the next intended time, late by at most the timer slack (docs/server.md,
 * "obl-load"). The schedule is never re-based: a request sent late keeps
 * its intended time, and its latency counts from it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "args.h"
#include "load.h"

#define LOAD_MAX_CONNS 256
#define LOAD_IN_CAP (256u * 1024u)

typedef struct lconn {
    int fd; /* -1: closed */
    unsigned char *out, *in;
    size_t out_head, out_len, out_cap, in_len;
    size_t *ids;      /* ring: the requests in out, oldest first */
    size_t ids_head, ids_len, ids_cap;
    uint64_t written; /* bytes the kernel took of frames not yet stamped */
    uint32_t events;  /* the epoll interest registered */
} lconn;

typedef struct loader {
    load_run *r;
    lconn *c;
    load_keys keys;
    size_t req_bytes, resp_bytes, next;
    unsigned turn; /* the connection of the next wake-up's requests */
    uint64_t waits, writes, reads; /* system calls, for the closing line */
    double slack_us;               /* < 0: by the step's rate (set_slack) */
    unsigned slack_step;           /* the step whose slack is set */
    int ep;
    unsigned char *key, *expect;
} loader;

/* ------------------------------------------------------------ sending -- */

/* Room for one more frame in out, and its request id in the ring. */
static int out_append(lconn *c, size_t n, size_t id)
{
    if (c->ids_len == c->ids_cap) {
        size_t cap = c->ids_cap ? 2 * c->ids_cap : 1024;
        size_t *ids = malloc(cap * sizeof(size_t));
        if (!ids)
            return -1;
        for (size_t j = 0; j < c->ids_len; j++)
            ids[j] = c->ids[(c->ids_head + j) % c->ids_cap];
        free(c->ids);
        c->ids = ids;
        c->ids_cap = cap;
        c->ids_head = 0;
    }
    if (serve_buf_reserve(&c->out, &c->out_cap, &c->out_head, c->out_len, n) != 0)
        return -1;
    c->ids[(c->ids_head + c->ids_len++) % c->ids_cap] = id;
    return 0;
}

/* Writes what the socket takes; stamps the send time of every request
 * whose last byte went out. */
static void conn_flush(loader *L, unsigned ci)
{
    lconn *c = &L->c[ci];
    while (c->fd >= 0 && c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_head, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        L->writes++;
        if (w > 0) {
            c->out_head += (size_t)w;
            c->out_len -= (size_t)w;
            c->written += (uint64_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            close(c->fd); /* the server went away: the rest is lost */
            c->fd = -1;
        }
    }
    uint64_t now = serve_now_ns();
    for (; c->written >= L->req_bytes && c->ids_len; c->written -= L->req_bytes) {
        L->r->rec[c->ids[c->ids_head]].send = now;
        c->ids_head = (c->ids_head + 1) % c->ids_cap;
        c->ids_len--;
    }
    uint32_t want = EPOLLIN | (c->out_len ? EPOLLOUT : 0);
    if (c->fd >= 0 && want != c->events) {
        struct epoll_event ev = {.events = want, .data.u64 = ci};
        if (epoll_ctl(L->ep, EPOLL_CTL_MOD, c->fd, &ev) == 0)
            c->events = want;
    }
}

/* Appends every request whose intended time has come to one connection,
 * then writes them: one write per wake-up, the connections taking turns
 * (fewer, larger TCP segments than one connection per request). */
static void send_due(loader *L)
{
    load_run *r = L->r;
    uint64_t now = serve_now_ns();
    if (L->next == r->count || r->t0 + r->intended[L->next] > now)
        return;
    unsigned ci = L->turn, tries = 0;
    while (L->c[ci].fd < 0 && ++tries < r->conns)
        ci = (ci + 1) % r->conns;
    L->turn = (ci + 1) % r->conns;
    lconn *c = &L->c[ci];
    while (L->next < r->count && r->t0 + r->intended[L->next] <= now) {
        size_t i = L->next++;
        if (c->fd < 0 || out_append(c, L->req_bytes, i) != 0)
            continue; /* no connection left, or out of memory: lost */
        serve_key(L->key, r->hello.key_bytes, r->rec[i].key_id, r->hello.key_seed);
        serve_req_encode(c->out + c->out_head + c->out_len, i, SERVE_OP_GET, L->key,
                         r->hello.key_bytes, NULL, r->hello.value_bytes);
        c->out_len += L->req_bytes;
    }
    if (c->fd >= 0 && c->out_len)
        conn_flush(L, ci);
}

/* ---------------------------------------------------------- receiving -- */

static void check_answer(loader *L, load_rec *x, const serve_resp *a)
{
    const load_run *r = L->r;
    size_t v = r->hello.value_bytes;
    int hit = x->key_id < r->hello.n;
    if (hit)
        serve_value(L->expect, v, x->key_id, r->hello.key_seed);
    else
        memset(L->expect, 0, v);
    x->ok = a->status == SERVE_OK && a->found == (uint32_t)hit && !memcmp(a->value, L->expect, v);
}

static void on_answer(loader *L, const serve_resp *a, uint64_t now)
{
    load_run *r = L->r;
    if (a->id >= r->count || r->rec[a->id].recv) {
        r->duplicates++;
        return;
    }
    load_rec *x = &r->rec[a->id];
    x->recv = now;
    x->arrival = a->arrival_ns;
    x->dispatch = a->dispatch_ns;
    x->complete = a->complete_ns;
    x->batch = a->batch;
    x->status = (uint8_t)(a->status < 255 ? a->status : 255);
    x->found = (uint8_t)(a->found != 0);
    check_answer(L, x, a);
    r->answered++;
    r->errors += a->status != SERVE_OK;
    r->wrong += a->status == SERVE_OK && !x->ok;
}

/* Reads until a read comes back short of the buffer (the socket was empty
 * then; epoll, level-triggered, reports what comes later). */
static void conn_readable(loader *L, unsigned ci)
{
    lconn *c = &L->c[ci];
    for (;;) {
        size_t room = LOAD_IN_CAP - c->in_len; /* > 0: less than a frame is kept */
        ssize_t n = recv(c->fd, c->in + c->in_len, room, MSG_DONTWAIT);
        L->reads++;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            epoll_ctl(L->ep, EPOLL_CTL_DEL, c->fd, NULL);
            close(c->fd);
            c->fd = -1;
            return;
        }
        uint64_t now = serve_now_ns();
        c->in_len += (size_t)n;
        size_t off = 0;
        serve_resp a;
        for (; c->in_len - off >= L->resp_bytes; off += L->resp_bytes) {
            if (serve_resp_decode(&a, c->in + off, L->r->hello.value_bytes) != 0) {
                L->r->errors++; /* unreadable stream: give this connection up */
                epoll_ctl(L->ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                c->fd = -1;
                return;
            }
            on_answer(L, &a, now);
        }
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
        if ((size_t)n < room)
            return;
    }
}

/* --------------------------------------------------------------- loop -- */

/* The timer slack: how late the kernel may end a wait (prctl). By default
 * it grows with the rate, SLACK_MAX_US at SLACK_FULL_QPS and above: a
 * wake-up then carries several requests at high rates (fewer writes and
 * wake-ups, docs/server.md, "obl-load"), while at low rates the sends keep
 * to their times (at 1 K q/s, within 2.5 µs). */
#define SLACK_MAX_US 50.0
#define SLACK_FULL_QPS 20000.0
static void set_slack(loader *L)
{
    const load_run *r = L->r;
    unsigned st = L->next < r->count ? r->step[L->next] : r->step[r->count - 1];
    if (L->slack_step == st + 1u)
        return;
    L->slack_step = st + 1u;
    double us = L->slack_us;
    if (us < 0) {
        double rate = r->plan.steps[st == LOAD_WARMUP ? 0 : st].rate;
        us = SLACK_MAX_US * (rate < SLACK_FULL_QPS ? rate / SLACK_FULL_QPS : 1.0);
    }
    unsigned long ns = (unsigned long)(us * 1000 + 0.5);
    prctl(PR_SET_TIMERSLACK, ns ? ns : 1ul); /* 0 would mean the default */
}

/* Waits for answers or until `at` (absolute ns, 0: no deadline). */
static int wait_until(int ep, struct epoll_event *evs, int max, uint64_t at)
{
    uint64_t now = serve_now_ns();
    struct timespec ts = {0};
    if (at > now) {
        ts.tv_sec = (time_t)((at - now) / 1000000000u);
        ts.tv_nsec = (long)((at - now) % 1000000000u);
    }
    return epoll_pwait2(ep, evs, max, at ? &ts : NULL, NULL);
}

static int any_open(const loader *L)
{
    for (unsigned i = 0; i < L->r->conns; i++)
        if (L->c[i].fd >= 0)
            return 1;
    return 0;
}

/* Sends on schedule and reads answers until all are in, every connection
 * is gone, or `drain_s` after the last intended send. */
static void run_loop(loader *L, double drain_s)
{
    load_run *r = L->r;
    struct epoll_event evs[64];
    uint64_t deadline = r->t0 + r->intended[r->count - 1] + (uint64_t)(drain_s * 1e9);
    while (r->answered < r->count && any_open(L)) {
        send_due(L);
        set_slack(L);
        uint64_t at = deadline;
        if (L->next < r->count)
            at = r->t0 + r->intended[L->next];
        else if (serve_now_ns() >= deadline)
            break;
        int n = wait_until(L->ep, evs, 64, at);
        L->waits++;
        for (int i = 0; i < n; i++) {
            unsigned ci = (unsigned)evs[i].data.u64;
            if (L->c[ci].fd >= 0 && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                conn_readable(L, ci);
            if (L->c[ci].fd >= 0 && (evs[i].events & EPOLLOUT))
                conn_flush(L, ci);
        }
    }
}

/* ------------------------------------------------------------- set-up -- */

/* Connects (blocking), reads the hello, then makes the socket non-blocking;
 * -1 on failure (message on stderr). */
static int connect_one(const char *host, unsigned port, serve_hello *h)
{
    char ps[16];
    snprintf(ps, sizeof(ps), "%u", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "obl-load: bad address %s: %s\n", host, gai_strerror(rc));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unsigned char buf[SERVE_HELLO_BYTES];
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        recv(fd, buf, sizeof(buf), MSG_WAITALL) != (ssize_t)sizeof(buf) ||
        serve_hello_decode(h, buf) != 0) {
        fprintf(stderr, "obl-load: cannot connect to %s:%u or no hello: %s\n", host, port,
                strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

typedef struct load_opts {
    const char *host, *json, *summary, *keys;
    uint64_t port, conns, seed;
    double rate, duration, warmup, drain, hit_ratio, slack_us;
    const char *ramp, *bursts, *spacing;
    int cpu; /* -1: any */
} load_opts;

static void usage(FILE *f)
{
    fputs("usage: obl-load [--host ADDR] --port P (--rate R --duration S |\n"
          "                --ramp R0:R1:SECONDS:STEPS | --bursts ON:OFF:ON_S:OFF_S --duration S)\n"
          "                [--spacing poisson|uniform] [--seed S] [--warmup S]\n"
          "                [--hit-ratio F] [--keys uniform|zipf[:S]] [--connections C]\n"
          "                [--drain S] [--timer-slack US] [--cpu C] [--json FILE]\n"
          "                [--summary FILE]\n\n"
          "Open-loop load on obl-server (the wrk2 method): every request's intended\n"
          "send time is drawn before the run from the offered rate; requests go out at\n"
          "those times whether or not earlier ones were answered, and latency is\n"
          "measured from the intended time. Prints one REPORT line (type Ramp-UMAP)\n"
          "per rate step; the warm-up is discarded. Exit status 1 if any answer was\n"
          "wrong (every GET is checked against the map's known contents).\n\n"
          "  --host ADDR          server address (127.0.0.1)\n"
          "  --port P             server port (7070)\n"
          "  --rate R             constant offered rate, requests/s (with --duration)\n"
          "  --ramp R0:R1:S:K     K steps over S seconds, rates R0 .. R1 evenly\n"
          "  --bursts ON:OFF:A:B  A seconds at rate ON, B at rate OFF, repeated for\n"
          "                       --duration S (two REPORT lines: on and off)\n"
          "  --spacing KIND       poisson (exponential gaps) or uniform (poisson)\n"
          "  --seed S             schedule and key seed (1)\n"
          "  --warmup S           seconds at the first rate before measuring (1)\n"
          "  --hit-ratio F        share of keys present in the map (0.8)\n"
          "  --keys KIND          uniform, or zipf[:S] over the present keys, S 0.99\n"
          "  --connections C      connections, 1..256 (4)\n"
          "  --drain S            wait this long for answers after the last send (10)\n"
          "  --timer-slack US     how late the kernel may wake the sender, microseconds;\n"
          "                       more puts more requests in a write (default: 50 at\n"
          "                       20 K q/s and above, in proportion below)\n"
          "  --cpu C              pin the generator to CPU C, or none (none)\n"
          "  --json FILE          every request's times, one JSON line each\n"
          "  --summary FILE       per step and per second JSON lines (docs/server.md)\n",
          f);
}

/* 0 ok, 1 --help, 2 bad usage. */
static int parse_opts(int argc, char **argv, load_opts *o)
{
    *o = (load_opts){.host = "127.0.0.1", .keys = "uniform", .port = 7070, .conns = 4,
                     .seed = 1, .warmup = 1, .drain = 10, .hit_ratio = 0.8, .slack_us = -1,
                     .spacing = "poisson", .cpu = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return 1;
        if (!v) {
            fprintf(stderr, "obl-load: %s needs a value (see --help)\n", a);
            return 2;
        }
        i++;
        int ok = 1;
        if (!strcmp(a, "--host")) o->host = v;
        else if (!strcmp(a, "--port")) ok = bench_parse_u64(v, &o->port) && o->port <= 65535;
        else if (!strcmp(a, "--rate")) ok = serve_parse_double(v, &o->rate) && o->rate > 0;
        else if (!strcmp(a, "--duration")) ok = serve_parse_double(v, &o->duration) && o->duration > 0;
        else if (!strcmp(a, "--ramp")) o->ramp = v;
        else if (!strcmp(a, "--bursts")) o->bursts = v;
        else if (!strcmp(a, "--spacing")) ok = !strcmp(v, "poisson") || !strcmp(v, "uniform"), o->spacing = v;
        else if (!strcmp(a, "--seed")) ok = bench_parse_u64(v, &o->seed);
        else if (!strcmp(a, "--warmup")) ok = serve_parse_double(v, &o->warmup);
        else if (!strcmp(a, "--drain")) ok = serve_parse_double(v, &o->drain);
        else if (!strcmp(a, "--timer-slack")) ok = serve_parse_double(v, &o->slack_us) && o->slack_us >= 0;
        else if (!strcmp(a, "--hit-ratio")) ok = serve_parse_double(v, &o->hit_ratio) && o->hit_ratio <= 1;
        else if (!strcmp(a, "--keys")) o->keys = v;
        else if (!strcmp(a, "--connections")) ok = bench_parse_u64(v, &o->conns) && o->conns >= 1 && o->conns <= LOAD_MAX_CONNS;
        else if (!strcmp(a, "--cpu")) ok = serve_parse_cpu(v, &o->cpu);
        else if (!strcmp(a, "--json")) o->json = v;
        else if (!strcmp(a, "--summary")) o->summary = v;
        else {
            fprintf(stderr, "obl-load: unknown flag '%s' (see --help)\n", a);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "obl-load: bad value '%s' for %s (see --help)\n", v, a);
            return 2;
        }
    }
    return 0;
}

/* The plan from the options; 0 ok, 2 bad usage. */
static int make_plan(const load_opts *o, load_run *r)
{
    int forms = (o->rate > 0) + (o->ramp != NULL) + (o->bursts != NULL), bad;
    if (forms != 1) {
        fprintf(stderr, "obl-load: give exactly one of --rate, --ramp, --bursts\n");
        return 2;
    }
    if (o->ramp)
        bad = load_plan_ramp(&r->plan, o->ramp);
    else if ((o->rate > 0 || o->bursts) && !(o->duration > 0))
        bad = -1;
    else
        bad = o->bursts ? load_plan_bursts(&r->plan, o->bursts, o->duration)
                        : load_plan_rate(&r->plan, o->rate, o->duration);
    if (bad) {
        fprintf(stderr, "obl-load: bad rate plan (--rate R --duration S, --ramp R0:R1:S:K, "
                        "--bursts ON:OFF:A:B --duration S)\n");
        return 2;
    }
    r->plan.warmup_s = o->warmup;
    r->plan.poisson = !strcmp(o->spacing, "poisson");
    r->plan.seed = o->seed;
    if (!strcmp(o->keys, "uniform"))
        r->zipf_s = 0;
    else if (!strcmp(o->keys, "zipf"))
        r->zipf_s = 0.99;
    else if (strncmp(o->keys, "zipf:", 5) || !serve_parse_double(o->keys + 5, &r->zipf_s) ||
             r->zipf_s <= 0) {
        fprintf(stderr, "obl-load: --keys takes uniform, zipf or zipf:S\n");
        return 2;
    }
    r->hit_ratio = o->hit_ratio;
    r->conns = (unsigned)o->conns;
    return 0;
}

static int connect_all(const load_opts *o, load_run *r, loader *L)
{
    for (unsigned i = 0; i < r->conns; i++) {
        serve_hello h;
        int fd = connect_one(o->host, (unsigned)o->port, &h);
        if (fd < 0)
            return -1;
        L->c[i].fd = fd;
        if (i && memcmp(&h, &r->hello, sizeof(h))) {
            fprintf(stderr, "obl-load: connections disagree about the map\n");
            return -1;
        }
        r->hello = h;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i};
        if (epoll_ctl(L->ep, EPOLL_CTL_ADD, fd, &ev) != 0)
            return -1;
        L->c[i].events = EPOLLIN;
    }
    return 0;
}

/* The schedule, each request's key, the buffers; -1 out of memory. */
static int prepare(load_run *r, loader *L)
{
    r->count = load_schedule(&r->plan, &r->intended, &r->step);
    r->rec = r->count ? calloc(r->count, sizeof(load_rec)) : NULL;
    if (!r->rec || load_keys_init(&L->keys, r->hello.n, serve_key_space(r->hello.key_bytes),
                                  r->hit_ratio, r->zipf_s) != 0)
        return -1;
    load_rng rng = {serve_mix64(r->plan.seed ^ 0x6b657973ULL)};
    for (size_t i = 0; i < r->count; i++)
        r->rec[i].key_id = load_keys_draw(&L->keys, &rng);
    L->req_bytes = serve_req_bytes(r->hello.key_bytes, r->hello.value_bytes);
    L->resp_bytes = serve_resp_bytes(r->hello.value_bytes);
    L->key = malloc(r->hello.key_bytes);
    L->expect = malloc(r->hello.value_bytes);
    for (unsigned i = 0; i < r->conns; i++)
        if (!(L->c[i].in = malloc(LOAD_IN_CAP)))
            return -1;
    return L->key && L->expect ? 0 : -1;
}

static void cleanup(load_run *r, loader *L)
{
    for (unsigned i = 0; L->c && i < r->conns; i++) {
        if (L->c[i].fd >= 0)
            close(L->c[i].fd);
        free(L->c[i].in);
        free(L->c[i].out);
        free(L->c[i].ids);
    }
    free(L->c);
    free(L->key);
    free(L->expect);
    load_keys_free(&L->keys);
    if (L->ep >= 0)
        close(L->ep);
    free(r->intended);
    free(r->step);
    free(r->rec);
}

static int write_outputs(const load_opts *o, const load_run *r)
{
    FILE *sum = o->summary ? fopen(o->summary, "w") : NULL;
    FILE *raw = o->json ? fopen(o->json, "w") : NULL;
    if ((o->summary && !sum) || (o->json && !raw)) {
        fprintf(stderr, "obl-load: cannot write %s: %s\n", sum ? o->json : o->summary,
                strerror(errno));
        if (sum)
            fclose(sum);
        if (raw)
            fclose(raw);
        return -1;
    }
    load_report(r, sum);
    if (raw)
        load_write_raw(r, raw);
    if (sum)
        fclose(sum);
    if (raw)
        fclose(raw);
    return 0;
}

int main(int argc, char **argv)
{
    load_opts o;
    load_run r = {0};
    int rc = parse_opts(argc, argv, &o);
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    if (rc || make_plan(&o, &r))
        return 2;
    signal(SIGPIPE, SIG_IGN);
    if ((rc = serve_pin(pthread_self(), o.cpu)) != 0) {
        fprintf(stderr, "obl-load: --cpu %d: %s\n", o.cpu, strerror(rc));
        return 1;
    }
    loader L = {.r = &r, .ep = epoll_create1(EPOLL_CLOEXEC), .slack_us = o.slack_us};
    L.c = calloc(r.conns, sizeof(lconn));
    for (unsigned i = 0; L.c && i < r.conns; i++)
        L.c[i].fd = -1;
    if (!L.c || L.ep < 0 || connect_all(&o, &r, &L) != 0) {
        cleanup(&r, &L);
        return 1;
    }
    if (prepare(&r, &L) != 0) {
        fprintf(stderr, "obl-load: out of memory (or no request in the plan, or keys do not fit)\n");
        cleanup(&r, &L);
        return 1;
    }
    fprintf(stderr, "obl-load: %zu requests over %.1f s on %u connections to N=%" PRIu64
            " %u/%u (max batch %u, pad %s)\n", r.count,
            (double)r.intended[r.count - 1] / 1e9, r.conns, r.hello.n, r.hello.key_bytes,
            r.hello.value_bytes, r.hello.max_batch, r.hello.pad ? "pow2" : "none");
    r.t0 = serve_now_ns() + 20000000u; /* 20 ms: the loop is ready by then */
    run_loop(&L, o.drain);
    rc = write_outputs(&o, &r) ? 1 : 0;
    fprintf(stderr, "obl-load: %" PRIu64 " answered of %zu, %" PRIu64 " wrong, %" PRIu64
            " error frames, %" PRIu64 " duplicates\n", r.answered, r.count, r.wrong, r.errors,
            r.duplicates);
    fprintf(stderr, "obl-load: %" PRIu64 " waits, %" PRIu64 " writes, %" PRIu64 " reads\n",
            L.waits, L.writes, L.reads);
    if (r.wrong || r.duplicates)
        rc = 1;
    cleanup(&r, &L);
    return rc;
}
