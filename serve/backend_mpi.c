// SPDX-License-Identifier: MIT
/*
 * obl-server in front of an obl_mpi deployment (backend.h, obl/mpi.h;
 * docs/mpi.md, "obl-server in front"). Under one mpirun, rank 0 is the
 * server and the only balancer; ranks 1 .. R hold the S shards and answer
 * epochs until rank 0 stops them. A server batch is one epoch of exactly
 * B = max-batch requests: the batch, then dummy GETs of a key never stored,
 * so every epoch looks alike on the network whatever the batch size; a
 * server of all ops runs every epoch as a mixed one (the kind of an epoch
 * never tells whether its batch writes). The server's batch thread runs the
 * epochs, so its loop keeps reading and writing while the shard ranks work,
 * and runs a keep-alive epoch of dummies after a quarter of the MPI timeout
 * without a batch: a shard rank's wait for the next epoch has that deadline.
 */
#include "backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <obl/mpi.h>

#include "server.h"
#include "wire.h"

typedef struct mpi_state {
    obl_mpi *m;
    size_t B, k, v;
    int gets_only;
    uint64_t *ops, *found;
    unsigned char *keys, *vin, *vout, *dummy;
    uint64_t batches, keepalives;
} mpi_state;

/* A failure that leaves the ranks out of step (a rejected or lost message,
 * a timeout) ends the job; an epoch that completed with a shard rank's
 * error (a capacity event, public) only fails its requests. */
static void check_fatal(mpi_state *s, obl_err e, const char *what)
{
    obl_mpi_fault f = obl_mpi_last_fault(s->m);
    if (e == OBL_OK || f == OBL_MPI_FAULT_NONE || f == OBL_MPI_FAULT_PEER)
        return;
    fprintf(stderr, "obl-server: rank 0: %s failed (%s): %s\n", what, obl_err_name(e),
            obl_mpi_error(s->m));
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* Entries n .. B-1 of the epoch: dummy GETs (public: n is the batch size). */
static obl_err run_epoch(mpi_state *s, size_t n, const char *what)
{
    for (size_t i = n; i < s->B; i++) {
        s->ops[i] = SERVE_OP_GET;
        memcpy(s->keys + i * s->k, s->dummy, s->k);
        memset(s->vin + i * s->v, 0, s->v);
    }
    obl_err e = obl_mpi_batch(s->m, s->gets_only ? NULL : s->ops, s->keys,
                              s->gets_only ? NULL : s->vin, s->vout, s->found);
    check_fatal(s, e, what);
    return e;
}

static obl_err mpi_answer(void *state, serve_batch *b)
{
    mpi_state *s = state;
    size_t n = b->count < s->B ? b->count : s->B; /* the server's max batch is B */
    memcpy(s->ops, b->ops, n * sizeof *s->ops);
    memcpy(s->keys, b->keys, n * s->k);
    memcpy(s->vin, b->values, n * s->v);
    obl_err e = run_epoch(s, n, "epoch");
    memcpy(b->out, s->vout, n * s->v);
    memcpy(b->found, s->found, n * sizeof *s->found);
    for (size_t i = 0; i < b->count; i++)
        b->errs[i] = i < n ? e : OBL_ERR_TOO_LARGE;
    s->batches++;
    return e;
}

static void mpi_idle(void *state)
{
    mpi_state *s = state;
    (void)run_epoch(s, 0, "keep-alive epoch");
    s->keepalives++;
}

/* Stops the shard ranks, prints the epochs' traffic, ends MPI. */
static void mpi_destroy(void *state)
{
    mpi_state *s = state;
    if (!s)
        return;
    obl_err e = obl_mpi_stop(s->m);
    if (e != OBL_OK)
        fprintf(stderr, "obl-server: stopping the shard ranks failed: %s\n", obl_mpi_error(s->m));
    obl_mpi_stats st;
    obl_mpi_get_stats(s->m, &st);
    fprintf(stderr,
            "obl-server: mpi: %" PRIu64 " epochs (%" PRIu64 " batches, %" PRIu64
            " keep-alive), B = %zu, b = %zu, %" PRIu64 " bytes sent, %" PRIu64 " received\n",
            st.epochs, s->batches, s->keepalives, s->B, st.b, st.bytes_sent, st.bytes_recv);
    obl_mpi_destroy(s->m);
    free(s->ops), free(s->found), free(s->keys), free(s->vin), free(s->vout), free(s->dummy);
    free(s);
    MPI_Finalize();
}

/* The deployment's parameters from the server's. */
static obl_mpi_params mpi_params(const serve_map_params *p, const serve_mpi_opts *o, int size,
                                 size_t batch)
{
    obl_mpi_params mp = {0};
    mp.capacity = p->capacity;
    mp.key_size = p->key_bytes;
    mp.value_size = p->value_bytes;
    mp.shards = o->shards ? o->shards : (uint32_t)(size > 1 ? size - 1 : 1);
    mp.threads = o->threads;
    mp.balancers = 1;
    mp.batch = batch;
    mp.secret = o->secret;
    mp.secret_len = o->secret_len;
    mp.timeout_s = o->timeout_s;
    mp.seed = p->map_seed;
    mp.use_seed = p->map_seed != 0; /* 0: getrandom(2) (backend.h) */
    return mp;
}

/* Rank 0: the bulk build from wire.h's entries. */
static obl_err mpi_build(mpi_state *s, const serve_map_params *p)
{
    unsigned char *keys, *vals;
    obl_err e = serve_map_entries(p, &keys, &vals);
    if (e != OBL_OK)
        return e;
    e = obl_mpi_build(s->m, keys, vals, p->n);
    free(keys);
    free(vals);
    check_fatal(s, e, "build");
    return e;
}

static obl_err mpi_state_alloc(mpi_state *s, const serve_map_params *p, size_t batch)
{
    s->B = batch;
    s->k = p->key_bytes;
    s->v = p->value_bytes;
    s->ops = calloc(batch, sizeof *s->ops);
    s->found = calloc(batch, sizeof *s->found);
    s->keys = calloc(batch, s->k);
    s->vin = calloc(batch, s->v);
    s->vout = calloc(batch, s->v);
    s->dummy = calloc(1, s->k);
    if (!s->ops || !s->found || !s->keys || !s->vin || !s->vout || !s->dummy)
        return OBL_ERR_NOMEM;
    serve_key(s->dummy, s->k, serve_dummy_id(p->n, s->k), p->key_seed);
    return OBL_OK;
}

/* A shard rank: answers epochs until rank 0 stops it; SIGTERM and SIGINT
 * blocked, so that only rank 0's stop (or a failure) ends it cleanly. */
static obl_err shard_rank(obl_mpi *m, int rank)
{
    serve_block_signals();
    obl_err e = obl_mpi_serve(m);
    if (e != OBL_OK) {
        fprintf(stderr, "obl-server: rank %d: serve failed (%s): %s\n", rank, obl_err_name(e),
                obl_mpi_error(m));
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    obl_mpi_destroy(m);
    MPI_Finalize();
    return OBL_OK;
}

/* see backend.h */
obl_err serve_backend_mpi(serve_backend *out, const serve_map_params *p, const serve_mpi_opts *o,
                          size_t batch, int gets_only, int *shard_rank_done)
{
    if (!out || !p || !o || !shard_rank_done || p->n == 0 || p->capacity < p->n ||
        p->n > serve_key_space(p->key_bytes) || batch == 0)
        return OBL_ERR_INVALID_ARG;
    memset(out, 0, sizeof(*out));
    *shard_rank_done = 0;
    int prov = 0, rank = 0, size = 1;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &prov) != MPI_SUCCESS)
        return OBL_ERR_IO;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    obl_mpi_params mp = mpi_params(p, o, size, batch);
    obl_mpi *m = NULL;
    obl_err e = prov < MPI_THREAD_SERIALIZED ? OBL_ERR_UNSUPPORTED
                                             : obl_mpi_create(&m, MPI_COMM_WORLD, &mp);
    if (e != OBL_OK) {
        if (rank == 0)
            fprintf(stderr, "obl-server: mpi refused: %s\n",
                    m ? obl_mpi_error(m) : "MPI without MPI_THREAD_SERIALIZED");
        obl_mpi_destroy(m);
        MPI_Finalize();
        return e;
    }
    if (obl_mpi_role(m) == OBL_MPI_SHARD) {
        *shard_rank_done = 1;
        return shard_rank(m, rank);
    }
    mpi_state *s = calloc(1, sizeof *s);
    e = s ? mpi_state_alloc(s, p, batch) : OBL_ERR_NOMEM;
    if (s)
        s->m = m, s->gets_only = gets_only;
    if (e == OBL_OK)
        e = mpi_build(s, p);
    *out = (serve_backend){"mpi", s, p->key_bytes, p->value_bytes, mpi_answer, mpi_destroy,
                           mpi_idle, (uint32_t)((o->timeout_s > 0 ? o->timeout_s : 60.0) * 250.0)};
    if (e != OBL_OK) {
        if (!s) {
            obl_mpi_destroy(m);
            MPI_Finalize();
        }
        serve_backend_destroy(out);
    }
    return e;
}
