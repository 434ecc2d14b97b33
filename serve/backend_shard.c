/*
 * The obl_shard backend (backend.h, obl/shard.h): a batch is one
 * obl_shard_batch call, answered by the sharded map's balancer and worker
 * threads. Its semantics are the sharded map's: every request of a batch
 * sees the map as it was before the batch, then the batch's writes apply
 * (the last write of a key wins). The map keeps the omaps alone (the
 * per-request engine); get batches of several shards may be cut into
 * sub-batches balanced in parallel (docs/shard.md).
 */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

#include <obl/shard.h>

#include "wire.h"

typedef struct shard_state {
    obl_shard *map;
    int gets_only;
} shard_state;

/* gets_only (public, the server's --ops get): the sharded map's get path,
 * which has nothing to write back; every op of the batch is a GET. */
static obl_err shard_answer(void *state, serve_batch *b)
{
    shard_state *s = state;
    obl_err e = s->gets_only
                    ? obl_shard_get(s->map, b->count, b->keys, b->out, b->found)
                    : obl_shard_batch(s->map, b->count, b->ops, b->keys, b->values, b->out,
                                      b->found);
    for (size_t i = 0; i < b->count; i++)
        b->errs[i] = e;
    return e;
}

static void shard_destroy(void *state)
{
    shard_state *s = state;
    if (!s)
        return;
    obl_shard_destroy(s->map);
    free(s);
}

obl_err serve_backend_shard(serve_backend *out, const serve_map_params *p, uint32_t shards,
                            uint32_t threads, int gets_only)
{
    if (!out || !p || p->n == 0 || p->capacity < p->n || p->n > serve_key_space(p->key_bytes))
        return OBL_ERR_INVALID_ARG;
    memset(out, 0, sizeof(*out));
    shard_state *s = calloc(1, sizeof(*s));
    if (!s)
        return OBL_ERR_NOMEM;
    unsigned char *keys, *vals;
    obl_err e = serve_map_entries(p, &keys, &vals);
    if (e == OBL_OK) {
        obl_shard_params sp = {0};
        sp.capacity = p->capacity;
        sp.key_size = p->key_bytes;
        sp.value_size = p->value_bytes;
        sp.shards = shards;
        sp.threads = threads;
        /* The omaps alone: a server's batches (at most --max-batch, 1024 by
         * default) are where the per-request engine is the cheaper, and a
         * map keeping the scan store too would answer every writing batch
         * with a scan of all its entries (docs/server.md, "Backends"). */
        sp.engines = OBL_SHARD_ENGINES_PER_REQUEST;
        sp.seed = p->map_seed;
        sp.use_seed = p->map_seed != 0; /* 0: getrandom(2) (backend.h) */
        e = obl_shard_build(&s->map, &sp, keys, vals, p->n);
        free(keys);
        free(vals);
    }
    if (e != OBL_OK) {
        free(s);
        return e;
    }
    s->gets_only = gets_only;
    *out = (serve_backend){"shard", s, p->key_bytes, p->value_bytes, shard_answer,
                           shard_destroy, NULL, 0};
    return OBL_OK;
}
