/* SPDX-License-Identifier: MIT */
/*
 * The sharded map of obl/shard.h: S shards, each an obl_omap (per-request
 * engine) and/or a plain entry array (scan engine), behind the balancer of
 * route.c, served by a worker pool. Creation, build, memory and teardown
 * live here; the batch path is in batch.c, the cost model in cost.c.
 */
#include <math.h>
#include <pthread.h>

#include "shard/shard_map.h"

#include "common/secret.h"
#include "ct.h"

/* see shard_map.h */
uint64_t shard_capacity_each(uint64_t capacity, unsigned S, unsigned lambda)
{
    if (S <= 1)
        return capacity;
    unsigned extra = 0; /* a union bound over the S shards */
    while ((1u << extra) < S)
        extra++;
    return shard_route_b((size_t)capacity, S, lambda + extra);
}

/* see shard_map.h */
obl_err shard_check_params(const obl_shard_params *p)
{
    if (!p || p->shards == 0 || p->shards > OBL_SHARD_MAX_SHARDS || p->key_size == 0 ||
        p->key_size > OBL_SHARD_MAX_KEY_SIZE || p->value_size == 0 ||
        p->value_size > OBL_SHARD_MAX_VALUE_SIZE || p->capacity < p->shards ||
        p->engines > OBL_SHARD_ENGINES_BOTH || p->expected_batch > OBL_SHARD_MAX_BATCH ||
        p->lambda > 200 || p->threads > OBL_POOL_MAX_THREADS)
        return OBL_ERR_INVALID_ARG;
    if (p->capacity > ((uint64_t)1 << 40))
        return OBL_ERR_TOO_LARGE;
    return OBL_OK;
}

/* see obl/shard.h */
void obl_shard_destroy(obl_shard *m)
{
    if (!m)
        return;
    obl_pool_destroy(m->pool);
    shard_parts_release(m);
    shard_route_release(&m->rt);
    for (unsigned j = 0; j < m->S; j++) {
        if (m->om)
            obl_omap_destroy(m->om[j]);
        if (m->sc)
            shard_scan_destroy(m->sc[j]);
    }
    obl_free(&m->ac, m->om, m->S * sizeof(obl_omap *));
    obl_free(&m->ac, m->sc, m->S * sizeof(shard_scan *));
    obl_free(&m->ac, m->cnt, m->S * sizeof(uint64_t));
    obl_prg_wipe(&m->prg);
    pthread_mutex_destroy(&m->alloc_mu);
    obl_alloc_ctx raw = m->raw;
    obl_free(&raw, m, sizeof *m);
}

/* The caller's allocator behind the map's lock: the worker threads
 * allocate too, and an allocator need not be thread-safe. */
static void *locked_alloc(void *opaque, size_t size, size_t align)
{
    obl_shard *m = (obl_shard *)opaque;
    pthread_mutex_lock(&m->alloc_mu);
    void *p = m->raw.a.alloc(m->raw.a.opaque, size, align);
    pthread_mutex_unlock(&m->alloc_mu);
    return p;
}

static void locked_free(void *opaque, void *ptr, size_t size)
{
    obl_shard *m = (obl_shard *)opaque;
    pthread_mutex_lock(&m->alloc_mu);
    m->raw.a.free(m->raw.a.opaque, ptr, size);
    pthread_mutex_unlock(&m->alloc_mu);
}

/* see shard_map.h */
obl_err shard_alloc(obl_shard **out, const obl_shard_params *p)
{
    obl_alloc_ctx c;
    obl_alloc_init(&c, p->alloc);
    obl_shard *m = (obl_shard *)obl_alloc(&c, sizeof *m, 64);
    if (!m)
        return OBL_ERR_NOMEM;
    m->raw = c;
    pthread_mutex_init(&m->alloc_mu, NULL);
    m->locked.alloc = locked_alloc;
    m->locked.free = locked_free;
    m->locked.opaque = m;
    obl_alloc_init(&m->ac, &m->locked);
    m->p = *p;
    m->p.alloc = &m->locked;
    m->S = p->shards;
    m->lambda = p->lambda ? p->lambda : 40;
    m->cap_s = shard_capacity_each(p->capacity, m->S, m->lambda);
    m->keep_omap = p->engines != OBL_SHARD_ENGINES_SCAN;
    m->keep_scan = p->engines != OBL_SHARD_ENGINES_PER_REQUEST;
    if (p->use_seed)
        obl_prg_init_seed(&m->prg, p->seed);
    else if (obl_prg_init(&m->prg, p->random, p->random_opaque) != OBL_OK) {
        obl_shard_destroy(m);
        return OBL_ERR_RANDOM;
    }
    m->rt.k0 = obl_prg_u64(&m->prg);
    m->rt.k1 = obl_prg_u64(&m->prg);
    m->rt.S = m->S;
    m->rt.ks = p->key_size;
    m->rt.kw = (p->key_size + 7) / 8;
    m->rt.vs = p->value_size;
    m->rt.vs8 = (p->value_size + 7) & ~(size_t)7;
    m->rt.ac = &m->ac;
    m->om = (obl_omap **)obl_alloc(&m->ac, m->S * sizeof(obl_omap *), 8);
    m->sc = (shard_scan **)obl_alloc(&m->ac, m->S * sizeof(shard_scan *), 8);
    m->cnt = (uint64_t *)obl_alloc(&m->ac, m->S * sizeof(uint64_t), 8);
    if (!m->om || !m->sc || !m->cnt) {
        obl_shard_destroy(m);
        return OBL_ERR_NOMEM;
    }
    obl_err e = obl_pool_create(&m->pool, p->threads, &m->locked);
    if (e != OBL_OK) {
        obl_shard_destroy(m);
        return e;
    }
    m->threads = obl_pool_threads(m->pool);
    m->rt.prg = &m->prg;
    m->rt.threads = m->threads;
    *out = m;
    return OBL_OK;
}

/* see shard_map.h */
int shard_dense_omaps(const obl_shard *m)
{
    return m->p.engines == OBL_SHARD_ENGINES_AUTO && m->p.expected_batch;
}

/* see shard_map.h */
obl_omap_params shard_omap_params_seeded(const obl_shard *m, uint64_t seed, unsigned threads)
{
    obl_omap_params op = {0};
    op.capacity = m->cap_s;
    op.key_size = m->p.key_size;
    op.value_size = m->p.value_size;
    op.use_seed = 1; /* seeded from the map's PRG (itself seeded or random) */
    op.seed = seed;
    op.alloc = m->p.alloc;
    op.build_threads = threads;
    op.dense_values = shard_dense_omaps(m);
    return op;
}

/* see shard_map.h */
obl_omap_params shard_omap_params(obl_shard *m, unsigned j)
{
    /* a map of T = 1 builds on one thread */
    return shard_omap_params_seeded(m, obl_prg_u64(&m->prg) ^ j, m->threads);
}

/* see obl/shard.h */
obl_err obl_shard_create(obl_shard **out, const obl_shard_params *p)
{
    if (!out)
        return OBL_ERR_INVALID_ARG;
    *out = NULL;
    obl_err e = shard_check_params(p);
    if (e != OBL_OK)
        return e;
    obl_shard *m = NULL;
    if ((e = shard_alloc(&m, p)) != OBL_OK)
        return e;
    e = shard_pick_stores(m, &m->om[0]); /* AUTO with a hint: one store */
    for (unsigned j = 0; j < m->S && e == OBL_OK; j++) {
        if (m->keep_omap && !m->om[j]) {
            obl_omap_params op = shard_omap_params(m, j);
            e = obl_omap_create(&m->om[j], &op);
        }
        if (e == OBL_OK && m->keep_scan)
            e = shard_scan_create(&m->sc[j], m->cap_s, p->key_size, p->value_size, &m->prg,
                                  &m->ac);
    }
    if (e != OBL_OK) {
        obl_shard_destroy(m);
        return e;
    }
    *out = m;
    return OBL_OK;
}

/* see obl/shard.h */
size_t obl_shard_memory_bytes(const obl_shard *m)
{
    if (!m)
        return 0;
    size_t t = m->ac.bytes + sizeof *m;
    for (unsigned j = 0; j < m->S; j++) {
        t += m->om[j] ? obl_omap_memory_bytes(m->om[j]) : 0;
        t += m->sc[j] ? shard_scan_memory_bytes(m->sc[j]) : 0;
    }
    return t;
}

/* see obl/shard.h */
void obl_shard_get_stats(const obl_shard *m, obl_shard_stats *st)
{
    if (!m || !st)
        return;
    *st = m->st;
    st->shards = m->S;
    st->threads = m->threads;
    st->engines = !m->keep_scan  ? OBL_SHARD_ENGINES_PER_REQUEST
                  : !m->keep_omap ? OBL_SHARD_ENGINES_SCAN
                                  : OBL_SHARD_ENGINES_BOTH;
    st->shard_capacity = m->cap_s;
}
