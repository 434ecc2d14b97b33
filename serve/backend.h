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

/* Keys and values of entries 0 .. n-1 (wire.h), malloc'd; NOMEM. */
obl_err serve_map_entries(const serve_map_params *p, unsigned char **keys,
                          unsigned char **vals);

/* Frees what a backend holds; a zeroed backend is fine. */
void serve_backend_destroy(serve_backend *b);

#endif /* OBL_SERVE_BACKEND_H */
