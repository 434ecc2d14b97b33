/* SPDX-License-Identifier: MIT */
/*
 * Bulk build of the sharded map (obl_shard_build): the pairs are dealt to
 * their shards obliviously (shard_deal, deal.c), then every shard builds
 * its stores in parallel (the omap's own bulk build; the scan store places
 * each pair in its bucket).
 *
 * What it reveals (docs/shard.md, "Build"): the number of pairs of each
 * shard, not which pairs (and, in shard_scan_load, the scan store bucket
 * of each pair in its shard's dealt order). For distinct keys the counts
 * are a multinomial sample of the map's fresh secret PRF, independent of
 * the keys; the batches after the build do not depend on them (every shard
 * gets exactly b requests whichever keys are asked).
 */
#include "shard/shard_map.h"

#include "common/secret.h"
#include "ct.h"

typedef struct bl_job {
    obl_shard *m;
    const unsigned char *keys, *vals; /* dealt: shard s at off[s] .. off[s+1] */
    const size_t *off;
    obl_prg *prg;                     /* one per shard, seeded from the map's */
    const uint64_t *seed;             /* each shard's omap seed, from its prg */
    unsigned split;                   /* 1: the omap and the scan store of a
                                         shard are separate tasks */
    unsigned omap_threads;            /* each omap build's threads */
} bl_job;

/* 1 if two of the n keys are equal: a sort of their words and a pass. */
static obl_err has_duplicate(obl_shard *m, const unsigned char *keys, size_t n, obl_prg *g,
                             uint64_t *dup)
{
    size_t kw = m->rt.kw, rs = 8 * kw, bytes;
    *dup = 0;
    if (n < 2)
        return OBL_OK;
    if (!obl_mul_ok(n, rs, &bytes))
        return OBL_ERR_TOO_LARGE;
    obl_alloc_ctx c = m->ac;
    unsigned char *r = (unsigned char *)obl_alloc(&c, bytes, 64);
    if (!r)
        return OBL_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        memcpy(r + i * rs, keys + i * m->p.key_size, m->p.key_size);
    shard_sort(r, n, rs, kw, 1, g, &m->ac.a);
    uint64_t d = 0;
    for (size_t i = 1; i < n; i++)
        d |= obl_ct_memeq(r + (i - 1) * rs, r + i * rs, rs);
    obl_free(&c, r, bytes);
    *dup = d;
    return OBL_OK;
}

/* Shard s's omap, built from its dealt pairs (op.seed drawn from its prg
 * before the job, the first draw, as before the split). */
static obl_err build_omap(bl_job *j, size_t s, const unsigned char *k, const unsigned char *v,
                          size_t n)
{
    obl_shard *m = j->m;
    /* the seed was drawn from the map's PRG by the caller */
    obl_omap_params op = shard_omap_params_seeded(m, j->seed[s], j->omap_threads);
    return obl_omap_build(&m->om[s], &op, k, v, n);
}

/* Shard s's scan store; without an omap, the duplicate check first. */
static obl_err build_scan(bl_job *j, size_t s, const unsigned char *k, const unsigned char *v,
                          size_t n)
{
    obl_shard *m = j->m;
    obl_err e = OBL_OK;
    if (!m->keep_omap) {
        uint64_t dup = 0;
        e = has_duplicate(m, k, n, &j->prg[s], &dup);
        if (e == OBL_OK && OBL_DECLASSIFY_VAL(dup)) /* public: bad input */
            e = OBL_ERR_DUPLICATE_KEY;
    }
    if (e == OBL_OK && m->keep_scan) {
        e = shard_scan_create(&m->sc[s], m->cap_s, m->p.key_size, m->p.value_size, &j->prg[s],
                              &m->ac);
        if (e == OBL_OK)
            e = shard_scan_load(m->sc[s], k, v, n);
    }
    return e;
}

/* Task t: with split, the omaps are tasks 0 .. S-1 (the longer ones,
 * handed out first) and the scan stores S .. 2S-1; else shard t's stores
 * one after the other. Which thread runs which is public. */
static obl_err task_build(void *arg, size_t t)
{
    bl_job *j = (bl_job *)arg;
    obl_shard *m = j->m;
    size_t S = m->S, s = j->split && t >= S ? t - S : t;
    size_t n = j->off[s + 1] - j->off[s];
    const unsigned char *k = j->keys + j->off[s] * m->p.key_size;
    const unsigned char *v = j->vals + j->off[s] * m->p.value_size;
    if (!j->split || t < S) /* one writer per shard */
        m->cnt[s] = n;
    if (j->split)
        return t < S ? build_omap(j, s, k, v, n) : build_scan(j, s, k, v, n);
    obl_err e = m->keep_omap ? build_omap(j, s, k, v, n) : OBL_OK;
    return e == OBL_OK ? build_scan(j, s, k, v, n) : e;
}

/* The dealing arrays and per-shard generators, in one allocation. */
static obl_err build_shards(obl_shard *m, const unsigned char *keys, const unsigned char *vals,
                            uint64_t n)
{
    size_t ks = m->p.key_size, vs = m->p.value_size, S = m->S, bytes, a, b;
    if (n > SIZE_MAX / 8 || !obl_mul_ok((size_t)n, ks + vs, &a) ||
        !obl_mul_ok(S, sizeof(obl_prg) + 2 * sizeof(size_t), &b) ||
        !obl_add_ok(a, b + 64 + sizeof(size_t), &bytes))
        return OBL_ERR_TOO_LARGE;
    unsigned char *mem = (unsigned char *)obl_alloc(&m->ac, bytes, 64);
    if (!mem)
        return OBL_ERR_NOMEM;
    obl_prg *prg = (obl_prg *)mem;
    uint64_t *seed = (uint64_t *)(prg + S);
    size_t *off = (size_t *)(seed + S); /* S + 1 */
    unsigned char *dk = (unsigned char *)(off + S + 1), *dv = dk + n * ks;
    obl_err e = shard_deal(m, keys, vals, n, dk, dv, off); /* deal.c */
    for (size_t s = 0; s < S; s++) {
        unsigned char sd[32];
        obl_prg_fill(&m->prg, sd, sizeof sd);
        obl_prg_init_bytes(&prg[s], sd);
        seed[s] = m->keep_omap ? obl_prg_u64(&prg[s]) : 0;
    }
    /* Both stores: a shard's omap and scan store build on two threads (the
     * omaps first); with fewer shards than threads each omap build takes
     * T / S threads itself (docs/shard.md, "Build"). Public: S, T. */
    unsigned split = m->keep_omap && m->keep_scan, T = m->threads;
    bl_job j = {m, dk, dv, off, prg, seed, split, S < T ? T / (unsigned)S : 1};
    if (e == OBL_OK)
        e = obl_pool_run(m->pool, split ? 2 * S : S, task_build, &j);
    for (size_t s = 0; s < S; s++)
        obl_prg_wipe(&prg[s]);
    obl_free(&m->ac, mem, bytes);
    return e;
}

/* see obl/shard.h */
obl_err obl_shard_build(obl_shard **out, const obl_shard_params *p, const void *keys,
                        const void *values, uint64_t n)
{
    if (!out)
        return OBL_ERR_INVALID_ARG;
    *out = NULL;
    obl_err e = shard_check_params(p);
    if (e != OBL_OK)
        return e;
    if (n > p->capacity)
        return OBL_ERR_FULL;
    if (n && (!keys || !values))
        return OBL_ERR_INVALID_ARG;
    obl_shard *m = NULL;
    if ((e = shard_alloc(&m, p)) != OBL_OK)
        return e;
    e = shard_pick_stores(m, NULL); /* AUTO with a hint: one store */
    if (e == OBL_OK)
        e = build_shards(m, (const unsigned char *)keys, (const unsigned char *)values, n);
    if (e != OBL_OK) {
        obl_shard_destroy(m);
        return e;
    }
    *out = m;
    return OBL_OK;
}
