/*
 * What answers a batch of map requests (docs/server.md, "Backends"). The
 * server only forms batches; a backend answers them: `omap` one request at
 * a time with obl_omap_access; `shard` (built when obl/shard.h is there)
 * the whole batch with obl_shard_batch. A batch's semantics are the
 * backend's: sequential for omap, a snapshot for shard (every request sees
 * the map as it was before the batch).
 *
 * Secret: ops, keys, values in and out, found. Public: count (the batch
 * size the host sees), the key and value sizes, the per-request error codes
 * (the map's capacity events, public in obl/omap.h).
 */
#ifndef OBL_SERVE_BACKEND_H
#define OBL_SERVE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>

typedef struct serve_batch {
    size_t count;          /* public */
    uint64_t *ops;         /* secret: SERVE_OP_* per request */
    unsigned char *keys;   /* secret: count * key_bytes */
    unsigned char *values; /* secret: count * value_bytes (PUT's value) */
    unsigned char *out;    /* secret: count * value_bytes (the answer) */
    uint64_t *found;       /* secret: 1 if the key was present before */
    obl_err *errs;         /* public: per request */
} serve_batch;

typedef struct serve_backend {
    const char *name;
    void *state;
    size_t key_bytes, value_bytes;
    /* Answers b->count requests; OBL_OK unless the whole batch failed. */
    obl_err (*answer)(void *state, serve_batch *b);
    void (*destroy)(void *state);
    /* Optional, with the server's batch thread only: called on that thread
     * after idle_ms without a batch (the MPI backend's keep-alive epoch). */
    void (*idle)(void *state);
    uint32_t idle_ms;
} serve_backend;

/* The map a server serves: n entries (serve_key(i), serve_value(i)) for
 * i < n, room for capacity. The map's own randomness (its PRF key, ORAM
 * leaves) is secret: drawn with getrandom(2) when map_seed is 0; a nonzero
 * map_seed seeds it, for reproducible tests only (a known seed reveals it). */
typedef struct serve_map_params {
    uint64_t n, capacity;
    size_t key_bytes, value_bytes;
    uint64_t key_seed, map_seed;
} serve_map_params;

/* The obl_omap backend, built with obl_omap_build. Errors: the build's. */
obl_err serve_backend_omap(serve_backend *out, const serve_map_params *p);

/* The sharded map's backend: `shards` shards served by `threads` worker
 * threads (0: the online cores); gets_only: every request is a GET (the
 * server rejects the others), answered by the map's cheaper get path.
 * OBL_ERR_UNSUPPORTED where the library has no obl/shard.h. Errors: the
 * build's. */
obl_err serve_backend_shard(serve_backend *out, const serve_map_params *p, uint32_t shards,
                            uint32_t threads, int gets_only);

/* The MPI deployment behind the server (obl/mpi.h, docs/mpi.md). */
typedef struct serve_mpi_opts {
    uint32_t shards;             /* S; 0 = one per shard rank */
    uint32_t threads;            /* each shard rank's threads; 0 = 1 */
    double timeout_s;            /* a receive's deadline; 0 = 60 */
    const unsigned char *secret; /* shared secret of the ranks, >= 16 bytes */
    size_t secret_len;
} serve_mpi_opts;

/* Collective over MPI_COMM_WORLD (it initialises MPI): rank 0 becomes the
 * server's backend, the only balancer, with the map built from wire.h's
 * entries; every epoch carries `batch` requests (the server's max batch:
 * its batches padded with dummy GETs). It needs the server's batch thread
 * (its idle hook keeps the shard ranks' deadline). Destroying it stops the
 * shard ranks and finalises MPI. On the other ranks it answers epochs
 * until rank 0 stops them, finalises MPI and sets *shard_rank_done.
 * Only in obl-server built with obl_mpi (OBL_SERVE_HAVE_MPI). Errors:
 * obl_mpi_create's (reason on stderr), the build's. */
obl_err serve_backend_mpi(serve_backend *out, const serve_map_params *p, const serve_mpi_opts *o,
                          size_t batch, int gets_only, int *shard_rank_done);

/* Keys and values of entries 0 .. n-1 (wire.h), malloc'd; NOMEM. */
obl_err serve_map_entries(const serve_map_params *p, unsigned char **keys,
                          unsigned char **vals);

/* Frees what a backend holds; a zeroed backend is fine. */
void serve_backend_destroy(serve_backend *b);

#endif /* OBL_SERVE_BACKEND_H */
