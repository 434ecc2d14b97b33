/* SPDX-License-Identifier: MIT */
/*
 * The work of obl_mpi's ranks without MPI (docs/mpi.md): the layout of
 * shards on ranks and the public message sizes, the balancer's side (the
 * sharded map's balancer, packing and unpacking the per-rank payloads) and
 * the shard rank's side (merging the balancers' batches of a shard and
 * answering them with its obl_shard). deploy.c moves the payloads over MPI;
 * the tests run both sides in one process.
 */
#ifndef OBL_SRC_MPI_RANK_H
#define OBL_SRC_MPI_RANK_H

#include <obl/shard.h>

#include "common/alloc.h"
#include "common/prg.h"
#include "shard/shard_internal.h"

/* The public shape of a deployment. */
typedef struct mpi_layout {
    unsigned L, R, S; /* balancers, shard ranks, shards */
    size_t B, b;      /* requests per balancer, entries per shard and balancer */
    size_t ks, vs;    /* key and value bytes */
    uint64_t cap_s;   /* each shard's capacity */
} mpi_layout;

/* Payload header of an answer: status, the rank's work and crypto times. */
#define MPI_ANS_HDR 24u
/* Payload header of a request: the balancer's status (nonzero: all dummies). */
#define MPI_REQ_HDR 8u

/* Shards of shard rank r (0 .. R-1): j = r, r + R, ... < S. */
unsigned lay_nloc(const mpi_layout *y, unsigned r);

/* Payload bytes of a request of `kind` (msg.h MSG_*) to shard rank r, and
 * of its answer. Public. */
size_t lay_req_len(const mpi_layout *y, unsigned r, int kind);
size_t lay_ans_len(const mpi_layout *y, unsigned r, int kind);

/* ---- the balancer ---- */

typedef struct mpi_bal {
    mpi_layout y;
    obl_alloc_ctx ac;
    obl_prg prg;
    shard_route rt;
    shard_bufs bf; /* S * b entries of the current epoch */
    unsigned char *mem;
    size_t mem_bytes;
} mpi_bal;

/* route_key: the 16-byte PRF key every balancer shares. */
obl_err mpi_bal_init(mpi_bal *z, const mpi_layout *y, const unsigned char route_key[16],
                     uint64_t seed, int use_seed, unsigned threads);
void mpi_bal_free(mpi_bal *z);

/* The epoch's split of B requests (ops and vin NULL: gets). On error
 * every entry becomes a dummy, so that the epoch can still run. */
obl_err mpi_bal_split(mpi_bal *z, const uint64_t *ops, const unsigned char *keys,
                      const unsigned char *vin);

/* The request payload for shard rank r (lay_req_len bytes). */
void mpi_bal_pack(const mpi_bal *z, unsigned r, int writes, uint64_t status, unsigned char *out);

/* Reads shard rank r's answer payload into the entries; returns its status. */
uint64_t mpi_bal_unpack(mpi_bal *z, unsigned r, const unsigned char *in);

/* Routes the answers back to the B requests. */
obl_err mpi_bal_join(mpi_bal *z, const unsigned char *keys, unsigned char *vout, uint64_t *found);

/* Deals n pairs to the shard ranks' build payloads out[0 .. R-1]
 * (lay_req_len(MSG_BUILD) bytes each) with obl_shard_build's oblivious
 * dealing: reveals the per-shard counts only. Errors: FULL (a shard's share
 * exceeds its capacity, probability <= 2^-lambda for n <= capacity),
 * TOO_LARGE, NOMEM. */
obl_err mpi_bal_build_pack(const mpi_bal *z, const unsigned char *keys, const unsigned char *vals,
                           uint64_t n, unsigned char *const *out);

/* ---- the shard rank ---- */

typedef struct mpi_srv {
    mpi_layout y;
    unsigned r, nloc;
    obl_shard_params sp; /* each shard's map: one shard of capacity cap_s */
    obl_shard **sh;
    uint64_t *ops, *dummy, *found; /* L * b entries of one shard */
    unsigned char *keys, *vin, *vout;
} mpi_srv;

obl_err mpi_srv_init(mpi_srv *v, const mpi_layout *y, unsigned r, const obl_shard_params *sp);
void mpi_srv_free(mpi_srv *v);

/* One epoch: in[l] the request payload of balancer l, out[l] its answer
 * payload (entries after MPI_ANS_HDR; the header is the caller's). */
obl_err mpi_srv_epoch(mpi_srv *v, int writes, const unsigned char *const *in,
                      unsigned char *const *out);

/* Replaces the shards with a build from balancer 0's payload; unchanged
 * on error. */
obl_err mpi_srv_build(mpi_srv *v, const unsigned char *in);

#endif /* OBL_SRC_MPI_RANK_H */
