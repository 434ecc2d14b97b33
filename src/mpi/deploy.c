/* SPDX-License-Identifier: MIT */
/*
 * obl/mpi.h over MPI: creation and parameter checks, the transport (non-
 * blocking sends and receives polled against a deadline, so a dead or
 * silent peer becomes an error, not a hang), the balancers' epochs and the
 * shard ranks' loop. The ranks' work is in rank.c, the sealing in msg.c.
 */
#include <obl/mpi.h>

#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi/inject.h"
#include "mpi/msg.h"
#include "mpi/rank.h"
#include "shard/shard_map.h"

typedef struct xop {
    int peer, send;
    unsigned char *buf;
    size_t len; /* to send, or the buffer's capacity; then the bytes received */
} xop;

/* Posted operations, not yet complete (xfer_post, xfer_wait). */
typedef struct xfer_state {
    xop *ops; /* the caller's, until xfer_wait returns */
    int n, nr;
    MPI_Request *rq;
    MPI_Status *stv;
    int *first;
} xfer_state;

/* A balancer's epoch in flight (docs/mpi.md, "Pipelined epochs"): its
 * balancer state, buffers by peer and posted exchange. */
typedef struct bal_slot {
    mpi_bal bal;
    unsigned char **pt, **sealed, **rbuf; /* by peer */
    size_t *got;
    xop *ops;
    int nops;
    xfer_state x;
    uint64_t epoch;
    uint32_t kind;
    obl_err es; /* the split's status */
    double split_us;
} bal_slot;

struct obl_mpi {
    MPI_Comm comm;
    int rank, size, role;
    obl_mpi_params p;
    mpi_layout y;
    msg_chan *ch; /* by peer rank; the other role's ranks only */
    mpi_srv srv;
    /* Balancer: slot e & 1 holds epoch e while it is in flight (at most two);
     * a shard rank uses slot 0. bal, pt, sealed, rbuf, got: the slot at work. */
    bal_slot sl[2];
    unsigned nfl;  /* epochs in flight */
    uint64_t last; /* balancer: the newest epoch begun */
    uint64_t epoch; /* the epoch at work (messages, errors) */
    mpi_bal *bal;
    unsigned char **pt, **apt, **sealed,
        **rbuf;         /* by peer: plaintext in, answer, sealed out, received */
    size_t *rcap, *got; /* receive capacity, bytes received */
    obl_mpi_stats st;
    obl_mpi_fault fault;
    char err[320];
    int inj_kind, inj_rank; /* test-only fault (inject.h) */
    uint64_t inj_epoch;
};

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static obl_err fail(obl_mpi *m, obl_mpi_fault f, obl_err e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(m->err, sizeof m->err, "obl_mpi rank %d epoch %llu: ", m->rank,
                     (unsigned long long)m->epoch);
    vsnprintf(m->err + n, sizeof m->err - (size_t)n, fmt, ap);
    va_end(ap);
    m->fault = f;
    return e;
}

/* ---- transport ---- */


/* The injected fault of this rank and epoch, if any. */
static int injected(const obl_mpi *m)
{
    return m->inj_kind && m->rank == m->inj_rank && m->epoch == m->inj_epoch ? m->inj_kind
                                                                             : MPI_INJECT_NONE;
}

/* Applies a send-side fault; returns 1 if the message must go twice. */
static int inject(obl_mpi *m, xop *o)
{
    switch (injected(m)) {
    case MPI_INJECT_TAMPER:
        o->buf[MPI_MSG_HDR] ^= 0x40; /* the payload's first byte, or the tag's */
        return 0;
    case MPI_INJECT_TRUNCATE:
        o->len--;
        return 0;
    case MPI_INJECT_REPLAY:
        return 1;
    case MPI_INJECT_KILL:
        fprintf(stderr, "obl_mpi rank %d: injected fault: killing myself\n", m->rank);
        raise(SIGKILL);
        return 0;
    case MPI_INJECT_SILENT:
        fprintf(stderr, "obl_mpi rank %d: injected fault: going silent\n", m->rank);
        for (;;)
            sleep(1000);
    default:
        return 0;
    }
}

/* Waits for the nr requests until the deadline; 1 if all completed. */
static int poll_all(obl_mpi *m, MPI_Request *rq, int nr, MPI_Status *stv, double t0, int *rc)
{
    double deadline = t0 + (m->p.timeout_s > 0 ? m->p.timeout_s : 60.0) * 1e6;
    for (unsigned spin = 0;; spin++) {
        int done = 0;
        *rc = MPI_Testall(nr, rq, &done, stv);
        if (done || *rc != MPI_SUCCESS)
            return 1;
        if (now_us() > deadline)
            return 0;
        /* ranks may share cores: after a short spin, sleep and let them run */
        if (spin < 64) {
            sched_yield();
        } else {
            struct timespec ts = {0, spin < 1024 ? 10000 : 100000};
            nanosleep(&ts, NULL);
        }
    }
}

/* The peers of the operations still pending, for the timeout's message. */
static void pending_peers(MPI_Request *rq, const int *first, const xop *ops, int n, char *who,
                          size_t len)
{
    who[0] = 0;
    for (int i = 0; i < n && strlen(who) + 12 < len; i++) {
        int flag = 0;
        MPI_Test(&rq[first[i]], &flag, MPI_STATUS_IGNORE);
        if (!flag)
            snprintf(who + strlen(who), len - strlen(who), " %d", ops[i].peer);
    }
}

/* Posts the n operations (a send twice under an injected replay). */
static obl_err post_all(obl_mpi *m, xop *ops, int n, MPI_Request *rq, int *first, int *nr)
{
    *nr = 0;
    for (int i = 0; i < n; i++) {
        xop *o = &ops[i];
        int rc, twice = o->send ? inject(m, o) : 0;
        first[i] = *nr;
        for (int c = 0; c <= twice; c++) {
            rc = o->send
                     ? MPI_Isend(o->buf, (int)o->len, MPI_BYTE, o->peer, 7, m->comm, &rq[(*nr)++])
                     : MPI_Irecv(o->buf, (int)o->len, MPI_BYTE, o->peer, 7, m->comm, &rq[(*nr)++]);
            if (rc != MPI_SUCCESS)
                return fail(m, OBL_MPI_FAULT_TRANSPORT, OBL_ERR_IO, "MPI post to rank %d failed",
                            o->peer);
            if (o->send)
                m->st.bytes_sent += o->len;
        }
    }
    return OBL_OK;
}


static void xfer_free(xfer_state *x)
{
    free(x->rq);
    free(x->stv);
    free(x->first);
    memset(x, 0, sizeof *x);
}

/* Posts the n operations; on error x is freed. */
static obl_err xfer_post(obl_mpi *m, xfer_state *x, xop *ops, int n)
{
    memset(x, 0, sizeof *x);
    x->ops = ops;
    x->n = n;
    x->rq = (MPI_Request *)calloc(2 * (size_t)n + 1, sizeof *x->rq);
    x->stv = (MPI_Status *)calloc(2 * (size_t)n + 1, sizeof *x->stv);
    x->first = (int *)calloc((size_t)n + 1, sizeof *x->first);
    obl_err e = x->rq && x->stv && x->first ? OBL_OK : OBL_ERR_NOMEM;
    if (e == OBL_OK)
        e = post_all(m, ops, n, x->rq, x->first, &x->nr);
    if (e != OBL_OK)
        xfer_free(x);
    return e;
}

/* Runs the posted operations to completion, or fails at the deadline
 * naming the peers that made no progress (a dead or silent rank). A
 * receive's len becomes the bytes received. Frees x. */
static obl_err xfer_wait(obl_mpi *m, xfer_state *x)
{
    int rc = MPI_SUCCESS;
    obl_err e = OBL_OK;
    double t0 = now_us();
    if (!poll_all(m, x->rq, x->nr, x->stv, t0, &rc)) {
        char who[160];
        pending_peers(x->rq, x->first, x->ops, x->n, who, sizeof who);
        e = fail(m, OBL_MPI_FAULT_TIMEOUT, OBL_ERR_IO,
                 "timeout: no progress with rank(s)%s within %.1f s (a rank died or hangs)", who,
                 m->p.timeout_s > 0 ? m->p.timeout_s : 60.0);
    }
    for (int i = 0; e == OBL_OK && i < x->n; i++) {
        const MPI_Status *st = &x->stv[x->first[i]];
        if (rc == MPI_ERR_IN_STATUS && st->MPI_ERROR != MPI_SUCCESS) /* longer than expected */
            e = fail(m, OBL_MPI_FAULT_TRUNCATED, OBL_ERR_IO, "message from rank %d rejected: %s",
                     x->ops[i].peer, msg_fault_name(MSG_TRUNCATED));
        else if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS)
            e = fail(m, OBL_MPI_FAULT_TRANSPORT, OBL_ERR_IO, "MPI_Testall failed (%d)", rc);
        else if (!x->ops[i].send) {
            int cnt = 0;
            MPI_Get_count(st, MPI_BYTE, &cnt);
            x->ops[i].len = (size_t)cnt;
            m->st.bytes_recv += (size_t)cnt;
        }
    }
    m->st.last_wait_us += now_us() - t0;
    xfer_free(x);
    return e;
}

/* Runs the n operations to completion. */
static obl_err xfer(obl_mpi *m, xop *ops, int n)
{
    xfer_state x;
    obl_err e = xfer_post(m, &x, ops, n);
    if (e != OBL_OK)
        return e;
    return xfer_wait(m, &x);
}

/* Opens the message received from peer into its plaintext buffer. */
static obl_err open_from(obl_mpi *m, int peer, size_t got, const size_t exp[MSG_KINDS],
                         uint32_t *kind)
{
    double t0 = now_us();
    int f = msg_open(&m->ch[peer], m->epoch, exp, m->rbuf[peer], got, m->pt[peer], kind);
    m->st.last_open_us += now_us() - t0;
    if (f != MSG_OK)
        return fail(m, (obl_mpi_fault)f, OBL_ERR_IO, "message from rank %d rejected: %s", peer,
                    msg_fault_name(f));
    return OBL_OK;
}

static obl_err seal_to(obl_mpi *m, int peer, uint32_t kind, size_t len, const void *pt)
{
    double t0 = now_us();
    obl_err e = msg_seal(&m->ch[peer], kind, m->epoch, pt, len, m->sealed[peer]);
    m->st.last_seal_us += now_us() - t0;
    return e == OBL_OK ? e : fail(m, OBL_MPI_FAULT_TRANSPORT, e, "sealing failed");
}

/* ---- the balancers' epochs ---- */

static void reset_times(obl_mpi *m)
{
    m->st.last_split_us = m->st.last_join_us = m->st.last_seal_us = m->st.last_open_us = 0;
    m->st.last_wait_us = m->st.last_shard_us = m->st.last_shard_crypto_us = 0;
}

/* Makes slot k the one at work. */
static void use_slot(obl_mpi *m, int k)
{
    bal_slot *z = &m->sl[k];
    m->bal = &z->bal;
    m->pt = z->pt;
    m->sealed = z->sealed;
    m->rbuf = z->rbuf;
    m->got = z->got;
}

/* Seals every shard rank's payload of `kind` (packed by the caller into
 * m->pt) and posts it and, unless stopping, the receive of its answer. */
static obl_err bal_post(obl_mpi *m, bal_slot *z, uint32_t kind, int answers)
{
    const mpi_layout *y = &m->y;
    xop *ops = (xop *)calloc(2 * (size_t)y->R, sizeof *ops);
    if (!ops)
        return OBL_ERR_NOMEM;
    obl_err e = OBL_OK;
    int n = 0;
    for (unsigned r = 0; r < y->R && e == OBL_OK; r++) {
        int peer = (int)(y->L + r);
        size_t len = kind == MSG_STOP ? 0 : lay_req_len(y, r, (int)kind);
        e = seal_to(m, peer, kind, len, m->pt[peer]);
        ops[n++] = (xop){peer, 1, m->sealed[peer], MPI_MSG_HDR + len + MPI_MSG_TAG};
        if (answers)
            ops[n++] = (xop){peer, 0, m->rbuf[peer], m->rcap[peer]};
    }
    if (e == OBL_OK)
        e = xfer_post(m, &z->x, ops, n);
    if (e != OBL_OK) {
        free(ops);
        return e;
    }
    z->ops = ops;
    z->nops = n;
    return OBL_OK;
}

/* Waits for the slot's exchange; the answers' lengths into m->got. */
static obl_err bal_collect(obl_mpi *m, bal_slot *z)
{
    obl_err e = xfer_wait(m, &z->x);
    for (int i = 0; e == OBL_OK && i < z->nops; i++)
        if (!z->ops[i].send)
            m->got[z->ops[i].peer] = z->ops[i].len;
    free(z->ops);
    z->ops = NULL;
    return e;
}

/* bal_post and bal_collect on slot 0, nothing in flight (build, stop). */
static obl_err bal_exchange(obl_mpi *m, uint32_t kind, int answers)
{
    obl_err e = bal_post(m, &m->sl[0], kind, answers);
    return e == OBL_OK ? bal_collect(m, &m->sl[0]) : e;
}

/* Opens shard rank r's answer and reads it; OBL_OK or the rank's error. */
static obl_err bal_take(obl_mpi *m, unsigned r, uint32_t kind, size_t got, int unpack)
{
    const mpi_layout *y = &m->y;
    int peer = (int)(y->L + r);
    size_t exp[MSG_KINDS];
    for (int k = 0; k < MSG_KINDS; k++)
        exp[k] = SIZE_MAX;
    exp[MSG_ANSWER] = lay_ans_len(y, r, (int)kind);
    uint32_t k;
    obl_err e = open_from(m, peer, got, exp, &k);
    if (e != OBL_OK)
        return e;
    const unsigned char *a = m->pt[peer];
    uint64_t status;
    double work, crypto;
    memcpy(&status, a, 8);
    memcpy(&work, a + 8, 8);
    memcpy(&crypto, a + 16, 8);
    if (work > m->st.last_shard_us) {
        m->st.last_shard_us = work;
        m->st.last_shard_crypto_us = crypto;
    }
    if (unpack)
        (void)mpi_bal_unpack(m->bal, r, a);
    if (status != OBL_OK)
        return fail(m, OBL_MPI_FAULT_PEER, (obl_err)status, "shard rank %d failed the epoch: %s",
                    peer, obl_strerror((obl_err)status));
    return OBL_OK;
}

/* Starts an epoch in the next slot: the split, the sealed requests posted. */
static obl_err bal_begin(obl_mpi *m, const uint64_t *ops, const unsigned char *keys,
                         const unsigned char *vin)
{
    const mpi_layout *y = &m->y;
    int k = (int)((m->last + 1) & 1);
    bal_slot *z = &m->sl[k];
    use_slot(m, k);
    m->epoch = ++m->last;
    if (!m->nfl) {
        m->fault = OBL_MPI_FAULT_NONE;
        reset_times(m);
    }
    z->epoch = m->epoch;
    z->kind = vin ? MSG_MIXED : MSG_GET;
    double t0 = now_us();
    z->es = mpi_bal_split(m->bal, ops, keys, vin);
    z->split_us = now_us() - t0;
    for (unsigned r = 0; r < y->R; r++)
        mpi_bal_pack(m->bal, r, vin != NULL, (uint64_t)z->es, m->pt[y->L + r]);
    obl_err e = bal_post(m, z, z->kind, 1);
    m->nfl += e == OBL_OK;
    return e;
}

/* Ends the oldest epoch in flight: its answers, routed back to keys. */
static obl_err bal_end(obl_mpi *m, const unsigned char *keys, unsigned char *vout,
                       uint64_t *found)
{
    const mpi_layout *y = &m->y;
    int k = (int)((m->last + 1 - m->nfl) & 1);
    bal_slot *z = &m->sl[k];
    use_slot(m, k);
    m->epoch = z->epoch;
    m->nfl--;
    obl_err e = bal_collect(m, z), ep = OBL_OK;
    for (unsigned r = 0; r < y->R && e == OBL_OK; r++) {
        obl_err er = bal_take(m, r, z->kind, m->got[y->L + r], 1);
        if (er != OBL_OK && m->fault != OBL_MPI_FAULT_PEER)
            e = er;
        else if (er != OBL_OK)
            ep = er;
    }
    double t2 = now_us();
    if (e == OBL_OK && z->es == OBL_OK && ep == OBL_OK)
        e = mpi_bal_join(m->bal, keys, vout, found);
    m->st.last_split_us = z->split_us;
    m->st.last_join_us = now_us() - t2;
    m->st.epochs++;
    if (e == OBL_OK && z->es != OBL_OK)
        e = fail(m, OBL_MPI_FAULT_NONE, z->es, "the balancer's split failed: %s",
                 obl_strerror(z->es));
    m->epoch = m->last;
    return e != OBL_OK ? e : ep;
}

/* see obl/mpi.h */
obl_err obl_mpi_batch_begin(obl_mpi *m, const uint64_t *ops, const void *keys,
                            const void *values_in)
{
    if (!m || m->role != OBL_MPI_BALANCER || !keys || (values_in && !ops) || m->nfl >= 2)
        return OBL_ERR_INVALID_ARG;
    return bal_begin(m, ops, (const unsigned char *)keys, (const unsigned char *)values_in);
}

/* see obl/mpi.h */
obl_err obl_mpi_batch_end(obl_mpi *m, const void *keys, void *values_out, uint64_t *found)
{
    if (!m || m->role != OBL_MPI_BALANCER || !keys || !values_out || !found || !m->nfl)
        return OBL_ERR_INVALID_ARG;
    return bal_end(m, (const unsigned char *)keys, (unsigned char *)values_out, found);
}

/* see obl/mpi.h */
obl_err obl_mpi_batch(obl_mpi *m, const uint64_t *ops, const void *keys, const void *values_in,
                      void *values_out, uint64_t *found)
{
    if (!m || m->role != OBL_MPI_BALANCER || !keys || !values_out || !found ||
        (values_in && !ops) || m->nfl)
        return OBL_ERR_INVALID_ARG;
    obl_err e = bal_begin(m, ops, (const unsigned char *)keys, (const unsigned char *)values_in);
    return e != OBL_OK ? e : bal_end(m, (const unsigned char *)keys, (unsigned char *)values_out,
                                     found);
}

/* see obl/mpi.h */
obl_err obl_mpi_build(obl_mpi *m, const void *keys, const void *values, uint64_t n)
{
    if (!m || m->role != OBL_MPI_BALANCER || (n && (!keys || !values)) || (m->rank != 0 && n) ||
        n > m->p.capacity || m->nfl)
        return OBL_ERR_INVALID_ARG;
    use_slot(m, 0);
    m->epoch = ++m->last;
    m->fault = OBL_MPI_FAULT_NONE;
    reset_times(m);
    if (m->rank != 0) /* only balancer 0 deals the pairs */
        return OBL_OK;
    const mpi_layout *y = &m->y;
    unsigned char **out = m->pt + y->L;
    obl_err e = mpi_bal_build_pack(m->bal, (const unsigned char *)keys,
                                   (const unsigned char *)values, n, out);
    uint64_t st = (uint64_t)e;
    for (unsigned r = 0; r < y->R; r++)
        memcpy(out[r], &st, 8); /* a failed deal builds empty shards, then reports */
    if (e != OBL_OK)
        for (unsigned r = 0; r < y->R; r++)
            memset(out[r], 0, lay_req_len(y, r, MSG_BUILD));
    obl_err ex = bal_exchange(m, MSG_BUILD, 1);
    for (unsigned r = 0; r < y->R && ex == OBL_OK; r++) {
        obl_err er = bal_take(m, r, MSG_BUILD, m->got[y->L + r], 0);
        if (er != OBL_OK && (m->fault != OBL_MPI_FAULT_PEER || e == OBL_OK))
            e = er;
    }
    m->st.epochs++;
    return ex != OBL_OK ? ex : e;
}

/* see obl/mpi.h */
obl_err obl_mpi_stop(obl_mpi *m)
{
    if (!m || m->role != OBL_MPI_BALANCER || m->nfl)
        return OBL_ERR_INVALID_ARG;
    use_slot(m, 0);
    m->epoch = ++m->last;
    return bal_exchange(m, MSG_STOP, 0);
}

/* ---- the shard ranks ---- */

/* Receives one message from each balancer in [l0, l1) with the lengths
 * exp, into m->pt; *kind is the kind of the first. */
static obl_err srv_recv(obl_mpi *m, unsigned l0, unsigned l1, const size_t exp[MSG_KINDS],
                        uint32_t *kind)
{
    xop ops[1024];
    int n = 0;
    if (l1 - l0 > 1024)
        return OBL_ERR_TOO_LARGE;
    for (unsigned l = l0; l < l1; l++)
        ops[n++] = (xop){(int)l, 0, m->rbuf[l], m->rcap[l]};
    obl_err e = xfer(m, ops, n);
    for (int i = 0; i < n && e == OBL_OK; i++) {
        uint32_t k = 0;
        e = open_from(m, ops[i].peer, ops[i].len, exp, &k);
        if (e == OBL_OK && i == 0)
            *kind = k;
    }
    return e;
}

/* Seals the answers (their entries written by rank.c) and sends them. */
static obl_err srv_answer(obl_mpi *m, unsigned nbal, uint32_t kind, obl_err status, double work_us)
{
    xop ops[1024];
    size_t len = lay_ans_len(&m->y, (unsigned)m->rank - m->y.L, (int)kind);
    double crypto = m->st.last_open_us + m->st.last_seal_us;
    for (unsigned l = 0; l < nbal && l < 1024; l++) {
        unsigned char *a = m->apt[l];
        uint64_t st = (uint64_t)status;
        memcpy(a, &st, 8);
        memcpy(a + 8, &work_us, 8);
        memcpy(a + 16, &crypto, 8);
        obl_err e = seal_to(m, (int)l, MSG_ANSWER, len, a);
        if (e != OBL_OK)
            return e;
        ops[l] = (xop){(int)l, 1, m->sealed[l], MPI_MSG_HDR + len + MPI_MSG_TAG};
    }
    return xfer(m, ops, (int)nbal);
}

/* The request lengths a shard rank accepts from balancer 0 (any kind) or
 * from the others (the kind balancer 0 sent). */
static void srv_expect(const obl_mpi *m, int only, size_t exp[MSG_KINDS])
{
    unsigned r = (unsigned)m->rank - m->y.L;
    for (int k = 0; k < MSG_KINDS; k++)
        exp[k] = SIZE_MAX;
    for (int k = MSG_GET; k <= MSG_STOP; k++)
        if (!only || k == only)
            exp[k] = k == MSG_STOP ? 0 : lay_req_len(&m->y, r, k);
    if (only)
        exp[MSG_BUILD] = SIZE_MAX;
}

/* One epoch of a shard rank; *stop set when the balancers stop it. */
static obl_err srv_epoch(obl_mpi *m, int *stop)
{
    size_t exp[MSG_KINDS];
    uint32_t kind = 0, k2 = 0;
    m->epoch++;
    reset_times(m);
    srv_expect(m, 0, exp);
    obl_err e = srv_recv(m, 0, 1, exp, &kind);
    if (e == OBL_OK && kind != MSG_BUILD && m->y.L > 1) {
        srv_expect(m, (int)kind, exp);
        e = srv_recv(m, 1, m->y.L, exp, &k2);
    }
    if (e != OBL_OK || kind == MSG_STOP) {
        *stop = 1;
        return e;
    }
    double t0 = now_us();
    obl_err es;
    if (kind == MSG_BUILD) {
        uint64_t st;
        memcpy(&st, m->pt[0], 8);
        es = st != OBL_OK ? (obl_err)st : mpi_srv_build(&m->srv, m->pt[0]);
    } else {
        es = mpi_srv_epoch(&m->srv, kind == MSG_MIXED, (const unsigned char *const *)m->pt, m->apt);
    }
    double work = now_us() - t0;
    m->st.epochs++;
    return srv_answer(m, kind == MSG_BUILD ? 1 : m->y.L, kind, es, work);
}

/* see obl/mpi.h */
obl_err obl_mpi_serve(obl_mpi *m)
{
    if (!m || m->role != OBL_MPI_SHARD)
        return OBL_ERR_INVALID_ARG;
    int stop = 0;
    obl_err e = OBL_OK;
    while (!stop && e == OBL_OK)
        e = srv_epoch(m, &stop);
    return e;
}

/* ---- creation ---- */

/* The public shape from the parameters, or INVALID_ARG with a reason. */
static obl_err check_params(obl_mpi *m, const obl_mpi_params *p)
{
    mpi_layout *y = &m->y;
    if (p->balancers < 1 || (int)p->balancers >= m->size)
        return fail(m, OBL_MPI_FAULT_NONE, OBL_ERR_INVALID_ARG,
                    "need at least one balancer and one shard rank (%u balancers, %d ranks)",
                    p->balancers, m->size);
    y->L = p->balancers;
    y->R = (unsigned)m->size - p->balancers;
    y->S = p->shards;
    if (y->S < y->R || y->S > y->R * OBL_MPI_MAX_SHARDS_PER_RANK)
        return fail(m, OBL_MPI_FAULT_NONE, OBL_ERR_INVALID_ARG,
                    "%u shards on %u shard ranks: need R <= S <= %u * R (every shard rank "
                    "holds 1 .. %u shards)",
                    y->S, y->R, OBL_MPI_MAX_SHARDS_PER_RANK, OBL_MPI_MAX_SHARDS_PER_RANK);
    if (!p->secret || p->secret_len < 16 || p->batch == 0 || p->batch > OBL_SHARD_MAX_BATCH ||
        p->key_size == 0 || p->key_size > OBL_SHARD_MAX_KEY_SIZE || p->value_size == 0 ||
        p->value_size > OBL_SHARD_MAX_VALUE_SIZE || p->capacity < y->S ||
        p->capacity > ((uint64_t)1 << 40) || p->lambda > 200)
        return fail(m, OBL_MPI_FAULT_NONE, OBL_ERR_INVALID_ARG,
                    "bad sizes or secret (secret >= 16 bytes, 1 <= B <= 2^24, key 1..%u, "
                    "value 1..%u bytes, S <= capacity <= 2^40)",
                    OBL_SHARD_MAX_KEY_SIZE, OBL_SHARD_MAX_VALUE_SIZE);
    unsigned lambda = p->lambda ? p->lambda : 40;
    size_t bmin = shard_route_b(p->batch, y->S, lambda);
    if (p->shard_batch && p->shard_batch < bmin)
        return fail(m, OBL_MPI_FAULT_NONE, OBL_ERR_INVALID_ARG,
                    "b = %zu too small: B = %zu requests over S = %u shards need b >= %zu "
                    "(overflow probability <= 2^-%u)",
                    p->shard_batch, p->batch, y->S, bmin, lambda);
    y->B = p->batch;
    y->b = p->shard_batch ? p->shard_batch : bmin;
    y->ks = p->key_size;
    y->vs = p->value_size;
    y->cap_s = shard_capacity_each(p->capacity, y->S, lambda);
    if ((double)y->L * (double)y->b > (double)OBL_SHARD_MAX_BATCH || y->L > 1024)
        return fail(m, OBL_MPI_FAULT_NONE, OBL_ERR_TOO_LARGE, "L * b exceeds 2^24 or L 1024");
    /* MPI counts are ints: every message must stay below 2 GiB */
    if ((double)lay_req_len(y, 0, MSG_BUILD) + 64 > 2147483647.0 ||
        (double)lay_req_len(y, 0, MSG_MIXED) + 64 > 2147483647.0)
        return fail(m, OBL_MPI_FAULT_NONE, OBL_ERR_TOO_LARGE,
                    "a message to a shard rank would exceed 2 GiB: use more shard ranks");
    return OBL_OK;
}

/* The channels to the other role's ranks. */
static obl_err make_channels(obl_mpi *m, const obl_mpi_params *p)
{
    for (int q = 0; q < m->size; q++) {
        if ((q < (int)m->y.L) == (m->role == OBL_MPI_BALANCER))
            continue;
        unsigned char ks[32], kr[32];
        int bad =
            p->pair_key
                ? p->pair_key(p->pair_key_opaque, (uint32_t)m->rank, (uint32_t)q, ks) |
                      p->pair_key(p->pair_key_opaque, (uint32_t)q, (uint32_t)m->rank, kr)
                : msg_pair_key(p->secret, p->secret_len, (uint32_t)m->rank, (uint32_t)q, ks) |
                      msg_pair_key(p->secret, p->secret_len, (uint32_t)q, (uint32_t)m->rank, kr);
        obl_err e =
            bad ? OBL_ERR_IO : msg_chan_init(&m->ch[q], (uint32_t)m->rank, (uint32_t)q, ks, kr);
        obl_wipe(ks, 32);
        obl_wipe(kr, 32);
        if (e != OBL_OK)
            return fail(m, OBL_MPI_FAULT_NONE, e, "key derivation for rank %d failed", q);
    }
    return OBL_OK;
}

/* The largest request payload peer-side rank r may carry (build included
 * for balancer 0). */
static size_t max_req(const mpi_layout *y, unsigned r, int build)
{
    size_t a = lay_req_len(y, r, MSG_MIXED), c = build ? lay_req_len(y, r, MSG_BUILD) : 0;
    return a > c ? a : c;
}

/* Slot k's buffers per peer: plaintexts, sealed message, receive buffer
 * (a balancer's slot 1 without room for a build); rcap and apt: slot 0. */
static obl_err slot_buffers(obl_mpi *m, int k)
{
    const mpi_layout *y = &m->y;
    size_t n = (size_t)m->size, ov = MPI_MSG_HDR + MPI_MSG_TAG;
    bal_slot *z = &m->sl[k];
    z->pt = (unsigned char **)calloc(n, sizeof *z->pt);
    z->sealed = (unsigned char **)calloc(n, sizeof *z->sealed);
    z->rbuf = (unsigned char **)calloc(n, sizeof *z->rbuf);
    z->got = (size_t *)calloc(n, sizeof *z->got);
    if (!z->pt || !z->sealed || !z->rbuf || !z->got)
        return OBL_ERR_NOMEM;
    for (int q = 0; q < m->size; q++) {
        size_t req, ans;
        if (m->role == OBL_MPI_BALANCER && q >= (int)y->L) {
            unsigned r = (unsigned)q - y->L;
            req = max_req(y, r, m->rank == 0 && k == 0);
            ans = lay_ans_len(y, r, MSG_GET);
            z->pt[q] = (unsigned char *)calloc(1, req > ans ? req : ans);
            z->sealed[q] = (unsigned char *)calloc(1, req + ov);
            m->rcap[q] = ans + ov + 1;
        } else if (m->role == OBL_MPI_SHARD && q < (int)y->L) {
            unsigned r = (unsigned)m->rank - y->L;
            req = max_req(y, r, q == 0);
            ans = lay_ans_len(y, r, MSG_GET);
            z->pt[q] = (unsigned char *)calloc(1, req);
            m->apt[q] = (unsigned char *)calloc(1, ans);
            z->sealed[q] = (unsigned char *)calloc(1, ans + ov);
            m->rcap[q] = req + ov + 1;
        } else {
            continue;
        }
        z->rbuf[q] = (unsigned char *)calloc(1, m->rcap[q]);
        if (!z->pt[q] || !z->sealed[q] || !z->rbuf[q] || (m->role == OBL_MPI_SHARD && !m->apt[q]))
            return OBL_ERR_NOMEM;
    }
    return OBL_OK;
}

/* Buffers: two slots on a balancer (pipelined epochs), one on a shard rank. */
static obl_err make_buffers(obl_mpi *m)
{
    size_t n = (size_t)m->size;
    m->apt = (unsigned char **)calloc(n, sizeof *m->apt);
    m->rcap = (size_t *)calloc(n, sizeof *m->rcap);
    if (!m->apt || !m->rcap)
        return OBL_ERR_NOMEM;
    obl_err e = slot_buffers(m, 0);
    if (e == OBL_OK && m->role == OBL_MPI_BALANCER)
        e = slot_buffers(m, 1);
    use_slot(m, 0);
    return e;
}

/* The rank's own part: a balancer or the shard rank's maps. */
static obl_err make_role(obl_mpi *m, const obl_mpi_params *p)
{
    unsigned char rk[16];
    if (msg_derive(p->secret, p->secret_len, "route", rk, sizeof rk))
        return fail(m, OBL_MPI_FAULT_NONE, OBL_ERR_IO, "route key derivation failed");
    uint64_t seed = p->seed * 0x100000001b3ull + (uint64_t)m->rank;
    obl_err e;
    if (m->role == OBL_MPI_BALANCER) {
        e = mpi_bal_init(&m->sl[0].bal, &m->y, rk, seed, p->use_seed, 1);
        if (e == OBL_OK) /* the second slot's sorts draw from their own stream */
            e = mpi_bal_init(&m->sl[1].bal, &m->y, rk, seed ^ 0x736c6f7431ull, p->use_seed, 1);
    } else {
        obl_shard_params sp = {0};
        sp.key_size = p->key_size;
        sp.value_size = p->value_size;
        sp.threads = p->threads ? p->threads : 1;
        sp.engines = p->engines;
        sp.lambda = p->lambda;
        sp.use_seed = p->use_seed;
        sp.seed = seed;
        e = mpi_srv_init(&m->srv, &m->y, (unsigned)m->rank - m->y.L, &sp);
    }
    obl_wipe(rk, sizeof rk);
    return e != OBL_OK && !m->err[0]
               ? fail(m, OBL_MPI_FAULT_NONE, e, "rank setup failed: %s", obl_strerror(e))
               : e;
}

/* see obl/mpi.h */
obl_err obl_mpi_create(obl_mpi **out, MPI_Comm comm, const obl_mpi_params *p)
{
    if (!out || !p)
        return OBL_ERR_INVALID_ARG;
    *out = NULL;
    obl_mpi *m = (obl_mpi *)calloc(1, sizeof *m);
    if (!m)
        return OBL_ERR_NOMEM;
    m->p = *p;
    m->comm = MPI_COMM_NULL;
    if (MPI_Comm_dup(comm, &m->comm) != MPI_SUCCESS) {
        free(m);
        return OBL_ERR_IO;
    }
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &m->rank);
    MPI_Comm_size(m->comm, &m->size);
    obl_err e = check_params(m, p);
    m->role = m->rank < (int)p->balancers ? OBL_MPI_BALANCER : OBL_MPI_SHARD;
    if (e == OBL_OK) {
        m->ch = (msg_chan *)calloc((size_t)m->size, sizeof *m->ch);
        e = m->ch ? make_channels(m, p) : OBL_ERR_NOMEM;
    }
    if (e == OBL_OK)
        e = make_buffers(m);
    if (e == OBL_OK)
        e = make_role(m, p);
    m->st.b = m->y.b;
    *out = m; /* on error too: obl_mpi_error explains; obl_mpi_destroy frees */
    return e;
}

/* see inject.h */
void obl_mpi_inject(obl_mpi *m, int kind, int rank, uint64_t epoch)
{
    if (!m)
        return;
    m->inj_kind = kind;
    m->inj_rank = rank;
    m->inj_epoch = epoch;
}

/* see obl/mpi.h */
int obl_mpi_role(const obl_mpi *m)
{
    return m ? m->role : 0;
}

/* see obl/mpi.h */
void obl_mpi_get_stats(const obl_mpi *m, obl_mpi_stats *st)
{
    if (m && st)
        *st = m->st;
}

/* see obl/mpi.h */
obl_mpi_fault obl_mpi_last_fault(const obl_mpi *m)
{
    return m ? m->fault : OBL_MPI_FAULT_NONE;
}

/* see obl/mpi.h */
const char *obl_mpi_error(const obl_mpi *m)
{
    return m && m->err[0] ? m->err : "no error";
}

/* see obl/mpi.h */
size_t obl_mpi_request_bytes(const obl_mpi *m, unsigned r, int writes)
{
    return m && r < m->y.R
               ? MPI_MSG_HDR + MPI_MSG_TAG + lay_req_len(&m->y, r, writes ? MSG_MIXED : MSG_GET)
               : 0;
}

/* see obl/mpi.h */
size_t obl_mpi_answer_bytes(const obl_mpi *m, unsigned r)
{
    return m && r < m->y.R ? MPI_MSG_HDR + MPI_MSG_TAG + lay_ans_len(&m->y, r, MSG_GET) : 0;
}

/* see obl/mpi.h */
void obl_mpi_destroy(obl_mpi *m)
{
    if (!m)
        return;
    for (int k = 0; k < 2; k++) {
        bal_slot *z = &m->sl[k];
        for (int q = 0; q < m->size; q++) {
            if (z->pt)
                free(z->pt[q]);
            if (z->sealed)
                free(z->sealed[q]);
            if (z->rbuf)
                free(z->rbuf[q]);
        }
        free(z->pt);
        free(z->sealed);
        free(z->rbuf);
        free(z->got);
        free(z->ops);
        xfer_free(&z->x);
        if (m->role == OBL_MPI_BALANCER)
            mpi_bal_free(&z->bal);
    }
    for (int q = 0; q < m->size; q++) {
        if (m->apt)
            free(m->apt[q]);
        if (m->ch)
            msg_chan_free(&m->ch[q]);
    }
    if (m->role != OBL_MPI_BALANCER)
        mpi_srv_free(&m->srv);
    free(m->apt);
    free(m->rcap);
    free(m->ch);
    if (m->comm != MPI_COMM_NULL)
        MPI_Comm_free(&m->comm);
    free(m);
}
