/* SPDX-License-Identifier: MIT */
/*
 * obl/mpi.h: the sharded map (obl/shard.h) spread over MPI ranks, with
 * authenticated-encrypted, fixed-size traffic (library obl_mpi, built only
 * when MPI and OpenSSL are found; docs/mpi.md). It sits apart from
 * include/obl because libobl itself never needs MPI.
 *
 * Roles: ranks 0 .. L-1 of the communicator are balancers, ranks
 * L .. L+R-1 shard ranks; shard j (of S) lives on shard rank j mod R, each
 * an obl_shard of one shard. Every call on a balancer is one epoch:
 *   1. the balancer runs the load balancer (Snoopy, section 4) on its B
 *      requests: every shard gets exactly b entries (padded with dummies);
 *   2. it sends every shard rank one message holding the b entries of each
 *      of its shards, sealed with AES-256-GCM under the pair's key;
 *   3. a shard rank concatenates the L balancers' batches of a shard, in
 *      balancer order, and answers them as one batch of its obl_shard (the
 *      oblivious merge and deduplication of Snoopy's subORAM);
 *   4. it answers every balancer with a message of the same public size;
 *      the balancer routes the answers back to its requests.
 * Semantics of an epoch: the batches of balancers 0 .. L-1, concatenated
 * in that order, form one batch of obl/shard.h (every request sees the
 * state before the epoch; of several writes of a key the last wins).
 *
 * Threat model: as obl/shard.h on every rank; the network and the hosts
 * see message sizes (functions of L, R, S, B, b, K, V and the epoch's kind:
 * build, gets, mixed, stop) and timing. Every message carries its epoch
 * and a per-direction sequence number in the authenticated header and the
 * nonce; a tampered, replayed, reordered or truncated message is rejected.
 * A receive that waits past the timeout fails (OBL_MPI_FAULT_TIMEOUT).
 * Writes are not atomic across shard ranks: when a shard rank fails an
 * epoch (a capacity event), the others keep that epoch's writes.
 *
 * Thread safety: one call at a time per handle (MPI_THREAD_SINGLE is enough).
 */
#ifndef OBL_MPI_H
#define OBL_MPI_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include <obl/obl.h>
#include <obl/shard.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Why a call failed beyond its obl_err (obl_mpi_fault). */
typedef enum obl_mpi_fault {
    OBL_MPI_FAULT_NONE = 0,
    OBL_MPI_FAULT_TAMPERED = 1,  /* authentication failed */
    OBL_MPI_FAULT_REPLAYED = 2,  /* sequence number already seen */
    OBL_MPI_FAULT_REORDERED = 3, /* sequence number ahead of the next */
    OBL_MPI_FAULT_TRUNCATED = 4, /* length differs from the header's or the public size */
    OBL_MPI_FAULT_EPOCH = 5,     /* authentic message of another epoch */
    OBL_MPI_FAULT_HEADER = 6,    /* authentic, but wrong sender, receiver, kind or size */
    OBL_MPI_FAULT_TIMEOUT = 7,   /* a peer sent nothing before the deadline */
    OBL_MPI_FAULT_PEER = 8,      /* a peer reported an error for this epoch */
    OBL_MPI_FAULT_TRANSPORT = 9  /* an MPI call failed */
} obl_mpi_fault;

/* Roles (obl_mpi_role). */
#define OBL_MPI_BALANCER 1
#define OBL_MPI_SHARD 2

/* Most shards one shard rank holds. */
#define OBL_MPI_MAX_SHARDS_PER_RANK 256u

/*
 * The key of messages from rank src to rank dst (32 bytes), or nonzero on
 * failure. The default derives it with HKDF-SHA256 from the shared secret.
 * This is where an attested key exchange plugs in: a deployment on enclaves
 * returns the key agreed with dst's attested enclave (for example an ECDH
 * whose public keys are bound into both attestation quotes).
 */
typedef int (*obl_mpi_key_fn)(void *opaque, uint32_t src, uint32_t dst, unsigned char key[32]);

typedef struct obl_mpi_params {
    /* The map, as obl_shard_params (per deployment, not per rank). */
    uint64_t capacity;
    size_t key_size, value_size;
    uint32_t shards;  /* S >= R, S <= R * OBL_MPI_MAX_SHARDS_PER_RANK */
    uint32_t engines; /* OBL_SHARD_ENGINES_*; 0 = both */
    uint32_t threads; /* threads of each shard rank's maps; 0 = 1 */
    uint32_t lambda;  /* 0 = 40 */
    /* The deployment. */
    uint32_t balancers;          /* L >= 1; the other ranks hold shards */
    size_t batch;                /* B: requests of each balancer per epoch */
    size_t shard_batch;          /* b; 0 = the least b for B, S, lambda */
    const unsigned char *secret; /* shared secret (>= 16 bytes): route key, pair keys */
    size_t secret_len;
    obl_mpi_key_fn pair_key; /* NULL: HKDF from secret */
    void *pair_key_opaque;
    double timeout_s; /* a receive's deadline; 0 = 60 */
    uint64_t seed;    /* seeds the rank's PRGs when use_seed != 0 */
    int use_seed;
} obl_mpi_params;

typedef struct obl_mpi obl_mpi;

/*
 * Collective over comm (every rank, the same parameters). Errors:
 * INVALID_ARG with a reason in obl_mpi_error (S < R, S > R * max, L < 1,
 * no shard rank, b below the least b for B and S, sizes), NOMEM, IO.
 */
obl_err obl_mpi_create(obl_mpi **out, MPI_Comm comm, const obl_mpi_params *p) OBL_WARN_UNUSED;

int obl_mpi_role(const obl_mpi *m);

/* A shard rank's loop: answers epochs until the balancers stop it.
 * Returns OBL_OK after the stop, else the error (see obl_mpi_fault). */
obl_err obl_mpi_serve(obl_mpi *m);

/*
 * Balancers, collective among them: the bulk build from n distinct pairs
 * given by balancer 0 (the others pass n = 0). Reveals what obl_shard_build
 * reveals (the shard of each input position); the messages have the
 * public size of a shard's capacity. Errors: as obl_shard_build, IO.
 */
obl_err obl_mpi_build(obl_mpi *m, const void *keys, const void *values, uint64_t n);

/* Balancers, collective among them: one epoch of B requests per balancer,
 * arguments as obl_shard_batch; values_in NULL (and ops NULL) for gets. */
obl_err obl_mpi_batch(obl_mpi *m, const uint64_t *ops, const void *keys, const void *values_in,
                      void *values_out, uint64_t *found);

/*
 * Balancers, collective among them: pipelined epochs (docs/mpi.md). begin
 * starts an epoch (the split of its B requests, the sealed requests posted)
 * and returns; end finishes the oldest epoch in flight, with the keys given
 * to its begin (they must stay until then). At most two epochs are in
 * flight, so the balancer splits epoch e+1 while the shard ranks answer e.
 * Semantics and messages as obl_mpi_batch (which is begin then end); the
 * shard ranks answer the epochs in order. Errors: INVALID_ARG (a third
 * begin, an end with none in flight; obl_mpi_batch, build and stop with
 * epochs in flight), then as obl_mpi_batch (end reports the epoch's).
 */
obl_err obl_mpi_batch_begin(obl_mpi *m, const uint64_t *ops, const void *keys,
                            const void *values_in);
obl_err obl_mpi_batch_end(obl_mpi *m, const void *keys, void *values_out, uint64_t *found);

/* Balancers, collective among them: ends the shard ranks' loops. */
obl_err obl_mpi_stop(obl_mpi *m);

typedef struct obl_mpi_stats {
    uint64_t epochs;
    size_t b;                           /* per-shard batch size */
    uint64_t bytes_sent, bytes_recv;    /* this rank's, on the wire, all epochs */
    double last_split_us, last_join_us; /* balancer: the load balancer's two passes */
    double last_seal_us, last_open_us;  /* this rank's encryption, decryption */
    double last_wait_us;                /* time in the transport */
    double last_shard_us;               /* balancer: the slowest shard rank's work */
    double last_shard_crypto_us;        /* balancer: that rank's seal + open */
} obl_mpi_stats;

void obl_mpi_get_stats(const obl_mpi *m, obl_mpi_stats *st);

/* The last failure: its kind and a one-line text naming ranks and epoch. */
obl_mpi_fault obl_mpi_last_fault(const obl_mpi *m);
const char *obl_mpi_error(const obl_mpi *m);

/* Frees this rank's part (not collective); NULL is fine. */
void obl_mpi_destroy(obl_mpi *m);

/* Message bytes on the wire (header, payload, tag) of a request to and an
 * answer from shard rank r (0 .. R-1) in a get (writes 0) or mixed epoch.
 * Public. */
size_t obl_mpi_request_bytes(const obl_mpi *m, unsigned r, int writes);
size_t obl_mpi_answer_bytes(const obl_mpi *m, unsigned r);

#ifdef __cplusplus
}
#endif

#endif /* OBL_MPI_H */
