/*
 * The obl_omap backend (backend.h): each request of a batch makes the
 * accesses of one obl_omap_access (obl_omap_access_batch overlaps them),
 * so a batch costs `count` identical access sequences
 * whatever its ops, keys and outcomes. The map's contents are built from
 * wire.h's key and value functions.
 */
#include "backend.h"

#include <stdlib.h>

#include <obl/omap.h>

#include "wire.h"

typedef struct omap_state {
    obl_omap *map;
    size_t k, v;
} omap_state;

/* The batch in one obl_omap_access_batch (the requests' accesses
 * overlapped, each as one obl_omap_access); per-request errors in errs.
 * It allocates nothing: the whole batch fails only on INVALID_ARG, before
 * any request (no request's error is INVALID_ARG). */
static obl_err omap_answer(void *state, serve_batch *b)
{
    omap_state *s = state;
    obl_err e = obl_omap_access_batch(s->map, b->count, b->ops, b->keys, b->values, b->out,
                                      b->found, b->errs);
    return e == OBL_ERR_INVALID_ARG ? e : OBL_OK;
}

static void omap_destroy(void *state)
{
    omap_state *s = state;
    if (!s)
        return;
    obl_omap_destroy(s->map);
    free(s);
}

obl_err serve_map_entries(const serve_map_params *p, unsigned char **keys,
                            unsigned char **vals)
{
    *keys = malloc((size_t)p->n * p->key_bytes);
    *vals = malloc((size_t)p->n * p->value_bytes);
    if (!*keys || !*vals) {
        free(*keys);
        free(*vals);
        return OBL_ERR_NOMEM;
    }
    for (uint64_t i = 0; i < p->n; i++) {
        serve_key(*keys + i * p->key_bytes, p->key_bytes, i, p->key_seed);
        serve_value(*vals + i * p->value_bytes, p->value_bytes, i, p->key_seed);
    }
    return OBL_OK;
}

obl_err serve_backend_omap(serve_backend *out, const serve_map_params *p)
{
    if (!out || !p || p->n == 0 || p->capacity < p->n || p->n > serve_key_space(p->key_bytes))
        return OBL_ERR_INVALID_ARG;
    memset(out, 0, sizeof(*out));
    omap_state *s = calloc(1, sizeof(*s));
    if (!s)
        return OBL_ERR_NOMEM;
    unsigned char *keys, *vals;
    obl_err e = serve_map_entries(p, &keys, &vals);
    if (e == OBL_OK) {
        obl_omap_params mp = {0};
        mp.capacity = p->capacity;
        mp.key_size = p->key_bytes;
        mp.value_size = p->value_bytes;
        mp.seed = p->map_seed;
        mp.use_seed = p->map_seed != 0; /* 0: getrandom(2) (backend.h) */
        e = obl_omap_build(&s->map, &mp, keys, vals, p->n);
        free(keys);
        free(vals);
    }
    if (e != OBL_OK) {
        free(s);
        return e;
    }
    s->k = p->key_bytes;
    s->v = p->value_bytes;
    *out = (serve_backend){"omap", s, p->key_bytes, p->value_bytes, omap_answer, omap_destroy,
                           NULL, 0};
    return OBL_OK;
}

#ifndef OBL_SERVE_HAVE_SHARD
obl_err serve_backend_shard(serve_backend *out, const serve_map_params *p, uint32_t shards,
                            uint32_t threads, int gets_only)
{
    (void)out, (void)p, (void)shards, (void)threads, (void)gets_only;
    return OBL_ERR_UNSUPPORTED;
}
#endif

void serve_backend_destroy(serve_backend *b)
{
    if (b && b->destroy)
        b->destroy(b->state);
    if (b)
        memset(b, 0, sizeof(*b));
}
