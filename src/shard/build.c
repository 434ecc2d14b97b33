/* SPDX-License-Identifier: MIT */
/*
 * Bulk build of the sharded map (obl_shard_build): the pairs are dealt to
 * their shards, then every shard builds its stores in parallel (the omap's
 * own bulk build; the scan store places each pair in its bucket).
 *
 * What it reveals (docs/shard.md, "Build"): the shard of each input
 * position (and, in shard_scan_load, its scan store bucket). For distinct keys these are values of the map's fresh secret
 * PRF, independent of the keys, as the omap's build reveals the bucket of
 * each input position; the batches after the build do not depend on them
 * (every shard gets exactly b requests whichever keys are asked).
 */
#include "shard/shard_map.h"

#include "common/secret.h"
#include "ct.h"

typedef struct bl_job {
    obl_shard *m;
    const unsigned char *keys, *vals; /* dealt: shard s at off[s] .. off[s+1] */
    const size_t *off;
    obl_prg *prg;                     /* one per shard, seeded from the map's */
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

static obl_err task_build(void *arg, size_t s)
{
    bl_job *j = (bl_job *)arg;
    obl_shard *m = j->m;
    size_t n = j->off[s + 1] - j->off[s];
    const unsigned char *k = j->keys + j->off[s] * m->p.key_size;
    const unsigned char *v = j->vals + j->off[s] * m->p.value_size;
    obl_err e = OBL_OK;
    if (m->keep_omap) {
        obl_omap_params op = {0};
        op.capacity = m->cap_s;
        op.key_size = m->p.key_size;
        op.value_size = m->p.value_size;
        op.use_seed = 1; /* drawn from the map's PRG by the caller */
        op.seed = obl_prg_u64(&j->prg[s]);
        op.alloc = m->p.alloc;
        e = obl_omap_build(&m->om[s], &op, k, v, n);
    } else {
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
    m->cnt[s] = n;
    return e;
}

/* Deals the pairs to their shards (plain copies at public positions, see
 * the top) into one array of n keys and one of n values. */
static obl_err deal(obl_shard *m, const unsigned char *keys, const unsigned char *vals,
                    uint64_t n, unsigned char *dk, unsigned char *dv, size_t *off,
                    uint32_t *sh)
{
    size_t ks = m->p.key_size, vs = m->p.value_size;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t s = shard_route_shard_of(&m->rt, keys + i * ks);
        /* LEAK: the shard of input position i (see the top of the file) */
        OBL_DECLASSIFY(&s, sizeof s);
        sh[i] = (uint32_t)s;
        off[s + 1]++;
    }
    for (unsigned s = 0; s < m->S; s++) {
        if (off[s + 1] > m->cap_s)
            return OBL_ERR_FULL;
        off[s + 1] += off[s];
    }
    size_t *pos = off + m->S + 1; /* next free position per shard */
    memcpy(pos, off, m->S * sizeof(size_t));
    for (uint64_t i = 0; i < n; i++) {
        size_t p = pos[sh[i]]++;
        memcpy(dk + p * ks, keys + i * ks, ks);
        memcpy(dv + p * vs, vals + i * vs, vs);
    }
    return OBL_OK;
}

/* The dealing arrays and per-shard generators, in one allocation. */
static obl_err build_shards(obl_shard *m, const unsigned char *keys, const unsigned char *vals,
                            uint64_t n)
{
    size_t ks = m->p.key_size, vs = m->p.value_size, S = m->S, bytes, a, b;
    if (n > SIZE_MAX / 8 || !obl_mul_ok((size_t)n, ks + vs + 4, &a) ||
        !obl_mul_ok(S, sizeof(obl_prg) + 2 * sizeof(size_t), &b) ||
        !obl_add_ok(a, b + 64 + sizeof(size_t), &bytes))
        return OBL_ERR_TOO_LARGE;
    unsigned char *mem = (unsigned char *)obl_alloc(&m->ac, bytes, 64);
    if (!mem)
        return OBL_ERR_NOMEM;
    obl_prg *prg = (obl_prg *)mem;
    size_t *off = (size_t *)(prg + S);
    uint32_t *sh = (uint32_t *)(off + 2 * S + 1);
    unsigned char *dk = (unsigned char *)(sh + n), *dv = dk + n * ks;
    obl_err e = deal(m, keys, vals, n, dk, dv, off, sh);
    for (size_t s = 0; s < S; s++) {
        unsigned char seed[32];
        obl_prg_fill(&m->prg, seed, sizeof seed);
        obl_prg_init_bytes(&prg[s], seed);
    }
    bl_job j = {m, dk, dv, off, prg};
    if (e == OBL_OK)
        e = obl_pool_run(m->pool, S, task_build, &j);
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
    e = build_shards(m, (const unsigned char *)keys, (const unsigned char *)values, n);
    if (e != OBL_OK) {
        obl_shard_destroy(m);
        return e;
    }
    *out = m;
    return OBL_OK;
}
