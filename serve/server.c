/*
 * obl-server's event loop (server.h, docs/server.md). One thread: epoll
 * over the listening socket, a signalfd for SIGTERM/SIGINT and the client
 * connections. Each pass reads what has arrived, parses complete frames
 * into one FIFO (arrival order across connections), then answers one batch
 * of at most max_batch requests from its head. A batch is synchronous, so
 * "whatever arrived while the previous batch ran" is what the next pass
 * finds. Per-connection buffers are bounded: a client that does not read
 * its answers stops being read (it cannot grow the server without bound).
 * With cfg->batch_thread batches run on a second thread instead: the loop
 * keeps reading and publishes what it queued; the thread takes the next
 * batch itself when one ends (publish, batch_claim) and reports its end
 * through an eventfd; the loop then writes its answers (batch_collect).
 */
#define _GNU_SOURCE
#include "server.h"

#include "args.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IN_CAP (64u * 1024u)         /* bytes buffered per connection */
#define OUT_HIGH (4u * 1024u * 1024u) /* answers waiting: stop reading above */
#define TAG_LISTEN 0u
#define TAG_SIGNAL 1u
#define TAG_BATCH 2u
#define TAG_CONN 3u
#define FLUSH_NS 2000000000ull /* at shutdown: how long answers may take to leave */
/* With the batch thread, a batch of at most this many requests found with
 * nothing in flight runs on the loop's thread: handing it over costs two
 * wake-ups, more than such a batch (docs/server.md, "The server"). */
#define INLINE_MAX 8u
/* Batch buffers: the batch thread's, and finished ones the loop has not
 * answered yet (the thread waits for a free one). */
#define NBAT 4u
#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

typedef struct conn {
    int fd; /* -1: free slot */
    uint32_t gen;
    unsigned char *in, *out;
    size_t in_len, out_head, out_len, out_cap;
    uint64_t in_time;     /* when the last bytes were read */
    uint64_t outstanding; /* requests in the queue or in a batch */
    int eof;              /* the peer shut its side: close once answered */
    int doomed;           /* bad frame: close once the error frame is out */
    uint32_t events;      /* the epoll interest registered */
} conn;

typedef struct pend {
    uint32_t conn, gen;
    uint64_t id, op, arrival;
} pend;

/* A batch the batch thread has answered: bat[buf], the `real` requests
 * that follow the first `start` of the queue, run as `exec`. */
typedef struct finished {
    unsigned buf;
    uint64_t start;
    size_t real, exec;
    obl_err e;
    uint64_t t_disp, t_done;
} finished;

typedef struct server {
    const serve_config *cfg;
    serve_backend *be;
    serve_totals *tot;
    size_t k, v, req_bytes, resp_bytes;
    int ep, lfd, sfd, stopping, leftover;
    conn *conns;
    pend *q;
    unsigned char *qdata; /* (k + v) bytes per queue slot */
    size_t qcap, qhead, qlen; /* loop only; qhead == (enq - qlen) % qcap */
    uint64_t enq;             /* loop only: requests ever queued */
    serve_batch bat[NBAT];
    unsigned char hello[SERVE_HELLO_BYTES];
    unsigned char *dummy_key;
    uint32_t *touched; /* connections answered by the current batch */
    /* The batch thread (cfg->batch_thread). The loop publishes how many
     * requests it has queued (`pub`); at the end of each batch the thread
     * claims the next published ones itself (`claimed`), up to max_batch, so
     * that it does not wait for the loop between batches; the loop answers
     * its finished batches (`fin`, in order) when the eventfd says so. Queue
     * slot of request a (counting from the first): a % qcap; a claimed slot
     * is not reused before its answer is sent. */
    pthread_t th;
    int th_up, efd;
    uint64_t pub_seen; /* loop only: pub as last published */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu (pub also read without it by the spinning thread): */
    _Atomic uint64_t pub;
    uint64_t claimed;
    unsigned free_bat; /* bit i: bat[i] is free */
    int running, quit;
    finished fin[NBAT];
    unsigned fin_head, fin_len;
} server;

static void conn_close(server *s, conn *c)
{
    if (c->fd < 0)
        return;
    epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    c->gen++;
    c->in_len = c->out_head = c->out_len = 0;
    c->outstanding = 0;
    c->eof = c->doomed = 0;
}

/* Registers the interest the connection's state asks for. Not EPOLLIN
 * while the input buffer is full (the queue is full: parse_leftovers
 * drains it after a batch), or the loop would wake for bytes it cannot
 * take, and spin while a batch runs on the batch thread. */
static void conn_interest(server *s, conn *c)
{
    uint32_t want = 0;
    if (!c->eof && !c->doomed && !s->stopping && c->out_len < OUT_HIGH && c->in_len < IN_CAP)
        want |= EPOLLIN;
    if (c->out_len)
        want |= EPOLLOUT;
    if (want == c->events)
        return;
    struct epoll_event ev = {.events = want, .data.u64 = TAG_CONN + (uint64_t)(c - s->conns)};
    if (epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev) == 0)
        c->events = want;
}

static int out_reserve(conn *c, size_t more)
{
    return serve_buf_reserve(&c->out, &c->out_cap, &c->out_head, c->out_len, more);
}

static void conn_send_resp(server *s, conn *c, const serve_resp *r)
{
    if (out_reserve(c, s->resp_bytes) != 0) {
        conn_close(s, c); /* out of memory: this client loses its answers */
        return;
    }
    serve_resp_encode(c->out + c->out_head + c->out_len, r, s->v);
    c->out_len += s->resp_bytes;
}

/* Writes what the socket takes; closes the connection when it is done
 * with (error, doomed and flushed, or shut by the peer and answered). */
static void conn_flush(server *s, conn *c)
{
    while (c->fd >= 0 && c->out_len) {
        ssize_t r = send(c->fd, c->out + c->out_head, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r > 0) {
            c->out_head += (size_t)r;
            c->out_len -= (size_t)r;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            conn_close(s, c);
            return;
        }
    }
    if (c->fd < 0)
        return;
    if (!c->out_len)
        c->out_head = 0;
    if (!c->out_len && (c->doomed || (c->eof && !c->outstanding))) {
        conn_close(s, c);
        return;
    }
    conn_interest(s, c);
}

static void reply_error(server *s, conn *c, uint64_t id, uint32_t status)
{
    serve_resp r = {.id = id, .status = status};
    r.arrival_ns = r.dispatch_ns = r.complete_ns = serve_now_ns();
    conn_send_resp(s, c, &r);
}

/* Moves complete frames from c's input buffer to the queue. Stops at a bad
 * length (error frame, connection doomed), a full queue (s->leftover) or
 * when c's answers back up. */
static void conn_parse(server *s, conn *c)
{
    size_t off = 0;
    uint32_t idx = (uint32_t)(c - s->conns);
    while (c->fd >= 0 && !c->doomed && c->in_len - off >= 4) {
        if (serve_get32(c->in + off) != s->req_bytes - 4) {
            s->tot->bad_frames++;
            reply_error(s, c, 0, SERVE_BAD_FRAME);
            c->doomed = 1;
            off = c->in_len;
            break;
        }
        if (c->in_len - off < s->req_bytes || c->out_len >= OUT_HIGH)
            break;
        const unsigned char *f = c->in + off;
        uint64_t id = serve_get64(f + 4);
        uint32_t op = serve_get32(f + 12);
        /* LEAK: an op code outside GET/PUT/ERASE (or, on a server of GETs
         * only, any other op) is rejected here, before the batch; it reveals
         * only that the client sent a malformed request (docs/server.md,
         * "What the host learns"). */
        if (op > SERVE_OP_ERASE || (s->cfg->gets_only && op != SERVE_OP_GET)) {
            s->tot->bad_ops++;
            reply_error(s, c, id, SERVE_BAD_OP);
            off += s->req_bytes;
            continue;
        }
        if (s->qlen == s->qcap) {
            s->leftover = 1;
            break;
        }
        size_t slot = (size_t)(s->enq++ % s->qcap);
        s->qlen++;
        s->q[slot] = (pend){idx, c->gen, id, op, c->in_time};
        memcpy(s->qdata + slot * (s->k + s->v), f + SERVE_REQ_HEAD, s->k + s->v);
        c->outstanding++;
        off += s->req_bytes;
    }
    if (off) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
    if (c->in_len >= s->req_bytes && !c->doomed)
        s->leftover = 1;
}

/* Reads and parses until the socket is empty: a read shorter than the room
 * it was given says so (epoll is level-triggered and reports later bytes),
 * which saves the read that would return EAGAIN. */
static void conn_readable(server *s, conn *c)
{
    while (c->fd >= 0 && !c->eof && !c->doomed && c->in_len < IN_CAP && !s->stopping) {
        size_t room = IN_CAP - c->in_len;
        ssize_t r = recv(c->fd, c->in + c->in_len, room, MSG_DONTWAIT);
        if (r > 0) {
            c->in_len += (size_t)r;
            c->in_time = serve_now_ns();
            conn_parse(s, c);
            if ((size_t)r < room)
                break;
        } else if (r == 0) {
            c->eof = 1; /* answers still go out (a half-closed client) */
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            break;
        } else {
            conn_close(s, c);
            return;
        }
    }
    if (c->fd >= 0)
        conn_flush(s, c);
}

static void accept_all(server *s)
{
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or a transient error: epoll tells us again */
        uint32_t i = 0;
        while (i < s->cfg->max_conns && s->conns[i].fd >= 0)
            i++;
        if (i == s->cfg->max_conns) {
            close(fd); /* too many connections */
            continue;
        }
        conn *c = &s->conns[i];
        if (!c->in && !(c->in = malloc(IN_CAP))) {
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_CONN + i};
        if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->events = EPOLLIN;
        s->tot->conns++;
        if (out_reserve(c, SERVE_HELLO_BYTES) != 0) {
            conn_close(s, c);
            continue;
        }
        memcpy(c->out + c->out_head + c->out_len, s->hello, SERVE_HELLO_BYTES);
        c->out_len += SERVE_HELLO_BYTES;
        conn_flush(s, c);
    }
}

/* The executed batch size: real, or with padding the next size of the set
 * {1, 2, 4, ..., max_batch} (powers of two, and max_batch itself). */
static size_t padded_size(size_t real, uint32_t pad, uint32_t max_batch)
{
    if (pad != SERVE_PAD_POW2)
        return real;
    size_t p = 1;
    while (p < real)
        p *= 2;
    return p < max_batch ? p : max_batch;
}

/* Fills b from the `real` requests that follow the first `start` ever
 * queued (on the batch thread: claimed ones, which the loop leaves alone). */
static void batch_fill(server *s, serve_batch *b, uint64_t start, size_t real, size_t exec)
{
    size_t kv = s->k + s->v;
    for (size_t i = 0; i < real; i++) {
        size_t slot = (size_t)((start + i) % s->qcap);
        b->ops[i] = s->q[slot].op;
        memcpy(b->keys + i * s->k, s->qdata + slot * kv, s->k);
        memcpy(b->values + i * s->v, s->qdata + slot * kv + s->k, s->v);
    }
    /* dummies: GETs of a key never stored; the map makes the same accesses
     * for them as for any request */
    for (size_t i = real; i < exec; i++) {
        b->ops[i] = SERVE_OP_GET;
        memcpy(b->keys + i * s->k, s->dummy_key, s->k);
        memset(b->values + i * s->v, 0, s->v);
    }
    b->count = exec;
}

static void count_batch(serve_totals *t, size_t real, size_t exec)
{
    int lg = 0;
    while (lg < 17 && ((size_t)2 << lg) <= exec)
        lg++;
    t->size_log2[lg]++;
    t->batches++;
    t->requests += real;
    t->dummies += exec - real;
}

/* Sends the answers of the batch at the head of the queue (real requests,
 * exec executed) and removes it from the queue. */
static void batch_answers(server *s, const serve_batch *b, size_t real, size_t exec, obl_err e,
                          uint64_t t_disp, uint64_t t_done)
{
    count_batch(s->tot, real, exec);
    size_t ntouched = 0;
    for (size_t i = 0; i < real; i++) {
        pend *p = &s->q[(s->qhead + i) % s->qcap];
        conn *c = &s->conns[p->conn];
        if (c->fd < 0 || c->gen != p->gen)
            continue; /* the client left: its answer is dropped */
        serve_resp r = {p->id, SERVE_OK, (uint32_t)b->found[i], (uint32_t)exec,
                        p->arrival, t_disp, t_done, b->out + i * s->v};
        if (e != OBL_OK || b->errs[i] != OBL_OK) {
            s->tot->map_errors++;
            r.status = SERVE_MAP_ERROR;
            r.found = 0;
        }
        if (c->outstanding)
            c->outstanding--;
        if (!c->out_len)
            s->touched[ntouched++] = p->conn;
        conn_send_resp(s, c, &r);
    }
    s->qhead = (s->qhead + real) % s->qcap;
    s->qlen -= real;
    for (size_t i = 0; i < ntouched; i++)
        if (s->conns[s->touched[i]].fd >= 0)
            conn_flush(s, &s->conns[s->touched[i]]);
}

/* Answers the next batch of the queue on the loop's thread: the `real`
 * requests that follow the first `start`, in bat[buf]. */
static void run_here(server *s, uint64_t start, size_t real, unsigned buf)
{
    size_t exec = padded_size(real, s->cfg->pad, s->cfg->max_batch);
    serve_batch *b = &s->bat[buf];
    batch_fill(s, b, start, real, exec);
    uint64_t t_disp = serve_now_ns();
    obl_err e = s->be->answer(s->be->state, b);
    batch_answers(s, b, real, exec, e, t_disp, serve_now_ns());
}

/* Without the batch thread: one batch from the head of the queue. */
static void dispatch(server *s)
{
    size_t real = s->qlen < s->cfg->max_batch ? s->qlen : s->cfg->max_batch;
    run_here(s, s->enq - s->qlen, real, 0);
}

/* Tells the batch thread what the loop has queued. A batch of at most
 * INLINE_MAX (executed) requests found with the thread idle and nothing
 * waiting for answers runs here instead: waking the thread costs more than
 * such a batch (docs/server.md, "The server"); never beside a backend's
 * idle hook, which runs on that thread. */
static void publish(server *s)
{
    if (s->enq == s->pub_seen)
        return;
    s->pub_seen = s->enq;
    pthread_mutex_lock(&s->mu);
    atomic_store_explicit(&s->pub, s->enq, memory_order_release);
    uint64_t start = s->claimed;
    size_t real = (size_t)(s->pub - start);
    int here = !s->running && !s->fin_len && !s->be->idle &&
               padded_size(real, s->cfg->pad, s->cfg->max_batch) <= INLINE_MAX;
    if (here)
        s->claimed = s->pub;
    else if (!s->running)
        pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (here)
        run_here(s, start, real, 0); /* every buffer is free: nothing runs or waits */
}

/* Answers the batches the thread has finished, in order, and gives their
 * buffers back. */
static void batch_collect(server *s)
{
    uint64_t n;
    if (read(s->efd, &n, sizeof n) != (ssize_t)sizeof n)
        return;
    finished f[NBAT];
    pthread_mutex_lock(&s->mu);
    unsigned m = s->fin_len;
    for (unsigned i = 0; i < m; i++)
        f[i] = s->fin[(s->fin_head + i) % NBAT];
    pthread_mutex_unlock(&s->mu);
    unsigned freed = 0;
    for (unsigned i = 0; i < m; i++) {
        batch_answers(s, &s->bat[f[i].buf], f[i].real, f[i].exec, f[i].e, f[i].t_disp,
                      f[i].t_done);
        freed |= 1u << f[i].buf;
    }
    pthread_mutex_lock(&s->mu);
    s->fin_head = (s->fin_head + m) % NBAT;
    s->fin_len -= m;
    s->free_bat |= freed;
    if (!s->running && s->pub > s->claimed)
        pthread_cond_signal(&s->cv); /* it may have waited for a buffer */
    pthread_mutex_unlock(&s->mu);
}

static void deadline_in(struct timespec *ts, uint32_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Under mu: claims the next batch of published requests and a free buffer
 * for it; 0 if there is no request or no buffer. */
static int batch_claim(server *s, finished *f)
{
    if (s->pub == s->claimed || !s->free_bat)
        return 0;
    uint64_t avail = s->pub - s->claimed;
    f->buf = (unsigned)__builtin_ctz(s->free_bat);
    f->start = s->claimed;
    f->real = avail < s->cfg->max_batch ? (size_t)avail : s->cfg->max_batch;
    f->exec = padded_size(f->real, s->cfg->pad, s->cfg->max_batch);
    s->free_bat &= ~(1u << f->buf);
    s->claimed += f->real;
    s->running = 1;
    return 1;
}

/* After a batch of more than INLINE_MAX requests, without mu: polls for
 * published requests for at most spin_us (a sleeping thread takes tens of
 * microseconds to wake on this VM, docs/server.md "The server"); after a
 * smaller one the load is light, and the loop runs such batches itself.
 * `running` stays set meanwhile, so the loop neither signals nor runs a
 * small batch itself. */
static void batch_spin(server *s, uint64_t claimed)
{
    uint64_t until = serve_now_ns() + (uint64_t)s->cfg->spin_us * 1000u;
    while (atomic_load_explicit(&s->pub, memory_order_acquire) == claimed) {
        for (int i = 0; i < 64; i++)
            CPU_RELAX();
        if (serve_now_ns() >= until)
            return;
    }
}

/* The batch thread: runs batches back to back while requests are
 * published, reports each end through the eventfd, and calls the
 * backend's idle hook after idle_ms without a batch. */
static void *batch_thread(void *arg)
{
    server *s = arg;
    const serve_backend *be = s->be;
    struct timespec dl;
    finished f;
    pthread_mutex_lock(&s->mu);
    deadline_in(&dl, be->idle_ms);
    while (!s->quit) {
        if (!batch_claim(s, &f)) {
            int r = be->idle ? pthread_cond_timedwait(&s->cv, &s->mu, &dl)
                             : pthread_cond_wait(&s->cv, &s->mu);
            if (r == ETIMEDOUT && s->pub == s->claimed && !s->quit) {
                pthread_mutex_unlock(&s->mu);
                be->idle(be->state);
                pthread_mutex_lock(&s->mu);
                deadline_in(&dl, be->idle_ms);
            }
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        serve_batch *b = &s->bat[f.buf];
        batch_fill(s, b, f.start, f.real, f.exec);
        f.t_disp = serve_now_ns();
        f.e = be->answer(be->state, b);
        f.t_done = serve_now_ns();
        pthread_mutex_lock(&s->mu);
        s->fin[(s->fin_head + s->fin_len++) % NBAT] = f;
        uint64_t claimed = s->claimed;
        pthread_mutex_unlock(&s->mu);
        uint64_t one = 1;
        if (write(s->efd, &one, sizeof one) != (ssize_t)sizeof one)
            abort(); /* cannot happen below 2^64 - 1 unread counts */
        if (s->cfg->spin_us && f.exec > INLINE_MAX)
            batch_spin(s, claimed); /* not after small batches: light load */
        pthread_mutex_lock(&s->mu);
        s->running = 0;
        deadline_in(&dl, be->idle_ms);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Starts the batch thread; 0 on success. Its clock is CLOCK_MONOTONIC. */
static int batch_thread_start(server *s)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return -1;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int bad = pthread_mutex_init(&s->mu, NULL) != 0 || pthread_cond_init(&s->cv, &ca) != 0;
    pthread_condattr_destroy(&ca);
    s->free_bat = (1u << NBAT) - 1;
    if (bad || pthread_create(&s->th, NULL, batch_thread, s) != 0)
        return -1;
    s->th_up = 1;
    int e = serve_pin(s->th, s->cfg->cpu_batch);
    if (e != 0)
        errno = e;
    return e ? -1 : 0;
}

static void batch_thread_stop(server *s)
{
    if (!s->th_up)
        return;
    pthread_mutex_lock(&s->mu);
    s->quit = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    s->th_up = 0;
}

static void parse_leftovers(server *s)
{
    s->leftover = 0;
    for (uint32_t i = 0; i < s->cfg->max_conns; i++) {
        conn *c = &s->conns[i];
        if (c->fd >= 0 && c->in_len >= 4) {
            conn_parse(s, c);
            conn_flush(s, c);
        }
    }
}

static void begin_stop(server *s)
{
    s->stopping = 1;
    if (s->lfd >= 0) {
        epoll_ctl(s->ep, EPOLL_CTL_DEL, s->lfd, NULL);
        close(s->lfd);
        s->lfd = -1;
    }
    for (uint32_t i = 0; i < s->cfg->max_conns; i++)
        if (s->conns[i].fd >= 0)
            conn_interest(s, &s->conns[i]);
}

static void on_event(server *s, const struct epoll_event *ev)
{
    if (ev->data.u64 == TAG_LISTEN) {
        if (!s->stopping)
            accept_all(s);
    } else if (ev->data.u64 == TAG_SIGNAL) {
        struct signalfd_siginfo si;
        if (read(s->sfd, &si, sizeof(si)) > 0)
            begin_stop(s);
    } else if (ev->data.u64 == TAG_BATCH) {
        batch_collect(s);
    } else {
        conn *c = &s->conns[ev->data.u64 - TAG_CONN];
        if (c->fd < 0)
            return;
        if (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR))
            conn_readable(s, c);
        if (c->fd >= 0 && (ev->events & EPOLLOUT))
            conn_flush(s, c);
    }
}

static int pending_out(const server *s)
{
    for (uint32_t i = 0; i < s->cfg->max_conns; i++)
        if (s->conns[i].fd >= 0 && s->conns[i].out_len)
            return 1;
    return 0;
}

/* One pass of the loop's I/O: the events epoll has (waiting at most
 * timeout ms), then the input that waited for room in the queue. */
static void serve_io(server *s, struct epoll_event *evs, int timeout)
{
    int n = epoll_wait(s->ep, evs, 64, timeout);
    for (int i = 0; i < n; i++)
        on_event(s, &evs[i]);
    if (s->leftover)
        parse_leftovers(s);
}

static void run_loop(server *s)
{
    struct epoll_event evs[64];
    uint64_t stop_by = 0;
    for (;;) {
        if (s->stopping && !s->qlen && !s->leftover) {
            if (!stop_by)
                stop_by = serve_now_ns() + FLUSH_NS;
            if (!pending_out(s) || serve_now_ns() >= stop_by)
                return;
        }
        if (s->th_up) { /* the thread's end of a batch wakes the loop */
            serve_io(s, evs, s->stopping ? 10 : -1);
            publish(s);
            continue;
        }
        serve_io(s, evs, s->qlen || s->leftover ? 0 : s->stopping ? 10 : -1);
        if (s->qlen)
            dispatch(s);
    }
}

/* Binds and listens on host:port; returns the socket or -1 (message on
 * stderr). *bound gets the port (the kernel's choice for port 0). */
static int listen_on(const char *host, unsigned port, unsigned *bound)
{
    char ps[16];
    snprintf(ps, sizeof(ps), "%u", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "obl-server: bad address %s: %s\n", host, gai_strerror(rc));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
        fprintf(stderr, "obl-server: cannot listen on %s:%u: %s\n", host, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);
    getsockname(fd, (struct sockaddr *)&sa, &len);
    *bound = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                            : ((struct sockaddr_in *)&sa)->sin_port);
    return fd;
}

static int server_alloc(server *s)
{
    size_t mb = s->cfg->max_batch;
    s->qcap = mb * 4 > 4096 ? mb * 4 : 4096;
    s->conns = calloc(s->cfg->max_conns, sizeof(conn));
    s->touched = calloc(mb, sizeof(uint32_t));
    s->q = calloc(s->qcap, sizeof(pend));
    s->qdata = calloc(s->qcap, s->k + s->v);
    s->dummy_key = calloc(1, s->k);
    for (unsigned i = 0; i < (s->cfg->batch_thread ? NBAT : 1u); i++) {
        serve_batch *b = &s->bat[i];
        b->ops = calloc(mb, sizeof(uint64_t));
        b->keys = calloc(mb, s->k);
        b->values = calloc(mb, s->v);
        b->out = calloc(mb, s->v);
        b->found = calloc(mb, sizeof(uint64_t));
        b->errs = calloc(mb, sizeof(obl_err));
        if (!b->ops || !b->keys || !b->values || !b->out || !b->found || !b->errs)
            return -1;
    }
    if (!s->conns || !s->touched || !s->q || !s->qdata || !s->dummy_key)
        return -1;
    for (uint32_t i = 0; i < s->cfg->max_conns; i++)
        s->conns[i].fd = -1;
    serve_key(s->dummy_key, s->k, serve_dummy_id(s->cfg->n, s->k), s->cfg->key_seed);
    return 0;
}

static void server_free(server *s)
{
    batch_thread_stop(s);
    if (s->efd >= 0)
        close(s->efd);
    for (uint32_t i = 0; s->conns && i < s->cfg->max_conns; i++) {
        conn_close(s, &s->conns[i]);
        free(s->conns[i].in);
        free(s->conns[i].out);
    }
    free(s->conns);
    free(s->touched);
    free(s->q);
    free(s->qdata);
    free(s->dummy_key);
    for (unsigned i = 0; i < NBAT; i++) {
        free(s->bat[i].ops);
        free(s->bat[i].keys);
        free(s->bat[i].values);
        free(s->bat[i].out);
        free(s->bat[i].found);
        free(s->bat[i].errs);
    }
    if (s->lfd >= 0)
        close(s->lfd);
    if (s->sfd >= 0)
        close(s->sfd);
    if (s->ep >= 0)
        close(s->ep);
}

static int add_fd(int ep, int fd, uint64_t tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

int serve_block_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    return pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int serve_run(const serve_config *cfg, serve_backend *be, FILE *ready, serve_totals *tot)
{
    server s = {.cfg = cfg, .be = be, .tot = tot, .k = be->key_bytes, .v = be->value_bytes,
                .ep = -1, .lfd = -1, .sfd = -1, .efd = -1};
    s.req_bytes = serve_req_bytes(s.k, s.v);
    s.resp_bytes = serve_resp_bytes(s.v);
    serve_hello h = {(uint32_t)s.k, (uint32_t)s.v, cfg->max_batch, cfg->pad,
                     cfg->n, cfg->capacity, cfg->key_seed};
    serve_hello_encode(s.hello, &h);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    signal(SIGPIPE, SIG_IGN);
    unsigned port = 0;
    int rc = -1;
    if (serve_block_signals() != 0 || server_alloc(&s) != 0)
        fprintf(stderr, "obl-server: out of memory\n");
    else if ((s.sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0 ||
             (s.ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
        fprintf(stderr, "obl-server: %s\n", strerror(errno));
    else if ((s.lfd = listen_on(cfg->host, cfg->port, &port)) < 0)
        ;
    else if (add_fd(s.ep, s.lfd, TAG_LISTEN) != 0 || add_fd(s.ep, s.sfd, TAG_SIGNAL) != 0)
        fprintf(stderr, "obl-server: epoll: %s\n", strerror(errno));
    else if (cfg->batch_thread &&
             ((s.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
              add_fd(s.ep, s.efd, TAG_BATCH) != 0 ||
              batch_thread_start(&s) != 0))
        fprintf(stderr, "obl-server: batch thread: %s\n", strerror(errno));
    else if ((errno = serve_pin(pthread_self(), cfg->cpu_loop)) != 0)
        fprintf(stderr, "obl-server: --cpu-loop %d: %s\n", cfg->cpu_loop, strerror(errno));
    else {
        const char *fmt = strchr(cfg->host, ':') ? "[%s]:%u" : "%s:%u";
        fputs("obl-server: listening on ", ready);
        fprintf(ready, fmt, cfg->host, port);
        fputc('\n', ready);
        fflush(ready);
        run_loop(&s);
        rc = 0;
    }
    server_free(&s);
    return rc;
}
