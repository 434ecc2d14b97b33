/* SPDX-License-Identifier: MIT */
/*
 * obl_mpi's per-rank work (src/mpi/rank.c) in one process, without MPI:
 * L balancers and R shard ranks exchange sealed payloads (msg.c) in
 * memory, epoch after epoch, and every answer is checked against a plain
 * model of the epoch semantics (the balancers' batches in balancer order
 * form one batch). Gets, puts, erases and mixed epochs with duplicates and
 * misses, a build, S from 1 to 5 on 1 to 3 shard ranks, 1 to 3 balancers,
 * and a full shard refusing an epoch without changing.
 * With --ct the requests are secret under memcheck through split, packing,
 * sealing, the shards' merged batches and the join; a sealed message is
 * public (the network sees it) and so declassified, as are the answers
 * before they are checked.
 */
#include "common/secret.h"
#include "mpi/msg.h"
#include "mpi/rank.h"
#include "shard/shard_map.h"
#include "testutil.h"

#define KS 8
#define VS 16
#define MAXL 3
#define MAXR 3
#define U 48 /* key universe: duplicates within and across balancers */

typedef struct dep {
    mpi_layout y;
    mpi_bal bal[MAXL];
    mpi_srv srv[MAXR];
    msg_chan to_srv[MAXL][MAXR], to_bal[MAXR][MAXL]; /* [sender][receiver] */
    uint64_t epoch;
    unsigned char present[U], val[U][VS]; /* the model */
} dep;

static unsigned char secret[32];

static void key_of(unsigned char *k, uint64_t id)
{
    uint64_t w = (id + 1) * 0x9e3779b97f4a7c15ull;
    memcpy(k, &w, 8);
}

static void dep_chans(dep *d)
{
    for (unsigned l = 0; l < d->y.L; l++)
        for (unsigned r = 0; r < d->y.R; r++) {
            unsigned char lr[32], rl[32];
            uint32_t br = d->y.L + r;
            CHECK(msg_pair_key(secret, 32, l, br, lr) == 0);
            CHECK(msg_pair_key(secret, 32, br, l, rl) == 0);
            CHECK(msg_chan_init(&d->to_srv[l][r], l, br, lr, rl) == OBL_OK);
            CHECK(msg_chan_init(&d->to_bal[r][l], br, l, rl, lr) == OBL_OK);
        }
}

static obl_err dep_init(dep *d, unsigned L, unsigned R, unsigned S, size_t B, uint64_t cap)
{
    memset(d, 0, sizeof *d);
    mpi_layout y = {L, R, S, B, shard_route_b(B, S, 40), KS, VS, shard_capacity_each(cap, S, 40)};
    d->y = y;
    unsigned char rk[16];
    CHECK(msg_derive(secret, 32, "route", rk, 16) == 0);
    obl_shard_params sp = test_shard_params(KS, VS, T.seed);
    sp.threads = 1;
    sp.engines = (uint32_t)(T.seed % 3);
    obl_err e = OBL_OK;
    for (unsigned l = 0; l < L && e == OBL_OK; l++)
        e = mpi_bal_init(&d->bal[l], &y, rk, T.seed + l, 1, 1);
    for (unsigned r = 0; r < R && e == OBL_OK; r++)
        e = mpi_srv_init(&d->srv[r], &y, r, &sp);
    dep_chans(d);
    return e;
}

static void dep_free(dep *d)
{
    for (unsigned l = 0; l < d->y.L; l++) {
        mpi_bal_free(&d->bal[l]);
        for (unsigned r = 0; r < d->y.R; r++) {
            msg_chan_free(&d->to_srv[l][r]);
            msg_chan_free(&d->to_bal[r][l]);
        }
    }
    for (unsigned r = 0; r < d->y.R; r++)
        mpi_srv_free(&d->srv[r]);
}

/* Seals pt into a fresh wire buffer (public once sealed), opens it on the
 * receiver's channel into out; 1 if it opened. The opened payload is
 * secret again past its public header of hdr bytes (decryption launders
 * memcheck's tracking, so it is marked anew). */
static int wire(msg_chan *tx, msg_chan *rx, uint64_t ep, uint32_t kind, const unsigned char *pt,
                size_t len, unsigned char *out, size_t hdr)
{
    unsigned char *w = malloc(MPI_MSG_HDR + len + MPI_MSG_TAG);
    size_t exp[MSG_KINDS];
    for (int k = 0; k < MSG_KINDS; k++)
        exp[k] = SIZE_MAX;
    exp[kind] = len;
    uint32_t got = 0;
    int ok = msg_seal(tx, kind, ep, pt, len, w) == OBL_OK;
    OBL_DECLASSIFY(w, MPI_MSG_HDR + len + MPI_MSG_TAG);
    ok = ok && msg_open(rx, ep, exp, w, MPI_MSG_HDR + len + MPI_MSG_TAG, out, &got) == MSG_OK;
    free(w);
    if (T.ct)
        OBL_SECRET(out + hdr, len - hdr);
    return ok && got == kind;
}

/* Requests of balancer l: ops (0 get, 1 put, 2 erase), ids, values. */
typedef struct reqs {
    uint64_t ops[64], ids[64];
    unsigned char keys[64 * KS], vin[64 * VS], vout[64 * VS];
    uint64_t found[64];
} reqs;

static void make_reqs(test_rng *g, reqs *q, size_t B, int kind)
{
    for (size_t i = 0; i < B; i++) {
        q->ids[i] = test_rng_below(g, U);
        q->ops[i] = kind < 3 ? (uint64_t)kind : test_rng_below(g, 3);
        key_of(q->keys + i * KS, q->ids[i]);
        test_rng_fill(g, q->vin + i * VS, VS);
    }
}

/* The shard ranks' side of an epoch: open the L requests, answer, seal. */
static void serve(dep *d, unsigned r, int writes, unsigned char **req, unsigned char **ans)
{
    const mpi_layout *y = &d->y;
    uint32_t kind = writes ? MSG_MIXED : MSG_GET;
    size_t rl = lay_req_len(y, r, (int)kind), al = lay_ans_len(y, r, (int)kind);
    unsigned char *in[MAXL], *out[MAXL];
    for (unsigned l = 0; l < y->L; l++) {
        in[l] = malloc(rl);
        out[l] = calloc(1, al);
        CHECK(wire(&d->to_srv[l][r], &d->to_bal[r][l], d->epoch, kind, req[l * MAXR + r], rl, in[l],
                   MPI_REQ_HDR));
    }
    CHECK_EQ_U64(mpi_srv_epoch(&d->srv[r], writes, (const unsigned char *const *)in, out), OBL_OK);
    for (unsigned l = 0; l < y->L; l++) {
        CHECK(wire(&d->to_bal[r][l], &d->to_srv[l][r], d->epoch, MSG_ANSWER, out[l], al,
                   ans[l * MAXR + r], MPI_ANS_HDR));
        free(in[l]);
        free(out[l]);
    }
}

/* Checks balancer l's answers against the model, before the epoch's writes. */
static void check_answers(const dep *d, reqs *q, size_t B)
{
    static const unsigned char zero[VS];
    OBL_DECLASSIFY(q->vout, B * VS);
    OBL_DECLASSIFY(q->found, B * 8);
    for (size_t i = 0; i < B; i++) {
        uint64_t id = q->ids[i];
        CHECK_EQ_U64(q->found[i], d->present[id]);
        CHECK_MEM(q->vout + i * VS, d->present[id] ? d->val[id] : zero, VS);
    }
}

static void apply_writes(dep *d, const reqs *q, size_t B)
{
    for (size_t i = 0; i < B; i++) {
        uint64_t id = q->ids[i];
        if (q->ops[i] == 1)
            memcpy(d->val[id], q->vin + i * VS, VS);
        if (q->ops[i])
            d->present[id] = q->ops[i] == 1;
    }
}

/* One epoch of kind 0 get, 1 put, 2 erase, 3 mixed, model-checked. */
static void epoch(dep *d, test_rng *g, int kind)
{
    const mpi_layout *y = &d->y;
    int writes = kind != 0;
    uint32_t mk = writes ? MSG_MIXED : MSG_GET;
    reqs *q = calloc(y->L, sizeof *q);
    unsigned char *req[MAXL * MAXR] = {0}, *ans[MAXL * MAXR] = {0};
    d->epoch++;
    for (unsigned l = 0; l < y->L; l++) {
        make_reqs(g, &q[l], y->B, kind);
        if (T.ct) {
            OBL_SECRET(q[l].ops, sizeof q[l].ops);
            OBL_SECRET(q[l].keys, sizeof q[l].keys);
            OBL_SECRET(q[l].vin, sizeof q[l].vin);
        }
        CHECK_EQ_U64(mpi_bal_split(&d->bal[l], writes ? q[l].ops : NULL, q[l].keys,
                                   writes ? q[l].vin : NULL),
                     OBL_OK);
        for (unsigned r = 0; r < y->R; r++) {
            req[l * MAXR + r] = malloc(lay_req_len(y, r, (int)mk));
            ans[l * MAXR + r] = malloc(lay_ans_len(y, r, (int)mk));
            mpi_bal_pack(&d->bal[l], r, writes, 0, req[l * MAXR + r]);
        }
    }
    for (unsigned r = 0; r < y->R; r++)
        serve(d, r, writes, req, ans);
    for (unsigned l = 0; l < y->L; l++) {
        for (unsigned r = 0; r < y->R; r++)
            CHECK_EQ_U64(mpi_bal_unpack(&d->bal[l], r, ans[l * MAXR + r]), OBL_OK);
        CHECK_EQ_U64(mpi_bal_join(&d->bal[l], q[l].keys, q[l].vout, q[l].found), OBL_OK);
        OBL_DECLASSIFY(q[l].ops, sizeof q[l].ops);
        OBL_DECLASSIFY(q[l].keys, sizeof q[l].keys);
        OBL_DECLASSIFY(q[l].vin, sizeof q[l].vin);
        check_answers(d, &q[l], y->B);
    }
    for (unsigned l = 0; writes && l < y->L; l++)
        apply_writes(d, &q[l], y->B);
    for (unsigned i = 0; i < MAXL * MAXR; i++) {
        free(req[i]);
        free(ans[i]);
    }
    free(q);
}

/* Balancer 0 deals every other id to the shards; the model follows. */
static void build(dep *d)
{
    const mpi_layout *y = &d->y;
    unsigned char keys[U * KS], vals[U * VS], *out[MAXR];
    size_t n = 0;
    for (uint64_t id = 0; id < U; id += 2, n++) {
        key_of(keys + n * KS, id);
        for (size_t k = 0; k < VS; k++)
            vals[n * VS + k] = (unsigned char)(id * 7 + k);
        memcpy(d->val[id], vals + n * VS, VS);
        d->present[id] = 1;
    }
    for (unsigned r = 0; r < y->R; r++)
        out[r] = malloc(lay_req_len(y, r, MSG_BUILD));
    CHECK_EQ_U64(mpi_bal_build_pack(&d->bal[0], keys, vals, n, out), OBL_OK);
    d->epoch++;
    for (unsigned r = 0; r < y->R; r++) {
        size_t len = lay_req_len(y, r, MSG_BUILD);
        unsigned char *in = malloc(len);
        CHECK(wire(&d->to_srv[0][r], &d->to_bal[r][0], d->epoch, MSG_BUILD, out[r], len, in,
                   MPI_REQ_HDR));
        CHECK_EQ_U64(mpi_srv_build(&d->srv[r], in), OBL_OK);
        free(in);
        free(out[r]);
    }
}

static void run(unsigned L, unsigned R, unsigned S, size_t B, int epochs, test_rng *g)
{
    dep *d = malloc(sizeof *d);
    CHECK_EQ_U64(dep_init(d, L, R, S, B, 2 * U), OBL_OK);
    unsigned tot = 0;
    for (unsigned r = 0; r < R; r++)
        tot += lay_nloc(&d->y, r);
    CHECK_EQ_U64(tot, S);
    build(d);
    for (int e = 0; e < epochs; e++)
        epoch(d, g, e % 4 == 3 ? 0 : e < 3 ? e : 3);
    dep_free(d);
    free(d);
}

/* A shard rank whose shard is full refuses the epoch (OBL_ERR_FULL, its
 * status to the balancer) and keeps its state: a later get finds nothing. */
static void test_full(test_rng *g)
{
    dep *d = malloc(sizeof *d);
    CHECK_EQ_U64(dep_init(d, 1, 1, 1, 16, 4), OBL_OK);
    reqs *q = calloc(1, sizeof *q);
    for (size_t i = 0; i < 16; i++) {
        q->ids[i] = i;
        q->ops[i] = 1;
        key_of(q->keys + i * KS, i);
        test_rng_fill(g, q->vin + i * VS, VS);
    }
    for (int kind = 1; kind >= 0; kind--) { /* puts of 16 new keys, then gets */
        const mpi_layout *y = &d->y;
        uint32_t mk = kind ? MSG_MIXED : MSG_GET;
        unsigned char *req = malloc(lay_req_len(y, 0, (int)mk)),
                      *in = malloc(lay_req_len(y, 0, (int)mk));
        unsigned char *out = calloc(1, lay_ans_len(y, 0, (int)mk));
        d->epoch++;
        CHECK_EQ_U64(mpi_bal_split(&d->bal[0], kind ? q->ops : NULL, q->keys, kind ? q->vin : NULL),
                     OBL_OK);
        mpi_bal_pack(&d->bal[0], 0, kind, 0, req);
        CHECK(wire(&d->to_srv[0][0], &d->to_bal[0][0], d->epoch, mk, req,
                   lay_req_len(y, 0, (int)mk), in, MPI_REQ_HDR));
        obl_err e = mpi_srv_epoch(&d->srv[0], kind, (const unsigned char *const *)&in, &out);
        CHECK_EQ_U64(e, kind ? OBL_ERR_FULL : OBL_OK);
        if (!kind) {
            mpi_bal_unpack(&d->bal[0], 0, out);
            CHECK_EQ_U64(mpi_bal_join(&d->bal[0], q->keys, q->vout, q->found), OBL_OK);
            OBL_DECLASSIFY(q->found, sizeof q->found);
            for (size_t i = 0; i < 16; i++)
                CHECK_EQ_U64(q->found[i], 0);
        }
        free(req);
        free(in);
        free(out);
    }
    free(q);
    dep_free(d);
    free(d);
}

int main(int argc, char **argv)
{
    test_rng g;
    test_start(argc, argv, "test_mpi_rank", &g);
    test_rng_fill(&g, secret, sizeof secret);
    int ep = T.ct ? 4 : 8;
    run(1, 2, 3, 16, ep, &g);
    run(2, 2, 2, 16, ep, &g);
    if (!T.ct) {
        run(1, 1, 1, 9, ep, &g);
        run(3, 2, 5, 64, ep, &g);
        run(2, 3, 4, 33, ep, &g);
        run(1, 3, 3, 1, ep, &g);
    }
    test_full(&g);
    return test_done("test_mpi_rank");
}
