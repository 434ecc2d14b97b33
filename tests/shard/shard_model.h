/* SPDX-License-Identifier: MIT */
/*
 * The reference model of the shard tests: a plain list of (key, value)
 * pairs with 8-byte keys, searched linearly; obviously right, slow.
 */
#ifndef OBL_TESTS_SHARD_MODEL_H
#define OBL_TESTS_SHARD_MODEL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <obl/omap.h>

typedef struct {
    size_t n, cap, vs; /* pairs held, room, value bytes */
    uint64_t *k;
    unsigned char *v;
} model;

static inline model model_new(size_t cap, size_t vs)
{
    model m = {0, cap, vs, calloc(cap + 1, 8), calloc(cap + 1, vs)};
    return m;
}

static inline void model_free(model *m)
{
    free(m->k);
    free(m->v);
}

/* The position of k, or -1. */
static inline long model_find(const model *m, uint64_t k)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->k[i] == k)
            return (long)i;
    return -1;
}

/* A put (upsert) or an erase of k; other ops change nothing. */
static inline void model_write(model *m, uint64_t op, uint64_t k, const unsigned char *val)
{
    long p = model_find(m, k);
    if (op == OBL_OMAP_PUT) {
        if (p < 0) {
            p = (long)m->n++;
            m->k[p] = k;
        }
        memcpy(m->v + (size_t)p * m->vs, val, m->vs);
    } else if (op == OBL_OMAP_ERASE && p >= 0) {
        m->n--;
        m->k[p] = m->k[m->n];
        memcpy(m->v + (size_t)p * m->vs, m->v + m->n * m->vs, m->vs);
    }
}

#endif /* OBL_TESTS_SHARD_MODEL_H */
